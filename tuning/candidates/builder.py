"""In a builder process: one candidate scheduled and compiled to a library, or the error line
that says why it was not (`evaluator.CandidateEvaluator` runs these in its pool).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pool_fusion_tuning.baselines.anatomy import launch_configs
from pool_fusion_tuning.baselines.protocols import Schedule
from pool_fusion_tuning.baselines.target import TargetSpec

from .kernel import compile_kernel, kernel_module
from .kernel_cache import kernel_key
from .outcome import Outcome, Reason, Status, failed
from .task import KernelTask

# In a builder process: whether it has built before (its first build reports its start-up).
_BUILT_BEFORE = False


def _cpu_s() -> float:
    """CPU seconds of this process and of its children that ended (the compiler, nvcc)."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system


def build_candidate(task: KernelTask, target: TargetSpec, schedule: Schedule, path: str) -> Outcome:
    """In a builder process: schedule the task's kernel and compile it to `path`."""
    global _BUILT_BEFORE
    started, cpu = time.monotonic(), _cpu_s()
    # A new builder's first build: the CPU its start-up took (imports, TVM's above all).
    start: Outcome = {} if _BUILT_BEFORE else {"start_cpu_s": cpu}
    _BUILT_BEFORE = True
    try:
        func = task.function(target)
        scheduled = schedule.apply(func, target.tvm())
        executable = compile_kernel(scheduled, target.tvm(), Path(path))
        key = kernel_key(executable, launch_configs(kernel_module(scheduled)))
    except Exception as error:  # recorded against the candidate; the search goes on
        return {
            **failed(Reason.BUILD_ERROR, f"{type(error).__name__}: {error_line(str(error))}"),
            "build_s": time.monotonic() - started,
            "build_cpu_s": _cpu_s() - cpu,
            **start,
        }
    return {
        "status": Status.BUILT,
        "path": path,
        "kernel_key": key,
        "build_s": time.monotonic() - started,
        "build_cpu_s": _cpu_s() - cpu,
        **start,
    }


def error_line(text: str) -> str:
    """The line of a compiler's message that says what went wrong (nvcc puts it mid-text)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    named = [line for line in lines if "error" in line.lower()]
    return (named or lines or ["(no message)"])[-1][:300]
