"""How the GPU timer sizes its queue (`plan_queue`, `resized`), without a GPU. `_caught_up`:
the GPU catches up when queueing outlasts the sleep or launches overflow its queue."""

import itertools

import pytest

from pool_fusion_tuning.tuning.measure.gpu_timer import (
    MAX_SLEEP_MS,
    MIN_SLEEP_MS,
    SLEEP_MARGIN,
    QueuedGpuTimer,
    QueuePlan,
    calls_for_repeat,
    plan_queue,
    resized,
)

QUEUE = 1024  # pending launches the GPU's queue holds, about


def _caught_up(plan: QueuePlan, host_ms: float, launches_per_call: int) -> bool:
    return plan.calls * host_ms >= plan.sleep_ms or plan.calls * launches_per_call > QUEUE


def _first_timed(host_ms: float, launches_per_call: int, wanted: int = 5):
    """The plan the timer settles on (None: no figure), and the repeats dropped on the way."""
    plan, dropped = plan_queue(host_ms, wanted), 0
    while plan is not None and _caught_up(plan, host_ms, launches_per_call):
        plan, dropped = resized(plan, host_ms), dropped + 1
    return plan, dropped


def test_the_sleep_covers_the_calls_host_time_with_its_margin():
    assert plan_queue(2.0, 5) == QueuePlan(5, SLEEP_MARGIN * 5 * 2.0)
    assert plan_queue(0.005, 50) == QueuePlan(50, MIN_SLEEP_MS)  # kernels: microseconds a call
    assert plan_queue(0.0, 50) == QueuePlan(50, MIN_SLEEP_MS)


def test_fewer_calls_are_queued_where_their_host_time_outlasts_the_longest_sleep():
    plan = plan_queue(10.0, 50)
    assert plan.calls == int(MAX_SLEEP_MS // (SLEEP_MARGIN * 10.0)) < 50
    assert plan.sleep_ms <= MAX_SLEEP_MS
    assert plan_queue(MAX_SLEEP_MS / SLEEP_MARGIN, 5) == QueuePlan(1, MAX_SLEEP_MS)
    assert plan_queue(MAX_SLEEP_MS, 5) is None  # one call longer than the longest sleep allows


def test_a_caught_up_repeat_halves_the_calls_then_lengthens_the_sleep_then_gives_up():
    plan, seen = QueuePlan(8, 4.0), []
    while plan is not None:
        seen.append(plan)
        plan = resized(plan, 0.1)
    assert [(p.calls, p.sleep_ms) for p in seen] == [
        (8, 4.0),
        (4, 4.0),
        (2, 4.0),
        (1, 4.0),
        *((1, 4.0 * 2**k) for k in range(1, 7)),
    ]
    assert seen[-1] == QueuePlan(1, MAX_SLEEP_MS)


@pytest.mark.parametrize(
    ("calls", "sleep_ms", "host_ms"),
    itertools.product(
        [1, 2, 5, 50, 200], [MIN_SLEEP_MS, 3.0, 100.0, MAX_SLEEP_MS], [0, 0.01, 7, 300]
    ),
)
def test_resizing_always_ends(calls, sleep_ms, host_ms):
    plan, steps = QueuePlan(calls, sleep_ms), 0
    while plan is not None:
        after = resized(plan, host_ms)
        if after is not None:
            assert after.calls <= plan.calls and after != plan
            assert MIN_SLEEP_MS <= after.sleep_ms <= MAX_SLEEP_MS
        plan, steps = after, steps + 1
    assert steps <= 8 + 10  # log2(200) halvings, log2(256) doublings, the last try


@pytest.mark.parametrize(
    ("model", "host_ms", "launches_per_call"),
    [
        # launches per call from the H200 run's analysis.json; host times of its order
        ("densenet121, TVM", 1.5, 248),
        ("nasnetalarge, TVM", 4.0, 919),
        ("inception_v3, PyTorch eager", 3.0, 320),
        ("nasnetalarge, PyTorch eager", 22.0, 1000),
    ],
)
def test_models_whose_calls_overflow_the_queue_get_a_figure(model, host_ms, launches_per_call):
    """Five calls overflow the queue; the resized queue gets ahead in a few dropped repeats."""
    old = QueuePlan(5, 1.0)
    while old is not None and _caught_up(old, host_ms, launches_per_call):
        old = QueuePlan(5, old.sleep_ms * 2) if old.sleep_ms < 64 else None
    assert old is None, model
    plan, dropped = _first_timed(host_ms, launches_per_call)
    assert plan is not None and dropped <= 3, model
    assert plan.calls * launches_per_call <= QUEUE


def test_a_call_too_long_for_the_queue_alone_gives_no_figure():
    assert _first_timed(0.5, 2 * QUEUE)[0] is None


@pytest.mark.torch
def test_without_a_gpu_the_timer_says_why_it_has_no_figure():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    timer = QueuedGpuTimer(lambda: None)
    assert timer(2) is None and timer.reason == "no CUDA device"


@pytest.mark.parametrize(
    "call_ms, calls",
    [
        (0.002, 50),  # a pool kernel: the whole queue
        (0.2, 50),  # 50 calls last the repeat exactly
        (0.233, 43),  # a default 7x7 depthwise kernel: about 10 ms of calls
        (17.7, 1),  # a tuner's bad matmul: one call, not 50 (0.9 s)
        (0.0, 50),  # no time measured: the queue as asked
    ],
)
def test_a_repeat_queues_the_calls_of_about_its_time_and_at_least_one(call_ms, calls):
    assert calls_for_repeat(10.0, call_ms, 50) == calls
    assert calls * call_ms >= 10.0 or calls == 50
