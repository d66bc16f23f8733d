"""MetaSchedule tuning of the fused pool kernel: the default space, and a space of the template.

Two runs side by side (in threads), each MetaSchedule's evolutionary search and XGBoost cost model
with a JSON database in the run folder. They share `--budget` as Optuna's one search has it: the
first gets half (rounded down) as `max_trials_global`, the second the rest:

ms-default  the default space, as a user gets it (PostOrderApply with the target's rules) ms-space
a ScheduleFn space over the template Optuna searches: structural choices are separate designs,
threads and outputs per thread sampled decisions

Candidates are built and measured by Optuna's `CandidateEvaluator` (parallel builds, the NumPy
check, the same timer) through a MetaSchedule builder and runner pair, so the figures compare and
every candidate passes the correctness gate. With `--rpc-tracker`, `rpc.py` measures on the
tracker's servers. Any other kernel task (`tune model --tune-top`) gets the default space alone
(`tune_kernel`). A `spec.Tuner`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from pathlib import Path

import tvm
from tvm.s_tir import meta_schedule as ms

from pool_fusion_tuning.baselines.arms import Arm, tuned_arm
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.runfolder.records import TunerSummary, TunerTrials, WarmStart
from pool_fusion_tuning.runfolder.store import Run, read_record, read_text, write_json, write_text
from pool_fusion_tuning.tuning.base.errors import TuningFailed
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.kernel import kernel_module
from pool_fusion_tuning.tuning.candidates.kernel_cache import KernelCache
from pool_fusion_tuning.tuning.candidates.outcome import Status
from pool_fusion_tuning.tuning.candidates.side_by_side import side_by_side
from pool_fusion_tuning.tuning.candidates.summary import budget_shares, summary_counts, tuner_result
from pool_fusion_tuning.tuning.candidates.task import KernelTask, as_task
from pool_fusion_tuning.tuning.candidates.time_book import TimeBook
from pool_fusion_tuning.tuning.tuners.spec import KernelJob, RunOptions, TunerPlan

from . import METASCHEDULE, rpc
from .bridge import ScheduledModule, evaluating_builder, recorded_runner, trial_recorder
from .database import open_database
from .design_space import template_space
from .tune import tune_module
from .warm_start import start_from

RUNS = ("ms-default", "ms-space")
# Where a search began, in its folder (`warm_start.start_from`), kept for the summary of a resume.
WARM_START = "warm_start.json"


def _ms_target(target: TargetSpec) -> tvm.target.Target:
    """MetaSchedule needs llvm's core count; the CUDA target is already fully described."""
    if not target.is_cuda:
        return tvm.target.Target({"kind": "llvm", "num-cores": os.cpu_count() or 1})
    return target.tvm()


