"""A trial's timing: every arm's figures, in interleaved blocks whose order is a Williams design.

Three figures per arm:

    call_path    end to end through the arm's own call path: the VM's `time_evaluator` of
                 `invoke_stateful`, a captured graph's replay, a PyTorch peer's compiled
                 function in a Python loop (CUDA events around back-to-back calls)
    python_call  end to end as a Python user calls it: `vm["main"](x)`, `model(x)`, or a
                 captured graph's input copy and replay (host clock, idle device to last end)
    gpu_queued   GPU time of one call, calls queued behind a sleeping kernel (CUDA only): the
                 end-to-end time without the host's share

Within a block each arm takes all its figures in turn, so every ratio pairs samples of one block.
Every sample and block order goes into the trial's record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from pool_fusion_tuning.baselines.protocols import TimedArm
from pool_fusion_tuning.runfolder.store import FIGURES

from .design import auto_blocks, balance, block_orders, start_row, williams_rows
from .gpu_timer import QueuedGpuTimer
from .workload import as_workload


def _timers(
    arm: TimedArm, x, protocol, queued: QueuedGpuTimer | None
) -> dict[str, Callable[[], list[float] | None]]:
    """The arm's timer of each figure; the GPU's (`queued`, on a GPU) returns None where the
    host never got ahead."""
    timers: dict[str, Callable[[], list[float] | None]] = {
        "call_path": arm.timer(x, protocol),
        "python_call": arm.python_timer(x, protocol),
    }
    if queued is not None:
        timers["gpu_queued"] = lambda: queued(protocol.repeat)
    return timers


def _warm_up(built, timers, order, protocol, index, say) -> None:
    """Calls, then every figure's timer in turn for `warmup_s`, so clocks, caches, allocator
    pools and the GPU figure's sleep settle before the first block."""
    for name in order:
        say(f"trial {index}: warming up {name}")
        for _ in range(protocol.warmup_calls):
            built[name].call()
        built[name].sync()
        deadline = time.monotonic() + protocol.warmup_s
        while True:
            for timer in timers[name].values():
                timer()
            if time.monotonic() >= deadline:
                break


def measure_blocks(
    case,
    built: Mapping[str, TimedArm],
    protocol,
    index: int,
    on_gpu: bool,
    say,
    step=None,
    spent: dict | None = None,
) -> dict:
    """Time every arm of `built` (name -> built arm) in one trial; its record's timing part.
    `case`: a Case or workload, whose draw 0 is timed. `spent` gets `warmup_s` and
    `timing_by_arm_s`."""
    spent = {} if spent is None else spent
    names = sorted(built)
    blocks = protocol.blocks or auto_blocks(len(names))
    first_row = start_row(index, len(names))
    orders = block_orders(names, blocks, first_row) if names else []
    x = as_workload(case).input(0)
    queued = {n: QueuedGpuTimer(a.call, (), protocol.queued_calls) for n, a in built.items()}
    timers = {
        name: _timers(arm, x, protocol, queued[name] if on_gpu else None)
        for name, arm in built.items()
    }
    started = time.monotonic()
    _warm_up(built, timers, orders[0] if orders else [], protocol, index, say)
    spent["warmup_s"] = time.monotonic() - started
    figures = FIGURES if on_gpu else FIGURES[:2]
    samples: dict[str, dict[str, list[list[float]]]] = {
        figure: {name: [] for name in names} for figure in figures
    }
    by_arm = dict.fromkeys(names, 0.0)
    for block, order in enumerate(orders):
        say(f"trial {index}: timing block {block + 1}/{blocks}")
        if step is not None:
            step(block, blocks)
        for name in order:
            started = time.monotonic()
            for figure, timer in timers[name].items():
                built[name].sync()
                samples[figure][name].append(timer() or [])  # None: the host never got ahead
            by_arm[name] += time.monotonic() - started
    spent["timing_by_arm_s"] = by_arm
    design = {
        "arms": names,
        "rows": len(williams_rows(len(names))),
        "start_row": first_row,
        "blocks": blocks,
        **balance(orders),
    }
    # Why an arm has no GPU time, where its timer's last call gave none.
    reasons = {n: t.reason for n, t in queued.items() if on_gpu and t.reason}
    return {
        "design": design,
        "block_orders": orders,
        "block_samples_us": samples,
        **({"gpu_queued_reasons": reasons} if reasons else {}),
    }
