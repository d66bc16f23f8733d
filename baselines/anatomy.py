"""Kernel anatomy without a GPU: the launch from the scheduled TIR, the resources from ptxas."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import tvm

_BINDING = re.compile(
    r'T\.thread_binding\((?:T\.int64\()?(\d+)\)?, thread="(blockIdx|threadIdx)\.([xyz])"\)')
_ENTRY = re.compile(r"Compiling entry function '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")


def launch_configs(mod: tvm.IRModule) -> dict[str, dict]:
    """Grid and block extents of each GPU kernel, keyed by the kernel's name in the source."""
    configs = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, tvm.tirx.PrimFunc):
            continue
        extents = {"blockIdx": [1, 1, 1], "threadIdx": [1, 1, 1]}
        for extent, tag, axis in _BINDING.findall(func.script()):
            index = "xyz".index(axis)
            extents[tag][index] = max(extents[tag][index], int(extent))
        if extents != {"blockIdx": [1, 1, 1], "threadIdx": [1, 1, 1]}:
            configs[f"{gv.name_hint}_kernel"] = {
                "grid": math.prod(extents["blockIdx"]), "block": math.prod(extents["threadIdx"])}
    return configs


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
            [nvcc, "--cubin", f"-arch={arch}", "-Xptxas", "-v", str(path),
             "-o", str(path) + ".cubin"],
            capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"nvcc failed: {done.stderr.strip()[-500:]}")
    return parse_ptxas(done.stderr)


def parse_ptxas(report: str) -> dict[str, dict]:
    resources, current = {}, None
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
        rows.append({"name": name, **launch,
                     "registers": found.get("registers"),
                     "shared_bytes": found.get("shared_bytes"),
                     "local_bytes": found.get("local_bytes"),
                     "spill_bytes": found.get("spill_bytes")})
    return rows


def captured_launches(mod: tvm.IRModule) -> int:
    """Kernel launches that Relax's CUDA graph rewriting moved into captured functions (it only
    captures kernels whose inputs and outputs all live in storage the graph allocates itself)."""
    kernels = [gv.name_hint for gv, func in mod.functions.items()
               if isinstance(func, tvm.tirx.PrimFunc)]
    captured = [func.script() for gv, func in mod.functions.items()
                if isinstance(func, tvm.relax.Function) and "cuda_graph_capture" in gv.name_hint]
    return sum(len(re.findall(rf"\b{re.escape(name)}\(", text))
               for text in captured for name in kernels)
