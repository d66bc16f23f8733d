"""Two figures every arm of a network has on a GPU, where queued GPU time may have none
(`gpu_timer.py`): the call's kernel-time sum from CUPTI's profile (`torch.profiler`, which sees
TVM's launches too), and the whole call captured into one CUDA graph and replayed (launch gaps gone,
for TVM and PyTorch alike).

A trial takes them after its timed blocks, the profile last, as launches are slower in a process
once CUPTI has run (DESIGN.md). An arm whose capture fails keeps its kernel sum and says why.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from pool_fusion_tuning.baselines.protocols import TimedArm

# Calls profiled per arm (after as many warm-up calls); the sum is per call.
PROFILED_CALLS = 20


def profile_arms(built: Mapping[str, TimedArm], x, protocol) -> dict:
    """Per arm: `captured_us` (median of the replays) or `captured_reason`, then `kernel_sum_us`,
    `kernels_per_call` and `kernels_us` (name -> us per call) from the profile, or
    `profile_reason`."""
    found: dict[str, dict] = {name: {} for name in built}
    for name, arm in built.items():
        try:
            captured = _captured(arm)
            captured.outputs(x)  # captures on this first input
            found[name]["captured_us"] = statistics.median(captured.timer(x, protocol)())
        except Exception as error:  # a capture TVM's VM or dynamo refuses: said, not fatal
            found[name]["captured_reason"] = _reason(error)
    for name, arm in built.items():
        try:
            arm.timer(x, protocol)  # sets the arm's input, as its timed calls have it
            found[name].update(kernel_profile(arm.call, arm.sync))
        except Exception as error:  # the trial's timed figures stand without it
            found[name]["profile_reason"] = _reason(error)
    return found


def _reason(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def _captured(arm: TimedArm) -> TimedArm:
    """The arm's call captured as the study's `+capture` arms are (`CapturedVMArm`,
    `CapturedPeerArm`), on the arm's own VM or compiled function."""
    from pool_fusion_tuning.baselines.torch_peer import CapturedPeerArm, PeerArm

    from .vm_arms import CapturedVMArm, VMArm

    if isinstance(arm, VMArm):
        return CapturedVMArm(arm.vm, arm.device)
    if isinstance(arm, PeerArm):  # a name outside the peer table: the graph is made already
        return CapturedPeerArm("captured", arm.graph, "cuda")
    raise TypeError(f"no captured form of {type(arm).__name__}")


def kernel_profile(call, sync, calls: int = PROFILED_CALLS) -> dict:
    """CUPTI's kernels of `calls` calls of `call`: their time summed per call, their count per
    call, and the time per call of each kernel name."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(calls):
        call()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        sync()
    cuda = torch.autograd.DeviceType.CUDA
    kernels = [(e.name, e.time_range.elapsed_us()) for e in prof.events() if e.device_type == cuda]
    return kernel_sums(kernels, calls)


def kernel_sums(kernels: list[tuple[str, float]], calls: int) -> dict:
    """(name, us) of the kernels of `calls` calls -> the per-call figures `kernel_profile`
    gives."""
    by_name: dict[str, float] = {}
    for name, us in kernels:
        by_name[name] = by_name.get(name, 0.0) + us / calls
    return {
        "kernel_sum_us": sum(us for _, us in kernels) / calls,
        "kernels_per_call": len(kernels) / calls,
        "kernels_us": by_name,
    }
