"""Kernel anatomy without a GPU: the launch from the scheduled TIR, the resources from ptxas."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import tvm
import tvm_ffi
from tvm import relax, tirx
from tvm.tirx.build import split_host_device_mods

from .kernel_names import device_kernel

_ENTRY = re.compile(r"Compiling entry function '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")


def launch_configs(mod: tvm.IRModule) -> dict[str, dict]:
    """Grid and block extents of each GPU kernel, keyed by the kernel's name in the source."""
    configs = {}
    for gv, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc) and (extents := _thread_extents(func)):
            configs[device_kernel(gv.name_hint)] = {
                "grid": math.prod(extents.get(f"blockIdx.{axis}", 1) for axis in "xyz"),
                "block": math.prod(extents.get(f"threadIdx.{axis}", 1) for axis in "xyz"),
            }
    return configs


def kernel_launches(mod: tvm.IRModule, target: tvm.target.Target) -> dict[str, dict]:
    """Grid and block of each kernel the TIR pipeline makes of `mod`'s scheduled PrimFuncs,
    keyed by the kernel's name in the source: a function of several stages (a loop nest bound
    to blocks each) is several kernels, where `launch_configs` sees one."""
    host = "llvm" if tvm.runtime.enabled("llvm") else "c"
    kernels = {gv: f for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)}
    mod = tvm.tirx.transform.BindTarget(target.with_host(host))(tvm.IRModule(kernels))
    pipeline, _, _ = tvm.tirx.get_default_tir_pipeline(target)
    _, devices = split_host_device_mods(pipeline(mod))
    return {
        gv.name_hint: {
            "grid": math.prod(extents.get(f"blockIdx.{axis}", 1) for axis in "xyz"),
            "block": math.prod(extents.get(f"threadIdx.{axis}", 1) for axis in "xyz"),
        }
        for device in devices.values()
        for gv, func in device.functions.items()
        if isinstance(func, tirx.PrimFunc) and (extents := _thread_extents(func))
    }


def _thread_extents(func: tirx.PrimFunc) -> dict[str, int]:
    """The largest constant extent bound to each blockIdx/threadIdx axis: by loops bound to a
    thread (scheduled TIR) or by `thread_extent` attributes (TIR after LowerOpaqueBlock)."""
    extents: dict[str, int] = {}

    def bind(tag: str, extent) -> None:
        if tag.startswith(("blockIdx.", "threadIdx.")) and isinstance(extent, tirx.IntImm):
            extents[tag] = max(extents.get(tag, 1), extent.value)

    def visit_loop(loop: tirx.For) -> None:
        if loop.kind == tirx.ForKind.THREAD_BINDING:
            bind(loop.thread_binding.thread_tag, loop.extent)

    def visit_attr(attr: tirx.AttrStmt) -> None:
        if attr.attr_key == "thread_extent":
            bind(attr.node.thread_tag, attr.value)

    tvm_ffi.structural_walk(func.body, [(tirx.For, visit_loop), (tirx.AttrStmt, visit_attr)])
    return extents


def cuda_source(executable) -> str:
    """The CUDA source TVM generated; on machines without libcuda it is all TVM keeps."""
    pending = list(executable.mod.imports)
    while pending:
        module = pending.pop()
        if module.kind == "cuda":
            return module.inspect_source()
        pending.extend(module.imports)
    raise ValueError("the executable holds no CUDA module")


def ptxas_resources(source: str, arch: str = "sm_90") -> dict[str, dict]:
    """Registers, shared memory and stack per kernel, from `nvcc --cubin -Xptxas -v`."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc is not on PATH; the resource report needs it")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernels.cu"
        path.write_text(source)
        done = subprocess.run(
            [
                nvcc,
                "--cubin",
                f"-arch={arch}",
                "-Xptxas",
                "-v",
                str(path),
                "-o",
                str(path) + ".cubin",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 0:
        raise RuntimeError(f"nvcc failed: {done.stderr.strip()[-500:]}")
    return parse_ptxas(done.stderr)


def parse_ptxas(report: str) -> dict[str, dict]:
    resources: dict[str, dict] = {}
    current: dict | None = None
    for line in report.splitlines():
        if match := _ENTRY.search(line):
            current = resources.setdefault(match.group(1), {})
        elif current is not None and (match := _FRAME.search(line)):
            current["local_bytes"] = int(match.group(1))
            current["spill_bytes"] = int(match.group(2)) + int(match.group(3))
        elif current is not None and (match := _USED.search(line)):
            current["registers"] = int(match.group(1))
            current["shared_bytes"] = int(match.group(2) or 0)
    return resources


def kernel_table(mod: tvm.IRModule, executable, arch: str = "sm_90") -> list[dict]:
    """One row per CUDA kernel: name, grid, block, registers, shared_bytes, local_bytes."""
    resources = ptxas_resources(cuda_source(executable), arch)
    rows = []
    for name, launch in sorted(launch_configs(mod).items()):
        found = resources.get(name, {})
        rows.append(
            {
                "name": name,
                **launch,
                "registers": found.get("registers"),
                "shared_bytes": found.get("shared_bytes"),
                "local_bytes": found.get("local_bytes"),
                "spill_bytes": found.get("spill_bytes"),
            }
        )
    return rows


def captured_launches(mod: tvm.IRModule) -> int:
    """Kernel launches that Relax's CUDA graph rewriting moved into captured functions (it only
    captures kernels whose inputs and outputs all live in storage the graph allocates itself)."""
    kernels = {gv for gv, func in mod.functions.items() if isinstance(func, tirx.PrimFunc)}
    launches = []

    def visit(expr) -> None:
        if isinstance(expr, relax.Call) and expr.op in kernels:
            launches.append(expr.op)

    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function) and "cuda_graph_capture" in gv.name_hint:
            relax.analysis.post_order_visit(func, visit)
    return len(launches)
