"""What a tuner is (`Tuner`) and how it is declared (`TunerSpec`), beside its own module."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from tuning.runfolder.store import Run, write_json

if TYPE_CHECKING:
    import tvm

    from baselines.arms import Arm
    from baselines.case import Case
    from tuning.progress import Progress


class Tuner(Protocol):
    """What `TunerSpec.entry` names. It measures at most `budget` candidates (its spec's
    `budget_counts` says what one is), each checked against the reference before its time
    counts; it resumes from what `run.tuner_dir(...)` already holds, never measuring a
    candidate twice; it writes its summary with `TunerSpec.write_summary` (at least `trials`,
    `valid`, `failed_by_reason`, `wall_s`, `best_kernel_us`, `best_trial`, and each field its
    `kernel_times` names); and it returns the arm of its best schedule, or raises
    `TuningFailed` when it measured nothing valid (the other arms are still compared)."""

    def __call__(
        self,
        run: Run,
        case: Case,
        target: tvm.target.Target,
        budget: int,
        progress: Progress,
        options: dict,
        **extra: object,
    ) -> Arm: ...


@dataclass(frozen=True)
class TunerSpec:
    """A tuner as the run, the command line and the report know it."""

    name: str
    entry: str  # "module:function", a `Tuner`, imported when the tuner runs
    # What one unit of --budget is to it ("{workers}" is filled in where workers share it).
    budget_counts: str
    # Arm -> the field of this tuner's summary that holds the arm's fused-kernel time (the
    # tuners time the rules' kernels with the same timer as their candidates).
    kernel_times: dict[str, str]
    extra: dict = field(default_factory=dict)  # keyword options `entry` takes

    def tune(
        self,
        run: Run,
        case: Case,
        target: tvm.target.Target,
        budget: int,
        progress: Progress,
        options: dict,
    ) -> Arm:
        module, function = self.entry.split(":")
        tuner: Tuner = getattr(importlib.import_module(module), function)
        return tuner(run, case, target, budget, progress, options, **self.extra)

    def write_summary(self, run: Run, summary: dict) -> None:
        """The tuner's summary.json, with what the report reads of its spec: the report
        renders from the run folder alone."""
        workers = run.meta.get("options", {}).get("workers", 1)
        shared = f", shared by its {workers} workers" if workers > 1 else ""
        counts = self.budget_counts.replace("{workers}", shared)  # filled in, not left literal
        declared = {"budget_counts": counts, "kernel_times": self.kernel_times}
        write_json(run.tuner_dir(self.name) / "summary.json", {**summary, **declared})
