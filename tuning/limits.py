"""Cases and worker counts the machine can hold, refused up front with their size and the limit.

TVM indexes tensors with int32, so a tensor over 2**31 - 1 elements overflows; and the trial process
holds every arm's tensors at once, so a Case needing more memory than the machine has would be
killed (or swap for hours) after minutes of building. Each `--workers` worker is a process with TVM,
a measuring process and a builder per core, so workers beyond the cores only wait on each other, and
beyond the memory they swap or are killed.
"""

from __future__ import annotations

import math
import os

from pool_fusion_tuning.baselines.case import Case, CaseError

INT32_MAX = 2**31 - 1
FLOAT_BYTES = 4
# Share of the available memory a run may plan to use (the rest: TVM, Python, the builders).
MEMORY_SHARE = 0.6
GB = 1e9


def graph_bytes(case: Case) -> int:
    """Peak bytes of the graph's float32 tensors: one branch's leaves, every branch's output
    and their concatenation alive at once, then the pool and its tail."""
    inputs = math.prod(case.input_shape)
    prelude = inputs * (2 * case.branches**2 + case.branches) if case.prelude else 0
    pooled = math.prod(case.pool_shape) * (1 + case.tail)
    return FLOAT_BYTES * (inputs + prelude + pooled)


def check_case_fits(case: Case, arms: int = 4, available: int | None = None) -> None:
    """Raise CaseError naming the size and the limit where the Case cannot run here."""
    operators = prelude_operators(case)
    if operators > MOST_OPERATORS:
        raise CaseError(
            f"the Case's prelude has {operators:,} operators (branches={case.branches}), more "
            f"than the {MOST_OPERATORS:,} a run builds (the default Case has 15): give fewer "
            "branches"
        )
    largest = max((case.pool_input_shape, case.input_shape), key=math.prod)
    elements = math.prod(largest)
    if elements > INT32_MAX:
        raise CaseError(
            f"the Case's largest tensor {list(largest)} has {elements:,} elements; "
            f"TVM indexes with int32, at most {INT32_MAX:,}: make channels, height "
            "or width smaller"
        )
    if available is None:
        import psutil

        available = psutil.virtual_memory().available
    need = graph_bytes(case) * (arms + 1)  # each arm's tensors and the NumPy reference's
    if need > MEMORY_SHARE * available:
        raise CaseError(
            f"the Case needs about {need / GB:.1f} GB ({arms} arms and the reference"
            f", {graph_bytes(case) / GB:.1f} GB each) and this machine has "
            f"{available / GB:.1f} GB available (at most {MEMORY_SHARE:.0%} of it "
            "is used): make channels, height or width smaller"
        )


# Operators of the prelude (adds and concatenations) beyond which building the graph takes
# long enough to say so: the default Case has 15.
MANY_OPERATORS = 200


# Operators beyond which a Case is refused: building each arm would take hours.
MOST_OPERATORS = 20_000


def prelude_operators(case: Case) -> int:
    """The adds and concatenations of the Case's prelude."""
    return case.branches**2 + 2 * case.branches if case.prelude else 0


def slow_case_note(case: Case) -> str | None:
    """A line saying that this Case will take long to build, or None."""
    operators = prelude_operators(case)
    if operators <= MANY_OPERATORS:
        return None
    return (
        f"tune: note: this Case's prelude has {operators:,} operators (the default Case's "
        "has 15): building each arm takes much longer; --verbose prints each step"
    )


# A worker's processes with TVM loaded, as tests/fixtures/worker_memory.py measured them (peak PSS,
# `tune --workers 2 --budget 16` on llvm, 2 cores): the worker 267 MB, its measuring process 278 MB,
# the resource tracker 9 MB, and a builder per core, 262 MB each.
WORKER_BASE_BYTES = 554_000_000
BUILDER_BYTES = 262_000_000


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as `taskset` or a container sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def max_workers(cores: int | None = None, available: int | None = None) -> int:
    """The most `--workers` this machine holds: one per core (each builds on every core), and as
    many as MEMORY_SHARE of the available memory holds."""
    cores = cores or usable_cores()
    if available is None:
        import psutil

        available = psutil.virtual_memory().available
    by_memory = int(MEMORY_SHARE * available // worker_bytes(cores))
    return max(1, min(cores, by_memory))


def worker_bytes(cores: int) -> int:
    return WORKER_BASE_BYTES + cores * BUILDER_BYTES


def check_workers_fit(workers: int, cores: int | None = None, available: int | None = None) -> None:
    """Raise CaseError where `workers` is more than `max_workers`."""
    if workers <= 1:
        return
    cores = cores or usable_cores()
    if available is None:
        import psutil

        available = psutil.virtual_memory().available
    most = max_workers(cores, available)
    if workers > most:
        raise CaseError(
            f"--workers {workers} is more than this machine holds: at most {most} (one per "
            f"core, {cores} cores; about {worker_bytes(cores) / GB:.1f} GB each, "
            f"{available / GB:.1f} GB available, at most {MEMORY_SHARE:.0%} of it used)"
        )
