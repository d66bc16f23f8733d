"""Both compilers' code for one Case's graph, side by side: what a reader compares to see why one
kernel is faster than the other.

For each Case it builds `one-kernel` (the whole graph as one TVM kernel, scheduled by the window
rule) and inductor's graph (`torch.compile`, default mode), runs both once against the NumPy
reference, and writes their code: TVM's CUDA source and the PTX nvcc makes of it, inductor's
Triton source and the PTX and cubin Triton made. Beside the code, counts read off the PTX (and
off the SASS where `cuobjdump` is installed): instructions, global loads and stores, vector
accesses, 64-bit integer arithmetic, integer divisions, and each kernel's launch; and the kernel
time each compiler's kernels take by CUPTI (`torch.profiler`), median over repeated calls.

    python3 -m pool_fusion_tuning.baselines.kernel_code OUT NAME:key=value,... [NAME:key=value,...]

needs a CUDA GPU and PyTorch with Triton; it writes OUT/<NAME>/ and OUT/kernel_code.json.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .case import Case, parse_case
from .reference import matches, random_input, reference

CALLS = 200  # calls profiled per compiler and Case
_INSTRUCTION = re.compile(r"^\s*(@!?%\w+\s+)?([a-z][\w.]*)\s", re.M)
_SASS = re.compile(r"/\*[0-9a-f]{4}\*/\s+(@!?P\d\s+)?([A-Z][A-Z0-9_.]*)")


def ptx_counts(ptx: str) -> dict[str, int]:
    """What the PTX of one module does, counted by opcode families."""
    body = "\n".join(
        line for line in ptx.splitlines() if not line.lstrip().startswith((".", "//", "{", "}"))
    )
    ops = [match.group(2) for match in _INSTRUCTION.finditer(body)]
    return {
        "instructions": len(ops),
        "global_loads": sum(op.startswith("ld.global") for op in ops),
        "global_stores": sum(op.startswith("st.global") for op in ops),
        "vector_accesses": sum(op.startswith(("ld.global.v", "st.global.v")) for op in ops),
        "int64_arithmetic": sum(
            op.split(".")[0] in {"add", "sub", "mul", "mad", "shl", "shr"}
            and (".s64" in op or ".u64" in op or ".wide" in op)
            for op in ops
        ),
        "integer_divisions": sum(op.split(".")[0] in {"div", "rem"} for op in ops),
        "mul_hi": sum(op.startswith("mul.hi") for op in ops),
    }


def sass_counts(cubin: Path) -> dict[str, int] | None:
    """Instructions of the cubin's SASS by family; None where cuobjdump is not installed."""
    tool = shutil.which("cuobjdump")
    if tool is None:
        return None
    text = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True).stdout
    ops = [match.group(2) for match in _SASS.finditer(text)]
    return {
        "instructions": len(ops),
        "LDG": sum(op.startswith("LDG") for op in ops),
        "STG": sum(op.startswith("STG") for op in ops),
        "IMAD.WIDE": sum(op.startswith("IMAD.WIDE") for op in ops),
        "NOP": sum(op == "NOP" for op in ops),
    }


def tvm_side(case: Case, folder: Path) -> tuple[Callable, dict]:
    """The `one-kernel` arm built for CUDA: a function of a torch tensor, and its code's counts."""
    import tvm
    from tvm import relax

    from .anatomy import cuda_source, launch_configs
    from .arms import ARMS
    from .pipeline import build, lower, make_target

    target = make_target("cuda")
    arm = ARMS["one-kernel"]
    executable = build(case, arm, target)
    source = cuda_source(executable)
    (folder / "tvm.cu").write_text(source)
    ptx = _nvcc(source, folder, "tvm")
    vm = relax.VirtualMachine(executable, tvm.cuda(0))
    device = tvm.cuda(0)
    fed: list = []  # the input is copied to the device once, not inside the profiled calls

    def call(x):
        if not fed or fed[0] is not x:
            fed[:] = [x]
            vm.set_input("main", tvm.runtime.tensor(x.cpu().numpy(), device=device))
        vm.invoke_stateful("main")
        return vm.get_outputs("main")

    found = {
        "launch": launch_configs(lower(case, arm, target)),
        "ptx": ptx_counts(ptx),
        "sass": sass_counts(folder / "tvm.cubin"),
    }
    return call, found


def inductor_side(case: Case, folder: Path) -> tuple[Callable, dict]:
    """`torch.compile` of the Case's graph: the function, and Triton's code and counts."""
    import torch

    from .torch_peer import torch_graph

    triton = Path(os.environ["TRITON_CACHE_DIR"])
    inductor = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    before = set(triton.rglob("*")) | set(inductor.rglob("*"))
    # Each Case compiled as in a fresh process: after a second shape, dynamo would otherwise
    # recompile with dynamic shapes (symbolic sizes, 64-bit index arithmetic).
    torch._dynamo.reset()
    compiled = torch.compile(torch_graph(case))
    compiled(torch.from_numpy(random_input(case, 0)).cuda())
    torch.cuda.synchronize()
    kernels = {}
    for meta_path in sorted(set(triton.rglob("*.json")) - before):
        meta = json.loads(meta_path.read_text())
        if "num_warps" not in meta or not (ptx_path := meta_path.with_suffix(".ptx")).exists():
            continue
        name = meta.get("name", meta_path.stem)
        shutil.copy(ptx_path, folder / f"inductor_{name}.ptx")
        cubin = meta_path.with_suffix(".cubin")
        kernels[name] = {
            "num_warps": meta["num_warps"],
            "shared": meta.get("shared"),
            "ptx": ptx_counts(ptx_path.read_text()),
            "sass": sass_counts(cubin) if cubin.exists() else None,
        }
    for source in sorted(set(inductor.rglob("*.py")) - before):
        if "triton_" in (text := source.read_text()) and "def call(" in text:
            (folder / f"inductor_{source.stem}.py").write_text(text)
    return (lambda x: compiled(x)), {"kernels": kernels}


