"""Optuna search over the schedule template: the tuners `optuna` (the fused pool kernel) and
`optuna-one-kernel` (the whole graph's one kernel), and any kernel the template takes
(`tune_kernel`, for `tune model --tune-top`); a `spec.Tuner`.

The study lives in its storage (`optuna_study.py`); the loop is `search_loop.py`, the workers of
`--workers` are `workers.py`.
"""

from __future__ import annotations

import time

import optuna

from pool_fusion_tuning.baselines.arms import ONE_KERNEL, Arm, template_arm
from pool_fusion_tuning.baselines.models.model_errors import first_line
from pool_fusion_tuning.baselines.template import PoolSchedule
from pool_fusion_tuning.runfolder.records import Measurement, TunerSummary
from pool_fusion_tuning.runfolder.redact import redact
from pool_fusion_tuning.runfolder.spent import added
from pool_fusion_tuning.runfolder.store import Run, RunError, read_record, write_json
from pool_fusion_tuning.tuning.base.errors import OutOfScope, TuningFailed
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.kernel_cache import KernelCache
from pool_fusion_tuning.tuning.candidates.rule_schedule import DefaultSchedule
from pool_fusion_tuning.tuning.candidates.summary import summary_counts, tuner_result
from pool_fusion_tuning.tuning.tuners.space import Space, key
from pool_fusion_tuning.tuning.tuners.spec import KernelJob, TunerPlan

from . import OPTUNA, OPTUNA_ONE_KERNEL, one_kernel_budget
from .kernel_study import record_kernel
from .optuna_study import STUDY_NAME, open_study, study_name
from .record import close_interrupted
from .replay import compare_samplers
from .samplers import make_sampler
from .search_loop import OptunaSearch
from .search_summary import records, summarize
from .storages import check_in_folder, default_storage_url
from .workers import run_workers

# The rule lists the pool kernel's tuner times beside its candidates.
RULES = ("default", "fixed")


def tune_run(run: Run, plan: TunerPlan, progress: Progress, whole: bool = False) -> Arm:
    """Tune (or finish tuning) the fused pool kernel; return the arm `optuna`. With `whole`, the
    whole graph's one kernel: tuner and arm `optuna-one-kernel`, against the rule's choice for
    it, at its share of the budget."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = OPTUNA_ONE_KERNEL if whole else OPTUNA
    budget = one_kernel_budget(plan.budget) if whole else plan.budget  # its `budget_counts`
    name = spec.name
    directory = run.tuner_dir(name)
    case, options = plan.case, plan.options
    space = Space.for_target(case, plan.target.tvm(), whole)
    started = time.monotonic()
    progress.start(name)
    workers = 1 if whole else plan.workers  # the workers tune the pool kernel
    url = options.get("storage") or default_storage_url(directory, workers)
    check_in_folder(url, run.path)
    study = open_study(
        url,
        study_name(whole, bool(options.get("storage")), options.get("study", STUDY_NAME)),
        make_sampler(plan.sampler, plan.seed),
        plan.identity,
        options.get("storage_password_env"),
    )
    if workers > 1:
        close_interrupted(study)
        run_workers(url, case, plan.target, budget - len(records(study)), workers, options)
    with CandidateEvaluator(
        case, plan.target, whole=whole, cache=KernelCache.of_run(run.path)
    ) as evaluator:
        search = OptunaSearch(study, space, evaluator, progress, phase=name)
        search.run(budget)
        # The default rules have no schedule worth timing for a kernel with a prologue; the rule's
        # one kernel is timed as `one-kernel` compiles it.
        rule_kernels = _rule_kernels(
            directory, evaluator, ("fixed",) if whole else RULES, whole and ONE_KERNEL.masked_loads
        )
        exhaustive = (
            search.exhaustive(directory / "exhaustive.json") if options.get("exhaustive") else None
        )
    rows = records(study)
    wall_s = run.add_wall(name, time.monotonic() - started)  # over every session on it
    summary = summarize(study, rows, wall_s, rule_kernels, exhaustive, key(space.seeds()[0]))
    summary["time_spent"] = added(
        _earlier_spent(directory / "summary.json"), search.book.totals(evaluator.book)
    )
    if exhaustive is not None and summary.get("exhaustive_best_kernel_us"):
        summary["sampler_replay"] = compare_samplers(space, exhaustive)
    write_json(directory / "trials.json", rows)
    spec.write_summary(run, plan, summary)
    progress.finish(name, tuner_result(summary))
    if not summary["valid"]:
        raise TuningFailed(
            f"{name} measured no valid candidate in {len(rows)} trials: "
            f"{summary['failed_by_reason']}"
        )
    return template_arm(name, summary["best_params"], whole_graph=whole)


def _earlier_spent(path) -> dict | None:
    """The time a readable earlier summary holds (a finished run resumed); a damaged one is
    replaced as a resume replaces it."""
    try:
        return read_record(path, TunerSummary).get("time_spent") if path.exists() else None
    except RunError:
        return None


def tune_kernel(job: KernelJob, evaluator: CandidateEvaluator) -> dict:
    """Tune (or finish tuning) any kernel the template takes, its study in `job.folder`;
    `OutOfScope` (before any study is made) for a kernel it does not take."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.monotonic()
    try:
        space = Space.for_function(job.task.function(job.target), job.target.tvm())
    except Exception as error:  # broad: a kernel the window analysis cannot read is not taken
        raise OutOfScope(f"not in the schedule template's space: {first_line(error)}") from error
    job.folder.mkdir(parents=True, exist_ok=True)
    # With --storage the study is shared: workers elsewhere join it, and its budget counts their
    # trials (`search_loop.py`); else it is the kernel's own, in its folder.
    shared = job.options.get("storage")
    name = job.options.get("study", STUDY_NAME) if shared else STUDY_NAME
    study = open_study(
        shared or default_storage_url(job.folder),
        name,
        make_sampler("tpe", 0),
        job.identity,
        job.options.get("storage_password_env"),
    )
    if shared:
        record_kernel(study, job.task, job.budget)
        job.progress.line(
            f"{job.phase}: Optuna study {name} in {redact(shared)}; more workers join it with "
            f"tune worker --storage URL --study {name} --budget B"
        )
    search = OptunaSearch(
        study, space, evaluator, job.progress, shared=bool(shared), phase=job.phase
    )
    search.run(job.budget)
    summary, valid = summary_counts(records(study), time.monotonic() - started)
    if not valid:
        raise TuningFailed(f"optuna measured no valid candidate: {summary['failed_by_reason']}")
    best = min(valid, key=lambda row: row["kernel_us"])
    found = {**summary, "best_kernel_us": best["kernel_us"], "best_params": best["params"]}
    return {**found, "study": name} if shared else found


def scheduled(job: KernelJob, summary: dict):
    """The kernel under the template's best point."""
    func = job.task.function(job.target)
    return PoolSchedule(**summary["best_params"]).apply(func, job.target.tvm())


def _rule_kernels(
    directory, evaluator: CandidateEvaluator, rule_lists=RULES, masked: bool = False
) -> dict:
    """The default and fixed rules' kernels (`masked`: loads masked), timed once by the same
    runner and kept across resumes (a run from before masking kept its unmasked one in
    `fixed_kernel.json`)."""
    kernels = {}
    for rules in rule_lists:
        path = directory / f"{rules}{'-masked' if masked else ''}_kernel.json"
        if not path.exists():
            write_json(path, evaluator.evaluate([DefaultSchedule(rules, masked)])[0])
        kernels[rules] = read_record(path, Measurement)
    return kernels