def tune_one(
    name: str,
    directory: Path,
    subject: Case | KernelTask,
    target: TargetSpec,
    budget: int,
    options: RunOptions,
    cache: KernelCache | None = None,
    step=None,
    say=print,
    workers: int | None = None,
    warm_start: Path | None = None,
) -> dict:
    """One MetaSchedule run over `subject`'s kernel, built by `workers` processes (every core by
    default), resuming from its JSON database and trial rows; a new one begins with the best
    records of the run folder `warm_start` (`warm_start.py`). `step(rows, done)` follows each
    candidate measured in a round and each round's end (`done` 0: MetaSchedule then searches for
    the next); `say(line)` reports each repair of the database and the warm start."""
    task = as_task(subject, target)
    func = task.function(target)
    rows_path = directory / "trials.json"
    rows = read_record(rows_path, TunerTrials) if rows_path.exists() else []
    started = time.monotonic()
    database = open_database(directory, say)
    spent: dict = {}
    if len(rows) < budget:
        space = (
            "post-order-apply"
            if name == "ms-default"
            else ms.space_generator.ScheduleFn(
                template_space(target.kind), sch_rules=[], postprocs=[], mutator_probs={}
            )
        )
        outcomes: dict = {}
        book = TimeBook()  # the bridge's waits and writes; the evaluator keeps its own
        remote = bool(options.get("rpc_tracker"))
        each = None if step is None else lambda done: step(rows, done)
        with (
            CandidateEvaluator(task, target, cache=cache, workers=workers) as evaluator,
            contextlib.ExitStack() as stack,
        ):
            if warm_start is not None and not rows:
                found = start_from(
                    warm_start, func, _ms_target(target), database, evaluator, rows, budget, each
                )
                write_json(rows_path, rows)
                write_json(directory / WARM_START, found)
                say(_warm_start_said(found))
            remaining = budget - len(rows)
            if remote:  # the servers check each candidate on the task's inputs
                runner = stack.enter_context(rpc.remote_runner(options, task, evaluator.protocol))
                recorder = trial_recorder(
                    outcomes, rows, rows_path, rpc.label(options), rpc.remote_record, step, book
                )
            else:
                runner = recorded_runner(outcomes)
                recorder = trial_recorder(outcomes, rows, rows_path, step=step, book=book)
            tuning_started = time.monotonic()
            if remaining > 0:  # else the warm start's records were the whole budget
                tune_module(
                    kernel_module(func),
                    _ms_target(target),
                    directory,
                    space=space,
                    seed=options.get("seed", 0),
                    num_tuning_cores=evaluator.workers,
                    max_trials_global=remaining,
                    num_trials_per_iter=min(64, remaining),
                    builder=evaluating_builder(evaluator, outcomes, not remote, book, each),
                    runner=runner,
                    database=database,
                    cost_model="xgb",
                    # The default list without RemoveBuildArtifact (it deletes the folder
                    # of each artifact): the evaluator and `rpc` delete their own libraries.
                    measure_callbacks=[
                        ms.measure_callback.AddToDatabase(),
                        ms.measure_callback.UpdateCostModel(),
                        recorder,
                    ],
                )
            spent = book.totals(evaluator.book)
            # What MetaSchedule's own loop took: its wall less the bridge's calls.
            bridge = spent.get("wait_s", 0) + spent.get("storage_s", 0)
            spent["search_s"] = time.monotonic() - tuning_started - bridge
    write_json(rows_path, rows)
    summary = _summary(rows, time.monotonic() - started)
    if spent:  # the session that tuned (a finished run resumed has none to add)
        summary["time_spent"] = spent
    if (directory / WARM_START).exists():
        summary["warm_start"] = read_record(directory / WARM_START, WarmStart)
    best = _best_module(database, func, _ms_target(target))
    if best is not None:
        write_text(directory / "best_module.json", tvm.ir.save_json(best))
    return summary


def _warm_start_said(found: WarmStart) -> str:
    if found["kernel"] is None:
        return f"no warm start: {found['folder']} holds no record of this kernel"
    gpu = f" ({found['gpu']})" if found["gpu"] else ""
    return (
        f"warm start from {found['folder']}{gpu}: the best {found['records']} records of its "
        f"{found['kernel']}, measured again here"
    )


def _best_module(database, func, target):
    """The database's best record applied to the function (failed records are never top)."""
    mod = kernel_module(func)
    if not database.has_workload(mod):
        return None
    return database.query_ir_module(mod, target, "main")


def _run(run: Run, name: str, plan: TunerPlan, share: int, progress: Progress) -> dict:
    """One of the two runs (or its finished summary, on a resume)."""
    directory = run.tuner_dir(name)
    done = directory / "summary.json"
    if done.exists():  # written when the run ended (on budget, or with its space spent)
        return dict(read_record(done, TunerSummary))
    phase = f"metaschedule {name}"
    progress.start(phase)

    def step(rows, done=0):
        times = [row["kernel_us"] for row in rows if row["status"] == Status.OK]
        best = f"best {min(times):.2f} us" if times else ""
        # Between rounds MetaSchedule searches and measures nothing: the bar says so.
        doing = "measuring its round" if done else "waiting on its next round"
        progress.step(phase, len(rows) + done, share, f"{best}; {doing}".lstrip("; "))

    summary = tune_one(
        name,
        directory,
        plan.case,
        plan.target,
        share,
        plan.options,
        KernelCache.of_run(run.path),
        step,
        progress.line,
    )
    write_json(done, summary)
    short = summary["trials"] < share  # MetaSchedule found no new candidate in its space
    spent = f"; its space spent: {summary['trials']} of its {share} measured" if short else ""
    run.add_wall(phase, progress.finish(phase, tuner_result(summary) + spent))
    return summary


