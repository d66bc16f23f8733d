"""What a call of one kernel launch costs the GPU: a one-thread TVM kernel beside the issue Case's
`one-kernel` arm, each called CALLS times queued behind a sleeping kernel.

Two views of the same queued calls: the study's figure (GPU time, calls queued: CUDA events
around them, `tuning/measure/gpu_timer.py`), and CUPTI's through torch.profiler: each kernel's
own duration and the idle gap before the next one starts. A call of one launch cannot take
less GPU time than the one-thread kernel's; what `one-kernel` takes beyond it is its kernel's
work.

    python3 -m pool_fusion_tuning.tuning.launch_floor OUT
        OUT/launch_floor.md and launch_floor.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np
import tvm
from tvm import s_tir, te, tirx

from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.pipeline import build, make_target
from pool_fusion_tuning.baselines.reference import random_input

from .measure.gpu_timer import QueuedGpuTimer
from .measure.vm_arms import VMArm

CALLS = 50
REPEATS = 5
SPIN_CYCLES = 20_000_000  # ~10 ms: the calls are queued long before it ends


def one_thread() -> tvm.IRModule:
    """A kernel of one thread that stores one value."""
    a = te.compute((1,), lambda i: tirx.const(1.0, "float32"), name="a")
    sch = s_tir.Schedule(te.create_prim_func([a]))
    (loop,) = sch.get_loops(sch.get_sblock("a"))
    sch.bind(loop, "threadIdx.x")
    return tvm.IRModule({"main": sch.mod["main"].with_attr("tirx.is_scheduled", True)})


def gaps(kernels: list[tuple[float, float]]) -> dict:
    """Medians (us) of the kernels' durations and of the idle time from a kernel's end to the
    next one's start, from (start, duration) pairs in the order they ran."""
    idle = [b - (a + d) for (a, d), (b, _) in zip(kernels, kernels[1:])]
    return {
        "kernel_us": statistics.median(d for _, d in kernels),
        "gap_us": statistics.median(idle),
    }


def _profiled(call) -> list[tuple[float, float]]:
    """(start, duration) in us of the kernels of CALLS calls queued behind a spinning kernel."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda._sleep(SPIN_CYCLES)
        for _ in range(CALLS):
            call()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    found = [e for e in prof.events() if e.device_type == cuda and "spin_kernel" not in e.name]
    return sorted((e.time_range.start, e.time_range.elapsed_us()) for e in found)


def measure(call) -> dict:
    """The queued GPU time per call (median of REPEATS repeats) and CUPTI's medians over
    REPEATS profiles: kernels per call, kernel time, gap."""
    for _ in range(20):
        call()
    queued = QueuedGpuTimer(call, (), CALLS)(REPEATS)
    if queued is None:
        raise RuntimeError("the queued GPU timer gave no figure")
    profiles = [_profiled(call) for _ in range(REPEATS)]
    seen = [gaps(kernels) for kernels in profiles]
    return {
        "queued_gpu_us": statistics.median(queued),
        "kernels_per_call": len(profiles[0]) / CALLS,
        "kernel_us": statistics.median(s["kernel_us"] for s in seen),
        "gap_us": statistics.median(s["gap_us"] for s in seen),
    }


def calls() -> dict:
    """The two calls measured: a one-thread kernel, and the `one-kernel` arm's call on the
    issue's Case as the study times it (`VMArm.call`, its input set once)."""
    from tvm import relax

    target, device = make_target("cuda"), tvm.cuda(0)
    library = tvm.compile(one_thread(), target=target)
    cell = tvm.runtime.tensor(np.zeros(1, "float32"), device=device)
    case = Case()
    arm = VMArm(relax.VirtualMachine(build(case, ARMS["one-kernel"], target), device), device)
    arm.outputs(random_input(case, 0))
    return {
        "a one-thread kernel": lambda: library["main"](cell),
        "`one-kernel`, the issue's Case": arm.call,
    }


def render(found: dict) -> str:
    lines = [
        f"GPU time per call, {CALLS} calls queued behind a sleeping kernel, median of {REPEATS}"
        " repeats; kernel and gap: CUPTI's medians over the same number of profiles.",
        "",
        "| call | GPU time, calls queued, us | kernels a call | kernel, us | gap after it, us |",
        "|---|---|---|---|---|",
    ]
    for name, row in found.items():
        lines.append(
            f"| {name} | {row['queued_gpu_us']:.2f} | {row['kernels_per_call']:g} | "
            f"{row['kernel_us']:.3f} | {row['gap_us']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m pool_fusion_tuning.tuning.launch_floor OUT", file=sys.stderr)
        return 2
    out = Path(argv[0])
    if out.exists() and not out.is_dir():
        print(f"{out} exists and is not a folder: give another OUT", file=sys.stderr)
        return 2
    if not _cuda_gpu():
        print(
            "pool_fusion_tuning.tuning.launch_floor needs a CUDA GPU and PyTorch with CUDA",
            file=sys.stderr,
        )
        return 2
    out.mkdir(parents=True, exist_ok=True)
    found = {name: measure(call) for name, call in calls().items()}
    table = render(found)
    (out / "launch_floor.json").write_text(json.dumps(found, indent=2))
    (out / "launch_floor.md").write_text(table)
    print(table, end="")
    return 0


def _cuda_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and tvm.cuda(0).exist


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
