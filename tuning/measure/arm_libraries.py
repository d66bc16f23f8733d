"""The TVM arms' libraries for the final comparison, built in parallel while the tuners run.

Each arm is built and exported once, by a pool of fresh processes, into this process's own folder
(never the run folder, which may come from elsewhere); every trial then loads the same machine code.
The first trial's record keeps what building found (`with_builds`).
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.runfolder.records import Trial
from pool_fusion_tuning.tuning.base.children import kill_pool, process_pool

from .workload import CaseWorkload, as_workload


def build_arm(subject, arm, target, ir_dir, library: Path | None, kernels: bool) -> tuple:
    """Build one arm of `subject` (a Case or a workload: `workload.py`), exported to `library`
    if given. Returns the executable and what the build found (`Workload.build`)."""
    return as_workload(subject).build(arm, target, ir_dir, library, kernels)


def _build_in_child(workload, arm, target: TargetSpec, ir_dir, library: str) -> dict:
    try:
        _, found = workload.build(arm, target.tvm(), ir_dir, Path(library), True)
    except Exception as error:  # TVM's errors may not pickle: the parent gets their text
        raise RuntimeError(f"{type(error).__name__}: {error}") from None
    return found


# Builder processes for the arms while tuners run (`ArmLibraries.for_run`).
TUNING_BUILDERS = 2


class ArmLibraries:
    """A temporary folder of arms' libraries and the pool building them. `start` may be called as
    arms become known, only from the thread that entered the `with` block (a pool process dies
    with its starting thread); `built` waits for every build."""

    def __init__(
        self,
        case,
        target: TargetSpec,
        ir_dir: Path | None,
        needed: bool,
        workers: int | None = None,
    ):
        """`case`: a Case, or any workload (`workload.py`)."""
        self.workload = as_workload(case)
        self.target, self.ir_dir, self.needed = target, ir_dir, needed
        self.workers = workers or os.cpu_count() or 1
        self.folder = tempfile.TemporaryDirectory(prefix="tune-arms-")
        self._pool: ProcessPoolExecutor | None = None
        self._builds: dict[str, Future] = {}  # arm name -> its build's findings
        self._started: float | None = None  # the first build's start
        self._ended: list[float] = []  # when each build ended

    @classmethod
    def for_run(cls, run, plan) -> "ArmLibraries":
        """Builds only where a trial is left; the IR dumped if trial 0 is. Two builders beside
        the tuners: the arms wait for the tuners anyway, and each builder takes cores from the
        tuners' builders."""
        left = [i for i in range(plan.protocol.trials) if not run.trial_path(i).exists()]
        ir_dir = run.path / "ir" if 0 in left else None
        workers = TUNING_BUILDERS if plan.tuners else None
        return cls(plan.case, plan.target, ir_dir, bool(left), workers)

    @property
    def path(self) -> str:
        return self.folder.name

    def start(self, arms: list) -> None:
        if not self.needed or not arms:
            return
        if self._pool is None:
            # A Case's arms build from TVM alone; a model's are PyTorch modules until exported.
            torch = not isinstance(self.workload, CaseWorkload)
            self._pool, self._started = process_pool(self.workers, torch), time.monotonic()
        pool = self._pool
        for arm in arms:
            library = str(Path(self.path) / f"{arm.name}.so")
            future = pool.submit(
                _build_in_child, self.workload, arm, self.target, self.ir_dir, library
            )
            future.add_done_callback(lambda _: self._ended.append(time.monotonic()))
            self._builds[arm.name] = future

    def built(self) -> dict:
        """Every arm's findings, once all are built (a failed build fails the run); the builders
        end here, none left idle beside the trials' timing."""
        found = {}
        for name, future in self._builds.items():
            try:
                found[name] = future.result()
            except Exception as error:
                raise RuntimeError(f"building arm {name} failed: {error}") from error
        if self._pool is not None:
            self._pool.shutdown()
        return found

    @property
    def wall_s(self) -> float | None:
        """From the first build started to the last one ended (beside the tuners)."""
        if not self._ended or self._started is None:
            return None
        return max(self._ended) - self._started

    def __enter__(self) -> "ArmLibraries":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if self._pool is not None and error is not None:  # an error or Ctrl-C: builds killed
            kill_pool(self._pool)
        elif self._pool is not None:
            self._pool.shutdown()
        self.folder.cleanup()


def with_builds(record: Trial, builds: dict) -> Trial:
    """A trial's record with what building its arms found, under the keys a trial that built
    them itself gives (`harness.run_trial`)."""

    def found(key: str) -> dict:
        return {name: build[key] for name, build in builds.items() if key in build}

    walls = record["wall_s"]
    return {
        **record,
        "kernels": {**record["kernels"], **found("kernels")},
        "cuda_graph_launches": {**record["cuda_graph_launches"], **found("cuda_graph_launches")},
        "wall_s": {**walls, "build_s": {**walls["build_s"], **found("build_s")}},
    }