def _summary(rows, wall_s) -> dict:
    summary, valid = summary_counts(rows, wall_s)
    if valid:
        best = min(valid, key=lambda row: row["kernel_us"])
        summary.update(
            {
                "best_kernel_us": best["kernel_us"],
                "best_trial": best["trial"],
                "best_launch": best["launch"],
                "timer": best.get("timer"),
            }
        )
    return summary


def _measured(summaries: dict) -> dict:
    """The two runs' measurements together: the arm's trials are both runs' candidates, as
    `--budget` counted them; its best trial is numbered within its source run (`best_of`)."""
    failed: dict[str, int] = {}
    for summary in summaries.values():
        for reason, count in summary["failed_by_reason"].items():
            failed[reason] = failed.get(reason, 0) + count
    return {
        "trials": sum(s["trials"] for s in summaries.values()),
        "valid": sum(s["valid"] for s in summaries.values()),
        "failed_by_reason": failed,
    }


def tune_run(run: Run, plan: TunerPlan, progress: Progress) -> Arm:
    """Both MetaSchedule runs, side by side; the better one's best schedule becomes arm
    `metaschedule`."""
    shares = dict(zip(RUNS, budget_shares(plan.budget, len(RUNS))))
    summaries = side_by_side(
        {
            name: functools.partial(_run, run, name, plan, share, progress)
            for name, share in shares.items()
        }
    )
    ranked = sorted(
        (s["best_kernel_us"], name)
        for name, s in summaries.items()
        if s.get("best_kernel_us") is not None
    )
    if not ranked:
        raise TuningFailed(
            "metaschedule measured no valid candidate: "
            + "; ".join(f"{name} {s['failed_by_reason']}" for name, s in summaries.items())
        )
    source = ranked[0][1]
    combined = {
        **summaries[source],
        **_measured(summaries),
        "best_of": summaries[source]["trials"],
        "source": source,
        "runs": summaries,
    }
    METASCHEDULE.write_summary(run, plan, combined)
    best = tvm.ir.load_json(read_text(run.tuner_dir(source) / "best_module.json"))
    return tuned_arm(METASCHEDULE.name, ScheduledModule(best, origin=source))


def tune_kernel(job: KernelJob, evaluator: CandidateEvaluator) -> dict:
    """Tune (or finish tuning) any kernel task over its default space, the database in
    `job.folder`, through an evaluator of its own with as many builders as `evaluator`, sharing
    its cache."""

    def step(rows, done=0) -> None:
        job.progress.step(job.phase, len(rows) + done, job.budget)

    job.folder.mkdir(parents=True, exist_ok=True)
    summary = tune_one(
        "ms-default",
        job.folder,
        job.task,
        job.target,
        job.budget,
        {"seed": 0, **job.options},
        evaluator.cache,
        step,
        lambda line: job.progress.line(f"{job.phase}: {line}"),
        workers=evaluator.workers,  # the cores this kernel's tuning has (`--kernels-at-once`)
        warm_start=job.warm_start,
    )
    if not summary["valid"]:
        raise TuningFailed(
            f"metaschedule measured no valid candidate: {summary['failed_by_reason']}"
        )
    return summary


def scheduled(job: KernelJob, summary: dict):
    """The kernel as the database's best record schedules it."""
    return tvm.ir.load_json(read_text(job.folder / "best_module.json"))["main"]
