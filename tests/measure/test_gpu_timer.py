"""The GPU timer (CUDA events behind a sleeping kernel). Needs PyTorch and a GPU: it runs on
the GPU machine (`python3 -m pytest tests/test_gpu_timer.py`) and is skipped elsewhere."""

import pytest

from pool_fusion_tuning.tuning.measure.gpu_timer import gpu_time_us

pytestmark = [pytest.mark.torch, pytest.mark.gpu]


def test_the_sleep_is_not_counted():
    import torch

    source = torch.ones(64 << 20, device="cuda")  # 256 MB: the host stays ahead of the GPU
    target = torch.empty_like(source)
    queued = sorted(gpu_time_us(target.copy_, (source,), repeat=5, launches=5))[2]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    unblocked = []
    for _ in range(5):
        start.record()
        for _ in range(5):
            target.copy_(source)
        end.record()
        end.synchronize()
        unblocked.append(start.elapsed_time(end) * 1e3 / 5)
    # The ~1 ms sleep would add ~200 us per call if the first event were recorded before it.
    assert queued == pytest.approx(sorted(unblocked)[2], rel=0.05)


def test_a_call_that_waits_for_the_gpu_is_not_timed():
    import torch

    # Every call blocks until the sleep ends, so the events would time the host: no figure.
    assert gpu_time_us(torch.cuda.synchronize, (), repeat=2, launches=3) is None


def test_small_kernels_take_less_than_their_host_time():
    import torch

    x = torch.ones(1024, device="cuda")
    queued = sorted(gpu_time_us(x.add_, (1.0,), repeat=5, launches=200))[2]
    assert queued < 5.0  # a 4 KB add queued back to back: microseconds, not the launch path


def test_the_sleep_found_once_is_kept_between_blocks():
    import time

    import torch

    from pool_fusion_tuning.tuning.measure.gpu_timer import BLOCKING_CYCLES, QueuedGpuTimer

    x = torch.ones(1024, device="cuda")
    calls = []

    def slow_host_call():  # ~0.2 ms of host time per call: 50 calls outlast the first sleep
        calls.append(1)
        time.sleep(0.0002)
        x.add_(1.0)

    timer = QueuedGpuTimer(slow_host_call, (), launches=50)
    assert len(timer(2)) == 2 and timer.cycles > BLOCKING_CYCLES
    calls.clear()
    assert len(timer(2)) == 2
    # Starting again from the short sleep would drop three or more repeats of 50 calls.
    assert len(calls) <= 3 * 50
