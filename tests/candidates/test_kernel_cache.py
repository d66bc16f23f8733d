"""No kernel is timed twice: measurements keyed by the compiled kernel, kept in the run folder."""

import threading
import time

import tvm

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.template import PoolSchedule
from pool_fusion_tuning.runfolder.spent import SPENT
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.kernel import fused_function, kernel_module
from pool_fusion_tuning.tuning.candidates.kernel_cache import KernelCache, kernel_key
from pool_fusion_tuning.tuning.candidates.runner import KernelRunner
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol

SPEC = TargetSpec("llvm")


def _key(schedule) -> str:
    _, func = fused_function(Case(channels=2, height=8, width=8), SPEC)
    target = tvm.target.Target("llvm")
    executable = tvm.compile(kernel_module(schedule.apply(func, target)), target=target)
    return kernel_key(executable, {})


def test_the_same_kernel_has_one_key_and_another_kernel_another():
    assert _key(PoolSchedule(outputs_w=2)) == _key(PoolSchedule(outputs_w=2))
    assert _key(PoolSchedule(outputs_w=2)) != _key(PoolSchedule(outputs_w=4))


def test_a_measurement_is_reused_across_instances_and_says_so(tmp_path):
    path = tmp_path / "kernels.json"
    cache = KernelCache(path)
    cache.put("k1", {"status": "ok", "kernel_us": 2.5, "samples_us": [2.5], "build_s": 1.0})
    cache.put("k2", {"status": "wrong", "reason": "wrong result", "max_abs_err": 1.0})
    reread = KernelCache(path)
    assert reread.get("k1") == {
        "status": "ok",
        "kernel_us": 2.5,
        "samples_us": [2.5],
        "reused": True,
    }
    assert reread.get("k2")["reason"] == "wrong result"
    assert reread.get("k3") is None and reread.get(None) is None


def test_outcomes_that_may_be_the_runner_s_fault_are_tried_again(tmp_path):
    cache = KernelCache(tmp_path / "kernels.json")
    for reason in ("runner crashed", "time limit", "run error"):
        cache.put(reason, {"status": "failed", "reason": reason})
        assert cache.get(reason) is None
    assert len(cache) == 0


QUICK = KernelProtocol(number=1, repeat=1, min_repeat_ms=0, checks=1)
SMALL_CASE = Case(channels=2, height=8, width=8)


def test_an_evaluator_times_a_kernel_once_and_a_second_tuner_of_the_run_reuses_it(tmp_path):
    cache = KernelCache.of_run(tmp_path)
    with CandidateEvaluator(SMALL_CASE, SPEC, QUICK, workers=1, cache=cache) as first:
        measured, again = first.evaluate([PoolSchedule(outputs_w=2), PoolSchedule(outputs_w=2)])
    assert measured["status"] == "ok" and "run_s" in measured and not measured.get("reused")
    assert again["reused"] and "run_s" not in again
    assert again["kernel_us"] == measured["kernel_us"]
    with CandidateEvaluator(
        SMALL_CASE, SPEC, QUICK, workers=1, cache=KernelCache.of_run(tmp_path)
    ) as second:
        [other] = second.evaluate([PoolSchedule(outputs_w=2)])
    assert other["reused"] and other["kernel_us"] == measured["kernel_us"]
    stored = KernelCache(tmp_path / "kernels.json").get(measured["kernel_key"])
    assert stored["kernel_us"] == measured["kernel_us"] and stored["reused"]


def test_tuners_in_threads_never_measure_at_the_same_time(tmp_path, monkeypatch):
    spans, real = [], KernelRunner.measure

    def timed(runner, path):
        start = time.monotonic()
        result = real(runner, path)
        spans.append((start, time.monotonic()))
        return result

    monkeypatch.setattr(KernelRunner, "measure", timed)
    schedules = [PoolSchedule(outputs_w=w, outputs_h=h) for w in (1, 2, 4) for h in (1, 2)]

    def tune(offset: int) -> None:
        with CandidateEvaluator(SMALL_CASE, SPEC, QUICK, workers=1) as evaluator:
            evaluator.evaluate(schedules[offset:] + schedules[:offset])

    threads = [threading.Thread(target=tune, args=(offset,)) for offset in (0, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(spans) == 2 * len(schedules)  # separate caches: every kernel timed by each
    spans.sort()
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))


def test_submitted_candidates_are_measured_in_the_measuring_thread_and_booked(monkeypatch):
    """`submit` returns at once; the candidate is built, then checked and timed by the
    evaluator's own thread, so the thread that submitted it can ask for the next points. Where
    the time went is in the evaluator's book."""
    threads, real = [], KernelRunner.measure

    def measure(runner, path):
        threads.append(threading.current_thread().name)
        return real(runner, path)

    monkeypatch.setattr(KernelRunner, "measure", measure)
    with CandidateEvaluator(SMALL_CASE, SPEC, QUICK, workers=2) as evaluator:
        futures = [evaluator.submit(PoolSchedule(outputs_w=w)) for w in (1, 2, 2)]
        records = [evaluator.finish(future) for future in futures]
        spent = evaluator.book.totals()
    assert all(record["status"] == "ok" for record in records)
    assert threads and all(name.startswith("measuring") for name in threads)
    assert records[2].get("reused") or records[1].get("reused")  # one kernel timed once
    assert spent["builds"] == 3 and spent["measured"] == 2
    assert spent["build_cpu_s"] > 0 and spent["build_wall_s"] >= spent["build_cpu_s"] / 2
    assert spent["builder_starts"] >= 1 and spent["builder_start_cpu_s"] > 0
    assert spent["device_s"] > 0 and spent["device_wait_s"] >= 0
    assert spent["runner_start_s"] > 0
    assert list(spent) == [name for name in SPENT if name in spent]  # in SPENT's order
    assert all("start_cpu_s" not in record for record in records)
    assert all(record["build_cpu_s"] > 0 for record in records)
