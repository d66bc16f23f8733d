"""GPU time per call without the host's launch overhead: CUDA events behind a sleeping kernel.

A sleeping kernel holds the stream while the host queues calls, so the events between them time the
calls' kernels back to back. The queue is sized (`plan_queue`, `resized`) so the host stays ahead: -
queuing the calls must take less host time than the sleep, which is sized from one call's host time,
measured before the first repeat; - every queued launch must fit in the GPU's queue of pending
launches (about a thousand), past which a launch waits for the sleep to end. A network of a few
hundred kernels fills it in a few calls, so a repeat in which the GPU caught up halves the calls
before lengthening the sleep. A repeat in which the GPU caught up is dropped. Where even one call
behind the longest sleep lets it catch up, there is no figure, and `QueuedGpuTimer.reason` says why.

Needs PyTorch and a GPU, imported when timed; without them the timers return None and the caller
keeps its host-side figure.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

GPU_TIMER = "cuda-events-behind-blocking-kernel"
# The first sleep: ~1 ms at H200 clocks, the cycles torch.cuda._sleep is given for it.
BLOCKING_CYCLES = 2_000_000
LAUNCHES_PER_REPEAT = 50
MIN_SLEEP_MS = 1.0
MAX_SLEEP_MS = 256.0
# The sleep is this many times the host's measured time to queue the calls (host jitter).
SLEEP_MARGIN = 2.0
HOST_CALLS = 3
_CYCLES_PER_MS: list[float] = []  # torch.cuda._sleep's cycles per ms, measured once a process


@dataclass(frozen=True)
class QueuePlan:
    """`calls` queued behind a sleep of `sleep_ms`."""

    calls: int
    sleep_ms: float


def plan_queue(host_ms: float, calls: int, max_sleep_ms: float = MAX_SLEEP_MS) -> QueuePlan | None:
    """The calls to queue (at most `calls`) and the sleep covering their host time: `host_ms` a
    call times SLEEP_MARGIN, within [MIN_SLEEP_MS, `max_sleep_ms`]; None where the longest sleep
    cannot cover one call."""
    host_ms = max(host_ms, 0.0)
    fit = calls if host_ms == 0 else math.floor(max_sleep_ms / (SLEEP_MARGIN * host_ms))
    calls = min(calls, fit)
    if calls < 1:
        return None
    sleep_ms = min(max(SLEEP_MARGIN * calls * host_ms, MIN_SLEEP_MS), max_sleep_ms)
    return QueuePlan(calls, sleep_ms)


def calls_for_repeat(repeat_ms: float, call_ms: float, most: int) -> int:
    """The calls a repeat queues to last about `repeat_ms` of GPU time at `call_ms` a call (from
    1 to `most`), so a candidate of milliseconds is timed in a few calls."""
    if call_ms <= 0:
        return most
    return max(1, min(most, math.ceil(repeat_ms / call_ms)))


def resized(
    plan: QueuePlan, host_ms: float, max_sleep_ms: float = MAX_SLEEP_MS
) -> QueuePlan | None:
    """The plan after a repeat in which the GPU caught up, queuing having taken `host_ms` a call:
    half the calls (their launches may not have fit the GPU's queue) under a sleep at least as
    long; with one call, the sleep doubled; None where one call behind the longest sleep was
    caught up."""
    if plan.calls == 1 and plan.sleep_ms >= max_sleep_ms:
        return None
    calls = max(1, plan.calls // 2)
    longer = plan.sleep_ms * 2 if calls == plan.calls else plan.sleep_ms
    sleep_ms = min(max(longer, SLEEP_MARGIN * calls * host_ms, MIN_SLEEP_MS), max_sleep_ms)
    return QueuePlan(calls, sleep_ms)


def gpu_time_us(
    function,
    args,
    repeat: int,
    launches: int = LAUNCHES_PER_REPEAT,
    repeat_ms: float | None = None,
) -> list[float] | None:
    """GPU time per call of `function` without the host's launch overhead (as nvbench does); with
    `repeat_ms`, fewer calls a repeat where `launches` would last longer. None where PyTorch or a
    GPU is missing, or the host never got ahead; see `QueuedGpuTimer`."""
    return QueuedGpuTimer(function, args, launches, repeat_ms)(repeat)


class QueuedGpuTimer:
    """Up to `launches` calls queued behind a sleep, sized from one call's host time on first use
    and resized where the GPU caught up (see the module). The plan is kept between calls, so an
    arm timed in many blocks finds it once. `reason`: why the last call gave no figure (None
    where it gave one). With `repeat_ms`, a repeat queues at most the calls lasting that long
    (`calls_for_repeat`)."""

    def __init__(
        self,
        function,
        args=(),
        launches: int = LAUNCHES_PER_REPEAT,
        repeat_ms: float | None = None,
    ):
        self.function, self.args, self.launches = function, args, launches
        self.repeat_ms = repeat_ms
        self.plan: QueuePlan | None = None
        self.reason: str | None = None

    @property
    def cycles(self) -> int:
        """torch.cuda._sleep's cycles for the planned sleep (BLOCKING_CYCLES before any)."""
        if self.plan is None or not _CYCLES_PER_MS:
            return BLOCKING_CYCLES
        return int(self.plan.sleep_ms * _CYCLES_PER_MS[0])

    def __call__(self, repeat: int) -> list[float] | None:
        try:
            import torch
        except ImportError:
            self.reason = "PyTorch is not installed"
            return None
        if not torch.cuda.is_available():
            self.reason = "no CUDA device"
            return None
        if self.plan is None:
            host_ms, call_ms = self._host_ms(torch)
            launches = self.launches
            if self.repeat_ms is not None:
                launches = calls_for_repeat(self.repeat_ms, call_ms, launches)
            self.plan = plan_queue(host_ms, launches)
            if self.plan is None:
                self.reason = (
                    f"one call's host path takes {host_ms:.1f} ms, too long for the longest "
                    f"sleep ({MAX_SLEEP_MS:.0f} ms)"
                )
                return None
        samples: list[float] = []
        while len(samples) < repeat:
            plan = self.plan
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(self.cycles)
            start.record()
            began = time.perf_counter()
            for _ in range(plan.calls):
                self.function(*self.args)
            host_ms = (time.perf_counter() - began) * 1e3 / plan.calls
            caught_up = start.query()
            end.record()
            end.synchronize()
            if not caught_up:
                samples.append(start.elapsed_time(end) * 1e3 / plan.calls)
                continue
            after = resized(plan, host_ms)
            if after is None:
                self.reason = (
                    f"the host never got ahead of the GPU: one call queued behind a "
                    f"{plan.sleep_ms:.0f} ms sleep took {host_ms:.1f} ms to queue (it waits for "
                    "the GPU: it synchronizes, or launches more kernels than the GPU's queue holds)"
                )
                return None
            self.plan = after
        self.reason = None
        return samples

    def _host_ms(self, torch) -> tuple[float, float]:
        """One call's host time on an idle GPU and the time from its start to its kernels' end
        (least of HOST_CALLS calls each), and torch.cuda._sleep's clock, measured once a process."""
        if not _CYCLES_PER_MS:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(BLOCKING_CYCLES)
            end.record()
            end.synchronize()
            _CYCLES_PER_MS.append(BLOCKING_CYCLES / max(start.elapsed_time(end), 1e-3))
        times, calls = [], []
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        for _ in range(HOST_CALLS):  # the least of a few: a pause of the host's is no call's
            torch.cuda.synchronize()
            start.record()
            began = time.perf_counter()
            self.function(*self.args)
            times.append((time.perf_counter() - began) * 1e3)
            end.record()
            end.synchronize()
            calls.append(start.elapsed_time(end))
        return min(times), min(calls)
