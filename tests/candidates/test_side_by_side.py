"""Tuners run side by side in threads: they overlap, a fatal error stops all, logs stay apart."""

import logging
import threading

import pytest

from pool_fusion_tuning.tuning.candidates import evaluator as candidates
from pool_fusion_tuning.tuning.candidates.side_by_side import side_by_side
from pool_fusion_tuning.tuning.tuners.metaschedule.tune import LOGGER, logs_to


def test_tasks_run_at_the_same_time():
    both = threading.Barrier(2, timeout=10)  # broken unless the two wait at once
    outcomes = side_by_side({"a": both.wait, "b": both.wait})
    assert sorted(outcomes.values()) == [0, 1]  # each thread's place at the barrier


def test_a_fatal_error_stops_the_others_and_is_raised():
    def stopped_from_outside():
        assert candidates.STOPPING.wait(timeout=10), "never told to stop"
        return "stopped"

    def fails():
        raise RuntimeError("broken tuner")

    with pytest.raises(RuntimeError, match="broken tuner"):
        side_by_side({"slow": stopped_from_outside, "fails": fails})
    assert not candidates.STOPPING.is_set()  # the next run starts afresh


def test_no_task_at_all_ends_at_once():
    # a study of budget 0 has no tuner: the CI run of 2026-12-07 hung here for 900 s
    ended = []
    caller = threading.Thread(target=lambda: ended.append(side_by_side({})), daemon=True)
    caller.start()
    caller.join(timeout=10)
    assert ended == [{}]


def test_an_error_that_is_not_fatal_is_returned():
    outcomes = side_by_side(
        {"ok": lambda: 1, "found nothing": lambda: 1 / 0},
        fatal=lambda error: not isinstance(error, ZeroDivisionError),
    )
    assert outcomes["ok"] == 1 and isinstance(outcomes["found nothing"], ZeroDivisionError)


def test_each_run_logs_to_its_own_file_and_the_logger_is_restored(tmp_path):
    logger = logging.getLogger(LOGGER)
    before = (logger.level, logger.propagate, list(logger.handlers))
    both = threading.Barrier(2, timeout=10)

    def run(name: str) -> None:
        with logs_to(tmp_path / f"{name}.log") as log:
            both.wait()  # both files open at once
            for index in range(20):
                log.getChild("task.main").info("%s line %d", name, index)
            both.wait()

    side_by_side({name: lambda name=name: run(name) for name in ("ms-default", "ms-space")})
    for name, other in (("ms-default", "ms-space"), ("ms-space", "ms-default")):
        text = (tmp_path / f"{name}.log").read_text()
        assert text.count(f"{name} line") == 20 and other not in text
    assert (logger.level, logger.propagate, list(logger.handlers)) == before


def test_the_run_stops_until_the_outermost_call_ends():
    """A fatal error in MetaSchedule stops every tuner; the next run starts afresh."""

    def nested_fails():
        side_by_side({"ms-default": lambda: 1 / 0, "ms-space": lambda: 2})

    def outer_sibling():
        assert candidates.STOPPING.wait(timeout=10), "never told to stop"

    with pytest.raises(ZeroDivisionError):
        side_by_side({"metaschedule": nested_fails, "optuna": outer_sibling})
    assert not candidates.STOPPING.is_set()


def test_each_result_is_heard_in_the_callers_thread_as_it_comes():
    first_heard = threading.Event()
    heard = []

    def hear(name, result):
        heard.append((name, result, threading.current_thread() is threading.main_thread()))
        first_heard.set()

    side_by_side(
        {"quick": lambda: 1, "waits": lambda: first_heard.wait(timeout=10) and 2}, each=hear
    )
    assert heard == [("quick", 1, True), ("waits", 2, True)]


def test_tasks_from_an_iterator_run_at_most_at_once_and_each_is_asked_for_after_the_results():
    running, most, heard, asked = [0], [0], [], []
    lock = threading.Lock()

    def task(name):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threading.Event().wait(0.3)  # long enough for a third thread to start, were it let
        with lock:
            running[0] -= 1
        return name

    def tasks():
        for name in "abcde":
            asked.append((name, sorted(heard)))
            yield name, lambda name=name: task(name)

    outcomes = side_by_side(tasks(), each=lambda name, _: heard.append(name), at_once=2)
    assert outcomes == {name: name for name in "abcde"} and most[0] == 2
    # A third task is asked for only once a first result has been heard.
    assert [len(before) for _, before in asked[:2]] == [0, 0] and len(asked[2][1]) >= 1


def test_an_interrupt_before_a_thread_starts_is_raised(monkeypatch):
    def interrupted(thread):
        raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(KeyboardInterrupt):
        side_by_side({"a": lambda: 1})
