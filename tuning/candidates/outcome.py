"""A candidate's outcome: its status and, where it is not valid, the named reason.

Both are str-valued enums, so a record written to JSON (the run folder, the Optuna storage)
holds the same strings as before, and a record read back compares equal to them; like
MetaSchedule's BuilderResult / RunnerResult and Optuna's TrialState, every writer and reader
names one member here instead of spelling a string.
"""

from __future__ import annotations

from enum import Enum
from typing import TypedDict


class _Text(str, Enum):
    """Prints, formats and hashes as its value: a stored string finds it in a dict or set."""

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__


class Status(_Text):
    OK = "ok"  # right, and timed
    WRONG = "wrong"  # built and run, but its outputs differ from the reference
    FAILED = "failed"  # not built, or not run to the end
    BUILT = "built"  # built, not yet measured (a record in flight)


class Reason(_Text):
    BUILD_ERROR = "build error"
    BUILDER_CRASHED = "builder crashed"
    RUN_ERROR = "run error"
    RUNNER_CRASHED = "runner crashed"
    TIME_LIMIT = "time limit"
    OUTPUT_NOT_WRITTEN = "output not written"
    WRONG_RESULT = "wrong result"

    @property
    def at_build(self) -> bool:
        """MetaSchedule is told these as build errors; the others as run errors."""
        return self in (Reason.BUILD_ERROR, Reason.BUILDER_CRASHED)


class Outcome(TypedDict, total=False):
    """A candidate's record, as both tuners write it (`kernel_check.check_and_time`)."""

    status: Status
    reason: Reason
    detail: str
    kernel_us: float
    samples_us: list[float]
    max_abs_err: float | None
    timer: str
    build_s: float
    build_cpu_s: float  # the builder's CPU and its compiler's (nvcc)
    start_cpu_s: float  # a new builder's first build: its start-up's CPU (read by the evaluator)
    run_s: float
    path: str  # a built candidate's library, until it is measured
    kernel_key: str  # what the device runs (`kernel_cache.kernel_key`)
    reused: bool  # the kernel's measurement taken from the run's cache


def failed(reason: Reason, detail: str) -> Outcome:
    """A candidate that was not built, or not run to the end."""
    return {"status": Status.FAILED, "reason": reason, "detail": detail}


def wrong(reason: Reason, max_abs_err: float | None) -> Outcome:
    """A candidate whose outputs differ from the reference."""
    return {"status": Status.WRONG, "max_abs_err": max_abs_err, "reason": reason}
