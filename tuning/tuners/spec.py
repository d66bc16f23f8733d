"""What a tuner is (`Tuner`) and how it is declared (`TunerSpec`), beside its own module.

A tuner is one module with three functions (`Tuner`): `tune_run` tunes the study's task (the Case's
fused pool kernel, `candidates.task.PoolKernel`, as its `TunerPlan` says), `tune_kernel` any kernel
task in a folder of its own (`candidates.task.ModelKernel`, for `tune model --tune-top`), and
`scheduled` puts a kernel's best schedule back. Its `TunerSpec` says which subcommands run it
(`roles`) and what the command line checks for it (`storage`, `rpc`), so that every entry point
finds it through `registry.TUNERS` and none names it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from pool_fusion_tuning.runfolder.records import RunOptions
from pool_fusion_tuning.runfolder.store import Run, write_json

if TYPE_CHECKING:
    import tvm

    from pool_fusion_tuning.baselines.arms import Arm
    from pool_fusion_tuning.baselines.case import Case
    from pool_fusion_tuning.baselines.target import TargetSpec
    from pool_fusion_tuning.tuning.base.progress import Progress
    from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
    from pool_fusion_tuning.tuning.candidates.task import KernelTask


class Role:
    """What a tuner takes part in (`TunerSpec.roles`)."""

    STUDY = "study"  # `tune --tuners` may name it
    DEFAULT = "default"  # a run that names no tuner runs it
    CUDA_DEFAULT = "cuda-default"  # a run on CUDA that names no tuner runs it too
    SWEEP = "sweep"  # `tune sweep` runs it on every Case, at the sweep's budget
    TUNE_TOP = "tune-top"  # `tune model --tune-top` runs it on each of the costliest kernels


@dataclass(frozen=True)
class TunerPlan:
    """The study's task as a tuner gets it (`Tuner.tune_run`): the Case's kernel on `target`,
    at most `budget` candidates, with the run's options; `identity` is what a stored search
    must have been made for (the run's, `store.run_identity`)."""

    case: Case
    target: TargetSpec
    budget: int
    options: RunOptions
    identity: dict

    @property
    def seed(self) -> int:
        return self.options.get("seed", 0)

    @property
    def sampler(self) -> str:
        return self.options.get("sampler", "tpe")

    @property
    def workers(self) -> int:
        return self.options.get("workers", 1)


@dataclass(frozen=True)
class KernelJob:
    """One kernel task to tune in `folder` (`tune model --tune-top`): at most `budget`
    candidates, each checked against the task's reference; a resume goes on from what `folder`
    holds. `identity`: what a stored search there must have been made for. `options`: where a
    tuner measures (`rpc_tracker`, `rpc_key`), not what. `warm_start`: a run folder whose
    MetaSchedule records of the kernel a new MetaSchedule search begins with."""

    task: KernelTask
    folder: Path
    target: TargetSpec
    budget: int
    identity: dict
    progress: Progress
    phase: str  # the name its progress lines give
    options: RunOptions = field(default_factory=lambda: RunOptions())
    warm_start: Path | None = None


class Tuner(Protocol):
    """What `TunerSpec.entry` names (a module holding these three functions)."""

    def tune_run(self, run: Run, plan: TunerPlan, progress: Progress, **extra: object) -> Arm:
        """The study's task (`plan`; nothing read back from run.json) in `run.tuner_dir(...)`,
        with its spec's `extra` options. It measures at most `plan.budget` candidates
        (`budget_counts` says what one is), each checked against the reference before its time
        counts, resumes from its folder without measuring a candidate twice, writes its summary
        with `TunerSpec.write_summary` (at least `trials`, `valid`, `failed_by_reason`, `wall_s`,
        `best_kernel_us`, `best_trial`, and each field its `kernel_times` names), and returns the
        arm of its best schedule, or raises `TuningFailed` when nothing measured was valid (the
        other arms still run)."""
        ...

    def tune_kernel(self, job: KernelJob, evaluator: CandidateEvaluator) -> dict:
        """Any kernel task in `job.folder`, its candidates checked and timed by `evaluator` (the
        one that timed the rule lists' kernels, so every figure comes from one timer): its
        summary (at least `trials`, `valid`, `failed_by_reason`, `best_kernel_us`), or
        `TuningFailed` where nothing was valid."""
        ...

    def scheduled(self, job: KernelJob, summary: dict) -> tvm.tirx.PrimFunc | None:
        """The task's kernel under the best schedule `summary` names (perhaps from an earlier
        command); None where it names none."""
        ...


class StorageChecks(Protocol):
    """What `TunerSpec.storage` names: how the command line handles `--storage URL`."""

    def remember_password(self, url: str) -> str:
        """The URL as run.json stores it (the password kept out of it)."""
        ...

    def storage_file(self, url: str) -> Path | None:
        """The file a URL names (None for a server)."""
        ...

    def storage_problem(self, url: str, force: bool = False) -> str | None:
        """Why a run must not keep its studies at `url`, if it must not (one line)."""
        ...

    def reach(self, url: str, password_env: str | None) -> None:
        """Refuse, in one line, a storage that cannot be opened (before any work)."""
        ...

    def new_study(self) -> str:
        """A name for a new run's studies in a shared storage, unique to that run."""
        ...

    def open_first(
        self, url: str, identity: dict, password_env: str | None, study: str | None, **extra
    ) -> None:
        """Create the tuner's study (named for the run's `study`) in the storage, or check it is
        this run's, before the run folder exists."""
        ...


class RpcChecks(Protocol):
    """What `TunerSpec.rpc` names: the tuner measures on `--rpc-tracker`'s servers."""

    def free_servers(self, tracker: str, key: str) -> object:
        """Refuse, in one line, a tracker that is unreachable or has no free server."""
        ...


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


@dataclass(frozen=True)
class TunerSpec:
    """A tuner as the run, the command line and the report know it."""

    name: str
    entry: str  # the module that is its `Tuner`, imported when the tuner runs
    # What one unit of --budget is to it ("{workers}" is filled in where workers share it).
    budget_counts: str
    # Arm -> the summary field holding the arm's fused-kernel time (timed with the candidates'
    # timer).
    kernel_times: dict[str, str]
    # The rule-made arm its arm is held against (the one scheduling the kernel it searches); the
    # report gives that ratio from summary.json, naming no tuner.
    held_against: str
    extra: dict = field(default_factory=dict)  # the spec's own keyword options to `tune_run`
    roles: frozenset[str] = frozenset({Role.STUDY})
    note: str = ""  # what `tune --help` adds to its name
    storage: str | None = None  # the module that is its `StorageChecks` (takes --storage)
    rpc: str | None = None  # the module that is its `RpcChecks` (measures on --rpc-tracker)

    def tuner(self) -> Tuner:
        return cast(Tuner, _module(self.entry))

    def tune(self, run: Run, plan: TunerPlan, progress: Progress) -> Arm:
        """The study's task (`Tuner.tune_run`), with the spec's own options."""
        return self.tuner().tune_run(run, plan, progress, **self.extra)

    def storage_checks(self) -> StorageChecks | None:
        return None if self.storage is None else cast(StorageChecks, _module(self.storage))

    def rpc_checks(self) -> RpcChecks | None:
        return None if self.rpc is None else cast(RpcChecks, _module(self.rpc))

    def write_summary(self, run: Run, plan: TunerPlan, summary: dict) -> None:
        """The tuner's summary.json, with what the report reads of its spec (it renders from the
        run folder alone)."""
        workers = plan.workers
        shared = f", shared by its {workers} workers" if workers > 1 else ""
        counts = self.budget_counts.replace("{workers}", shared)  # filled in, not left literal
        declared = {
            "budget_counts": counts,
            "kernel_times": self.kernel_times,
            "held_against": self.held_against,
        }
        write_json(run.tuner_dir(self.name) / "summary.json", {**summary, **declared})