def profile(call, x, calls: int = CALLS) -> dict[str, float]:
    """Median CUPTI time (us) of each kernel name over `calls` calls."""
    import torch
    from torch.profiler import ProfilerActivity

    for _ in range(10):
        call(x)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call(x)
        torch.cuda.synchronize()
    times: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA and event.device_time > 0:
            times.setdefault(event.name, []).append(event.device_time)
    return {name: float(np.median(values)) for name, values in times.items()}


def compare(name: str, case: Case, out: Path) -> dict:
    """One Case: both sides' code and counts, checked against the reference, then profiled."""
    import torch

    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    x_np = random_input(case, 0)
    x = torch.from_numpy(x_np).cuda()
    expected = reference(case, x_np)
    tvm_call, tvm_found = tvm_side(case, folder)
    inductor_call, inductor_found = inductor_side(case, folder)
    for side, call in (("tvm", tvm_call), ("inductor", inductor_call)):
        got = call(x)
        got = [got.numpy()] if hasattr(got, "numpy") else [_numpy(v) for v in got]
        if len(got) != len(expected) or not all(map(matches, got, expected)):
            raise AssertionError(f"{name}: {side}'s outputs differ from the NumPy reference")
    return {
        "case": case.to_dict(),
        "tvm": {**tvm_found, "kernel_us": profile(tvm_call, x)},
        "inductor": {**inductor_found, "kernel_us": profile(inductor_call, x)},
    }


def _numpy(value) -> np.ndarray:
    return value.cpu().numpy() if hasattr(value, "cpu") else value.numpy()


def _nvcc(source: str, folder: Path, stem: str) -> str:
    """PTX of `source` (written beside it) and its cubin, as nvcc makes them for sm_90."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{stem}.cu"
        path.write_text(source)
        for kind in ("ptx", "cubin"):
            subprocess.run(
                ["nvcc", f"--{kind}", "-arch=sm_90", "-o", str(folder / f"{stem}.{kind}"), path],
                check=True,
                capture_output=True,
            )
    return (folder / f"{stem}.ptx").read_text()


def render(found: dict) -> str:
    """kernel_code.md: per Case, each compiler's kernels with launch, SASS counts and time."""
    lines = [
        "| Case | side | kernel | launch | SASS instr. | LDG | STG | vector accesses (PTX) "
        "| CUPTI us |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, sides in found.items():
        launch = sides["tvm"]["launch"]
        for kernel, config in launch.items():
            lines.append(_row(name, "TVM one-kernel", kernel, config, sides["tvm"], sides["tvm"]))
        for kernel, code in sides["inductor"]["kernels"].items():
            config = f"{code['num_warps'] * 32} threads"
            lines.append(_row(name, "inductor", kernel, config, code, sides["inductor"]))
    return "\n".join(lines) + "\n"


def _row(case: str, side: str, kernel: str, config, code: dict, timed: dict) -> str:
    if isinstance(config, dict):
        config = f"{config['grid']} x {config['block']}"
    sass = code.get("sass") or {}
    time = timed["kernel_us"].get(kernel)
    cells = [case, side, f"`{kernel}`", config, sass.get("instructions", "—"), sass.get("LDG", "—")]
    cells += [sass.get("STG", "—"), code["ptx"]["vector_accesses"]]
    cells.append("—" if time is None else f"{time:.3f}")
    return "| " + " | ".join(map(str, cells)) + " |"


def main(argv: list[str]) -> int:
    """`python3 -m pool_fusion_tuning.baselines.kernel_code OUT NAME:key=value,...`: each Case
    compared (`compare`), its line printed as it ends, then kernel_code.json and kernel_code.md;
    Triton's and inductor's caches under OUT, so that a run leaves the user's own alone. The usage
    and exit status 2 when a Case is missing."""
    if len(argv) < 2:
        print(__doc__.split("\n\n")[2].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    os.environ.setdefault("TRITON_CACHE_DIR", str(out / ".triton"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(out / ".inductor"))
    found = {}
    for spec in argv[1:]:
        name, _, assignments = spec.partition(":")
        case = parse_case([a for a in assignments.split(",") if a])
        found[name] = compare(name, case, out)
        print(name, json.dumps({s: found[name][s]["kernel_us"] for s in ("tvm", "inductor")}))
    (out / "kernel_code.json").write_text(json.dumps(found, indent=2))
    (out / "kernel_code.md").write_text(render(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
