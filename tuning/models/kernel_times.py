"""Every kernel of a model under every rule list: checked, then timed with the tuners' kernel timer
(`candidates/kernel_check.time_kernel`).

Each kernel is called from the very library its end-to-end arm loads, on arguments
`kernels.kernel_arguments` draws (outputs poisoned with NaN). Before its time counts: - where the
rule lists schedule the kernel differently (by rule or launch), every list's kernel, the default's
included, is checked against the host reference (`kernels.kernel_reference`); - elsewhere every list
has the same schedule: the default list's kernel is timed once for all, checked through the
`tvm-default` arm's end-to-end check against PyTorch eager. One measuring process calls every kernel
in turn; kernel_times.json is written after each, so an interrupted run keeps what was measured, and
a crashed process is replaced.
"""

from __future__ import annotations

import pickle
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pool_fusion_tuning.runfolder.model_records import KernelTimes
from pool_fusion_tuning.runfolder.store import Run, read_record, write_json
from pool_fusion_tuning.tuning.base.children import kill_pool, process_pool
from pool_fusion_tuning.tuning.candidates.outcome import Reason, Status, failed, wrong
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol

FILE = "kernel_times.json"
CHECKS = {
    "host": "the host reference (the unscheduled kernel compiled for llvm)",
    "end_to_end": "the tvm-default arm's end-to-end check against PyTorch eager",
    "same": "the default list's kernel itself (the same rule and launch: the same schedule, "
    "timed once)",
}


@dataclass(frozen=True)
class KernelTimingJob:
    name: str
    libraries: dict  # rule list -> library path (the default first)
    kernels_file: str
    changed: bool  # the lists schedule it differently
    dtype: str
    target_kind: str
    protocol: KernelProtocol


_LOADED: dict = {}  # in the measuring process: the kernels and libraries, loaded once


def _load(job: KernelTimingJob) -> tuple[dict, dict]:
    import tvm

    key = (job.kernels_file, tuple(job.libraries.items()))
    if key not in _LOADED:
        funcs = pickle.loads(Path(job.kernels_file).read_bytes())
        libraries = {
            rules: tvm.runtime.load_module(path).imports[0]  # the kernels' own module
            for rules, path in job.libraries.items()
        }
        _LOADED[key] = funcs, libraries
    return _LOADED[key]


def _measure(job: KernelTimingJob) -> dict:
    """In the measuring process: the kernel under each list, checked, then timed."""
    import tvm

    from pool_fusion_tuning.baselines.models.kernels import (
        kernel_arguments,
        kernel_references,
        output_positions,
    )

    funcs, libraries = _load(job)
    func = funcs[job.name]
    device = tvm.cuda(0) if job.target_kind == "cuda" else tvm.cpu(0)
    positions = output_positions(func)
    checks = job.protocol.checks if job.changed else 1  # one call to time on
    draws = [kernel_arguments(func, seed) for seed in range(checks)]
    references = kernel_references(func, draws) if job.changed else None
    # A kernel every list schedules alike (same rule and launch) is timed once, from the default
    # list's library, for each list.
    measured = list(libraries.items()) if job.changed else list(libraries.items())[:1]
    results: dict = {}
    for rules, library in measured:
        outcome, worst, tensors = None, None, []
        for seed, arguments in enumerate(draws):
            tensors = [tvm.runtime.tensor(a, device=device) for a in arguments]
            library[job.name](*tensors)
            device.sync()
            if references is None:  # checked through the default arm's end-to-end check
                continue
            got = [tensors[i].numpy() for i in positions]
            found = _check(got, references[seed], job.dtype)
            if not found.correct:
                outcome = {
                    **found.to_dict(),
                    **wrong(Reason.WRONG_RESULT, found.max_abs_err),
                    "detail": found.reason,
                }
                break
            worst = found if worst is None or found.max_abs_err > worst.max_abs_err else worst
        if outcome is None:
            outcome = _timed(library, job, tensors, device, worst)
        results[rules] = {**outcome, "checked_against": "host" if references else "end_to_end"}
    for rules in libraries:
        results.setdefault(rules, {**results[measured[0][0]], "checked_against": "same"})
    return results


def _check(got, want, dtype):
    from pool_fusion_tuning.baselines.models.eager_check import check_outputs

    return check_outputs(got, want, dtype)


def _timed(library, job: KernelTimingJob, tensors: list, device, worst) -> dict:
    from pool_fusion_tuning.tuning.candidates.kernel_check import time_kernel

    gpu = job.target_kind == "cuda"
    samples, timer = time_kernel(library, job.name, tensors, device, job.protocol, gpu)
    return {
        "status": Status.OK,
        "kernel_us": float(np.median(samples)),
        "samples_us": samples,
        "timer": timer,
        "max_abs_err": None if worst is None else worst.max_abs_err,
        "bound": None if worst is None else worst.bound,
    }


def time_kernels(
    run: Run,
    libraries: dict,
    kernels_file: str,
    changed: set,
    dtype: str,
    target_kind: str,
    progress,
    protocol: KernelProtocol | None = None,
) -> dict:
    """Every kernel of `kernels_file` not yet in kernel_times.json, under each rule list of
    `libraries` (rule list -> library, default first); returns the file's data."""
    import tvm  # noqa: F401  (unpickling the kernels needs TVM's types)

    protocol = protocol or KernelProtocol()
    path = run.path / FILE
    found: dict[str, Any] = dict(read_record(path, KernelTimes)) if path.exists() else {}
    stored: dict[str, Any] = {
        "protocol": asdict(protocol),
        "checks": CHECKS,
        "kernels": {},
        **found,
    }
    names = sorted(pickle.loads(Path(kernels_file).read_bytes()))
    left = [name for name in names if name not in stored["kernels"]]
    jobs = [
        KernelTimingJob(
            name, libraries, kernels_file, name in changed, dtype, target_kind, protocol
        )
        for name in left
    ]
    done = iter(range(len(names) - len(left) + 1, len(names) + 1))

    def record(job: KernelTimingJob, result: dict | None, failure: dict | None) -> None:
        if failure is not None:  # a kernel that cannot run is recorded under every list
            result = {rules: dict(failure) for rules in libraries}
        stored["kernels"][job.name] = result
        write_json(path, stored)
        progress.step("kernel timing", next(done), len(names), job.name)

    measure_in_turn(jobs, _measure, record)
    stored["complete"] = True
    write_json(path, stored)
    return stored


def measure_in_turn(jobs: list, measure, record) -> None:
    """Each job measured by `measure(job)` in one spawned process, in turn, handed to
    `record(job, result, failure)`: `measure`'s result, or a failed measurement where the job
    killed the process (a fresh one takes the next) or `measure` raised."""
    pool = process_pool(1)
    try:
        for job in jobs:
            result, failure = None, None
            try:
                result = pool.submit(measure, job).result()
            except BrokenProcessPool:
                failure = failed(Reason.RUNNER_CRASHED, "the process died")
                pool.shutdown(wait=False)
                pool = process_pool(1)
            except Exception as error:
                failure = failed(
                    Reason.RUN_ERROR, f"{type(error).__name__}: {str(error).strip()[-300:]}"
                )
            record(job, result, failure)
    except BaseException:
        kill_pool(pool)
        raise
    pool.shutdown()


def kernel_times_complete(run: Run) -> bool:
    path = run.path / FILE
    return path.exists() and read_record(path, KernelTimes).get("complete", False)
