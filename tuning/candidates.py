"""Build many candidates in parallel on the CPU cores, measure them one at a time on the device.

Shared by both tuners: a candidate is a schedule (`baselines.protocols.Schedule`); its
outcome is a record (`outcome.Outcome`) with its `status`, the `reason` it failed, `kernel_us`,
`build_s`, `run_s`.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from baselines.case import Case
from baselines.pipeline import make_target
from baselines.protocols import Schedule

from .children import die_with_parent, kill_pool
from .kernel import bias_count, compile_kernel, fused_function
from .outcome import Outcome, Reason, Status, failed
from .runner import KernelRunner
from .timing import KernelProtocol


def failures_by_reason(records: list[Outcome]) -> dict[str, int]:
    """How many candidates failed, by reason (both tuners report this)."""
    counts: dict[str, int] = {}
    for record in records:
        if record["status"] != Status.OK:
            reason = str(record.get("reason", record["status"]))
            counts[reason] = counts.get(reason, 0) + 1
    return counts


class TuningFailed(RuntimeError):
    """A tuner that measured no valid candidate: the run must not pass silently."""


def _build(case: Case, target_spec: dict, schedule: Schedule, path: str,
           whole: bool = False) -> Outcome:
    """In a builder process: schedule the fused function and compile it to `path`."""
    started = time.monotonic()
    try:
        target = make_target(**target_spec)
        _, func = fused_function(case, target_spec, whole)
        compile_kernel(schedule.apply(func, target), target, Path(path))
    except Exception as error:  # recorded against the candidate; the search goes on
        return failed(Reason.BUILD_ERROR, f"{type(error).__name__}: {error_line(str(error))}",
                      build_s=time.monotonic() - started)
    return {"status": Status.BUILT, "path": path, "build_s": time.monotonic() - started}


def error_line(text: str) -> str:
    """The line of a compiler's message that says what went wrong (nvcc puts it mid-text)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    named = [line for line in lines if "error" in line.lower()]
    return (named or lines or ["(no message)"])[-1][:300]


class CandidateEvaluator:
    """Parallel builders and one replaceable measuring process, for one Case and target; with
    `whole`, for the one kernel of the whole graph instead of the fused pool kernel."""

    def __init__(self, case: Case, target_spec: dict, protocol: KernelProtocol | None = None,
                 workers: int | None = None, whole: bool = False):
        self.case, self.target_spec, self.whole = case, target_spec, whole
        self.protocol = protocol or KernelProtocol()
        _, func = fused_function(case, target_spec, whole)
        self.runner = KernelRunner(case, bias_count(func), target_spec["kind"], self.protocol,
                                   whole)
        self.workers = workers or max(1, (os.cpu_count() or 2))
        self._pool = self._new_pool()
        self._tmp = tempfile.TemporaryDirectory(prefix="pool-tuning-")

    def evaluate(self, schedules: list[Schedule]) -> list[Outcome]:
        """Build all in parallel, then check and time each built one, in order."""
        records = self.build(schedules)
        for record in records:
            if record["status"] == Status.BUILT:
                path = record.pop("path")
                record.update(self.runner.measure(path))
                os.remove(path)
        return records

    def build(self, schedules: list[Schedule]) -> list[Outcome]:
        """Build all in parallel; a built record's `path` is its library, the caller's to
        delete (what is left goes with the evaluator's folder on close)."""
        paths = [os.path.join(self._tmp.name, f"c{time.monotonic_ns()}_{i}.so")
                 for i in range(len(schedules))]
        futures = [self._pool.submit(_build, self.case, self.target_spec, schedule, path,
                                     self.whole)
                   for schedule, path in zip(schedules, paths)]
        records, broken = [], False
        for future in futures:
            try:
                records.append(future.result())
            except BrokenProcessPool:  # the compiler itself crashed: this batch is not built
                records.append(failed(Reason.BUILDER_CRASHED, "a builder process died"))
                broken = True
        for path, record in zip(paths, records):  # a failed build may leave half a library
            if record["status"] != Status.BUILT and os.path.exists(path):
                os.remove(path)
        if broken:
            self._pool.shutdown(cancel_futures=True)
            self._pool = self._new_pool()
        return records

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=die_with_parent)

    def close(self, kill: bool = False) -> None:
        """`kill`: stop the builders and the runner mid-task (the run is being stopped)."""
        if kill:
            kill_pool(self._pool)
        else:
            self._pool.shutdown(cancel_futures=True)
        self.runner.close(kill)
        self._tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, error_type, *exc):
        self.close(kill=error_type is not None)


def budget_shares(budget: int, parts: int) -> list[int]:
    """`budget` split into `parts` shares that add up to it, the later ones larger by one (the
    two MetaSchedule runs, the Optuna workers)."""
    return [budget // parts + (index >= parts - budget % parts) for index in range(parts)]
