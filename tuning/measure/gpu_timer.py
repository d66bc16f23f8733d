"""GPU time per call without the host's launch overhead: CUDA events behind a sleeping kernel.

Needs PyTorch and a GPU, imported when timed; without them the timers return None and the
caller keeps its host-side figure.
"""

from __future__ import annotations

GPU_TIMER = "cuda-events-behind-blocking-kernel"
# ~1 ms at H200 clocks: longer than the CPU needs to queue a repeat's launches; doubled (up to
# 64 times) where the host was still queuing when the sleep ended.
BLOCKING_CYCLES = 2_000_000
MAX_BLOCKING_DOUBLINGS = 6
LAUNCHES_PER_REPEAT = 50


def gpu_time_us(
    function, args, repeat: int, launches: int = LAUNCHES_PER_REPEAT
) -> list[float] | None:
    """GPU time per call of `function`, without the host's launch overhead (as nvbench does).
    None where PyTorch (events, sleep) or a GPU is missing, or where the host never got ahead
    of the GPU; the caller keeps its host-side figure. See `QueuedGpuTimer`."""
    return QueuedGpuTimer(function, args, launches)(repeat)


class QueuedGpuTimer:
    """A sleeping kernel holds the stream while the host queues `launches` calls, so the events
    between them time the calls' kernels back to back on the GPU. A repeat in which the GPU
    reached the first event before the host had queued every call would include the host's
    gaps: it is dropped and the sleep doubled. The sleep is kept between calls of the timer,
    so an arm timed in many blocks finds its length once."""

    def __init__(self, function, args=(), launches: int = LAUNCHES_PER_REPEAT):
        self.function, self.args, self.launches = function, args, launches
        self.cycles = BLOCKING_CYCLES

    def __call__(self, repeat: int) -> list[float] | None:
        try:
            import torch
        except ImportError:
            return None
        if not torch.cuda.is_available():
            return None
        samples: list[float] = []
        while len(samples) < repeat:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(self.cycles)
            start.record()
            for _ in range(self.launches):
                self.function(*self.args)
            caught_up = start.query()
            end.record()
            end.synchronize()
            if caught_up:
                if self.cycles >= BLOCKING_CYCLES << MAX_BLOCKING_DOUBLINGS:
                    return None
                self.cycles *= 2
                continue
            samples.append(start.elapsed_time(end) * 1e3 / self.launches)
        return samples
