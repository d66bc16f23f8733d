"""MetaSchedule tuning of the fused pool kernel: the default space, and a space of the template.

Two runs, each MetaSchedule's own evolutionary search and XGBoost cost model, with a JSON database
in the run folder. They share `--budget` as Optuna's one search has it: the first gets half of
it (rounded down) as `max_trials_global`, the second the rest, so that each tuner measures
`--budget` candidates in all:

  ms-default  the default space, as a user gets it (PostOrderApply with the target's rules)
  ms-space    a ScheduleFn space over the schedule template Optuna searches: structural choices
              are separate designs, threads and outputs per thread are sampled decisions

Candidates are built and measured by the same `CandidateEvaluator` as Optuna's (parallel builds,
the NumPy check, the same kernel timer), through a MetaSchedule builder and runner pair, so the
two tuners' figures are comparable and every MetaSchedule candidate passes the correctness gate.
With `--rpc-tracker`, the builder only builds, and `rpc.py` measures on the tracker's servers.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from pathlib import Path

from baselines.anatomy import launch_configs
from baselines.arms import Arm
from baselines.case import Case
from baselines.template import PoolSchedule

from .candidates import (CandidateEvaluator, TuningFailed, budget_shares, error_line,
                         failures_by_reason)
from .kernel import bias_count, fused_function, kernel_module
from .ms_tune import tune_kernel
from .store import Run, RunError, read_json, write_json

RUNS = ("ms-default", "ms-space")
# Sampled decisions of the ms-space designs (the Optuna space's numeric knobs).
SAMPLED = {"cuda": {"threads": [32, 64, 128, 256, 512, 1024], "outputs_w": [1, 2, 4, 8],
                    "outputs_h": [1, 2, 4]},
           "llvm": {"outputs_w": [1, 2, 4, 8], "outputs_h": [1, 2, 4]}}
# Structural choices, one design each. Vector staging is left out: its width depends on the
# tile, which a replayed trace cannot re-derive. Outer binding with shared memory never fits.
STRUCTURES = {
    "cuda": [dict(thread_axis=a, pooled_scope=p, unroll=u) for a, p, u in itertools.product(
        ("inner", "outer"), ("local", "shared"), (False, True)) if (a, p) != ("outer", "shared")],
    "llvm": [dict(unroll=u, vector=v) for u, v in itertools.product((False, True), repeat=2)],
}


class ScheduledModule:
    """A function MetaSchedule scheduled, as a picklable schedule (TVM's JSON of the module).

    `apply` returns the scheduled function in place of the fused one; both come from the same
    Case, and the signatures are checked to make sure."""

    def __init__(self, mod, origin: str = "metaschedule"):
        import tvm
        self.mod_json = tvm.ir.save_json(mod)
        self.origin = origin

    def apply(self, func, target):
        import tvm
        scheduled = tvm.ir.load_json(self.mod_json)["main"]
        if [str(p.ty) for p in scheduled.params] != [str(p.ty) for p in func.params]:
            raise ValueError("the tuned function's signature differs from the fused function")
        return scheduled.with_attr("tirx.is_scheduled", True)

    def to_dict(self) -> dict:
        return {"scheduled_by": self.origin}


def template_space(target_kind: str):
    """The ScheduleFn: one design per structure, numeric knobs as sampled decisions."""
    sampled = SAMPLED[target_kind]

    def designs(sch):
        out = []
        for structure in STRUCTURES[target_kind]:
            design = sch.copy()
            values = {name: design.sample_categorical(choices, [1 / len(choices)] * len(choices))
                      for name, choices in sampled.items()}
            PoolSchedule(**values, **structure).schedule(design, target_kind)
            out.append(design)
        return out

    return designs


def _ms_target(target):
    """MetaSchedule needs llvm's core count; the CUDA target is already fully described."""
    import os

    import tvm
    if target.kind.name == "llvm":
        return tvm.target.Target({"kind": "llvm", "num-cores": os.cpu_count() or 1})
    return target


BUILD_FAILURES = ("build error", "builder crashed")


def _builder(evaluator: CandidateEvaluator, outcomes: dict, measure: bool = True):
    """A builder that builds each batch through `evaluator` and, if `measure`, measures it
    there too; `outcomes` keeps each candidate's record under its artifact handle."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder

    @derived_object
    class EvaluatingBuilder(PyBuilder):
        def build(self, build_inputs):
            schedules = [ScheduledModule(b.mod) for b in build_inputs]
            records = (evaluator.evaluate if measure else evaluator.build)(schedules)
            results = []
            for record in records:
                handle = record.get("path", f"candidate-{len(outcomes)}")
                outcomes[handle] = record
                if record.get("reason") in BUILD_FAILURES:
                    results.append(BuilderResult(handle, f"{record['reason']}: "
                                                         f"{record.get('detail')}"))
                else:  # measured (or failed while running), or built: the runner reports it
                    results.append(BuilderResult(handle, None))
            return results

    return EvaluatingBuilder()


def _recorded_runner(outcomes: dict):
    """A runner that hands MetaSchedule the times the builder measured (failures as errors,
    which it stores as 1e10)."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.runner import PyRunner, RunnerFuture, RunnerResult

    @derived_object
    class RecordedRunner(PyRunner):
        def run(self, runner_inputs):
            futures = []
            for runner_input in runner_inputs:
                record = outcomes[runner_input.artifact_path]
                if record["status"] == "ok":
                    result = RunnerResult([record["kernel_us"] * 1e-6], None)
                else:
                    result = RunnerResult(None, f"{record.get('reason')}: {record.get('detail')}")
                futures.append(RunnerFuture(f_done=lambda: True, f_result=lambda r=result: r))
            return futures

    return RecordedRunner()


def _recorder(outcomes: dict, rows: list, path: Path, runner: str = "local", finish=None):
    """A measure callback: one row per candidate, with its launch configuration and what
    measured it. `finish(handle, record, runner_result)` completes a record built here and
    measured by another runner."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class RecordTrials(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, candidates, builder_results, runner_results):
            for candidate, built, ran in zip(candidates, builder_results, runner_results):
                record = outcomes.get(built.artifact_path) or {
                    "status": "failed", "reason": "build error",
                    "detail": (built.error_msg or "")[:300]}
                if record["status"] == "built":
                    record = finish(built.artifact_path, record, ran)
                launch = next(iter(launch_configs(candidate.sch.mod).values()), None)
                rows.append({"trial": len(rows) + 1, "launch": launch, "runner": runner,
                             **{k: v for k, v in record.items() if k != "samples_us"}})
            write_json(path, rows)

    return RecordTrials()


def tune_one(name: str, directory: Path, case: Case, target, target_spec: dict, budget: int,
             options: dict) -> dict:
    """One MetaSchedule run; resumes from its JSON database and its trial rows."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    _, func = fused_function(case, target_spec)
    rows_path = directory / "trials.json"
    rows = read_json(rows_path) if rows_path.exists() else []
    remaining = budget - len(rows)
    started = time.monotonic()
    kind = target.kind.name
    try:
        database = ms.database.JSONDatabase(work_dir=str(directory))
    except Exception as error:  # a corrupt file: said in one line, never overwritten
        raise RunError(f"cannot read the MetaSchedule database in {directory} "
                       f"({error_line(str(error))}); it was left as it is") from None
    if remaining > 0:
        space = "post-order-apply" if name == "ms-default" else ms.space_generator.ScheduleFn(
            template_space(kind), sch_rules=[], postprocs=[], mutator_probs={})
        outcomes: dict = {}
        remote = bool(options.get("rpc_tracker"))
        with CandidateEvaluator(case, target_spec) as evaluator, \
                contextlib.ExitStack() as stack:
            if remote:
                from . import rpc
                runner = stack.enter_context(rpc.remote_runner(
                    options, case, bias_count(func), evaluator.protocol))
                recorder = _recorder(outcomes, rows, rows_path, rpc.label(options),
                                     rpc.remote_record)
            else:
                runner, recorder = _recorded_runner(outcomes), _recorder(outcomes, rows, rows_path)
            tune_kernel(kernel_module(func), _ms_target(target), directory, space=space,
                        seed=options.get("seed", 0), num_tuning_cores=evaluator.workers,
                        max_trials_global=remaining, num_trials_per_iter=min(64, remaining),
                        builder=_builder(evaluator, outcomes, measure=not remote), runner=runner,
                        database=database, cost_model="xgb",
                        # The default list without RemoveBuildArtifact (it deletes the folder
                        # of each artifact): the evaluator and `rpc` delete their own libraries.
                        measure_callbacks=[ms.measure_callback.AddToDatabase(),
                                           ms.measure_callback.UpdateCostModel(), recorder])
    write_json(rows_path, rows)
    summary = _summary(rows, time.monotonic() - started)
    best = _best_module(database, func, _ms_target(target))
    if best is not None:
        (directory / "best_module.json").write_text(tvm.ir.save_json(best))
    return summary


def _best_module(database, func, target):
    """The database's best record applied to the function (failed records are never top)."""
    mod = kernel_module(func)
    if not database.has_workload(mod):
        return None
    return database.query_ir_module(mod, target, "main")


def _summary(rows, wall_s) -> dict:
    valid = [row for row in rows if row["status"] == "ok"]
    summary = {"trials": len(rows), "valid": len(valid),
               "failed_by_reason": failures_by_reason(rows), "wall_s": wall_s}
    if valid:
        best = min(valid, key=lambda row: row["kernel_us"])
        summary.update({"best_kernel_us": best["kernel_us"], "best_trial": best["trial"],
                        "best_launch": best["launch"], "timer": best.get("timer")})
    return summary


def run_metaschedule(run: Run, case: Case, target, budget: int, progress, options: dict):
    """Both MetaSchedule runs; the better one's best schedule becomes arm `metaschedule`."""
    target_spec = run.meta["target_spec"]
    summaries = {}
    for name, share in zip(RUNS, budget_shares(budget, len(RUNS))):
        directory = run.tuner_dir(name)
        done = directory / "summary.json"
        if done.exists():  # written when the run ended (on budget, or with its space spent)
            summaries[name] = read_json(done)
            continue
        if progress:
            progress.say(f"metaschedule {name}: {share} trials")
        summaries[name] = tune_one(name, directory, case, target, target_spec, share, options)
        write_json(done, summaries[name])
    ranked = sorted((s["best_kernel_us"], name) for name, s in summaries.items()
                    if s.get("best_kernel_us") is not None)
    if not ranked:
        raise TuningFailed("metaschedule measured no valid candidate: " + "; ".join(
            f"{name} {s['failed_by_reason']}" for name, s in summaries.items()))
    source = ranked[0][1]
    combined = {**summaries[source], "source": source, "runs": summaries}
    write_json(run.tuner_dir("metaschedule") / "summary.json", combined)
    import tvm
    best = tvm.ir.load_json((run.tuner_dir(source) / "best_module.json").read_text())
    return Arm("metaschedule", schedule=ScheduledModule(best, origin=source))


def default_space_outcomes(case: Case, drop_rules: tuple = (), samples: int = 32,
                           seed: int = 1) -> dict:
    """Build outcomes of candidates sampled from the default CUDA space, by design and reason.

    A diagnosis that needs no GPU (the failures happen while TVM lowers the TIR). `drop_rules`
    names schedule rules to leave out of the default list, e.g. ("ParallelizeVectorizeUnroll",).
    """
    import collections

    import tvm
    from tvm.s_tir import meta_schedule as ms

    from baselines.pipeline import make_target
    target = make_target("cuda")
    _, func = fused_function(case, {"kind": "cuda", "arch": "sm_90"})
    rules = [r for r in ms.ScheduleRule.create("cuda") if type(r).__name__ not in drop_rules]
    space = ms.space_generator.PostOrderApply(sch_rules=rules, postprocs="cuda",
                                              mutator_probs="cuda")
    context = ms.TuneContext(mod=kernel_module(func),
                             target=target, space_generator=space,
                             search_strategy=ms.search_strategy.ReplayTrace(),
                             task_name="fused_pool", num_threads=1, rand_state=seed)
    designs = context.space_generator.generate_design_space(context.mod)
    context.pre_tuning(max_trials=samples, num_trials_per_iter=samples, design_spaces=designs)
    outcomes = collections.Counter()
    for candidate in context.generate_measure_candidates():
        design = ("cross-thread reduction (shared)"
                  if 'storage_scope="shared"' in str(candidate.sch.trace)
                  else "two kernels (global intermediate)")
        try:
            tvm.compile(candidate.sch.mod, target=target)
            outcomes[(design, "built")] += 1
        except Exception as error:  # the outcome being counted
            outcomes[(design, error_line(str(error)))] += 1
    return {f"{design}: {reason}": count for (design, reason), count in sorted(outcomes.items())}
