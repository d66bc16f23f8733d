"""MetaSchedule's builder, runner and measure callback, bridged to the `CandidateEvaluator`.

MetaSchedule's candidates are built and measured by the same evaluator as Optuna's (parallel
builds, the NumPy check, the same kernel timer), so the two tuners' figures are comparable and
every MetaSchedule candidate passes the correctness gate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import tvm
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback
from tvm.s_tir.meta_schedule.runner import PyRunner, RunnerFuture, RunnerResult

from pool_fusion_tuning.baselines.anatomy import launch_configs
from pool_fusion_tuning.runfolder.store import write_json
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.outcome import Reason, Status, failed
from pool_fusion_tuning.tuning.candidates.time_book import TimeBook


class ScheduledModule:
    """A function MetaSchedule scheduled, as a picklable schedule (TVM's JSON of the module).

    `apply` returns the scheduled function in place of the fused one; both come from the same
    Case, and the signatures are checked to make sure."""

    def __init__(self, mod, origin: str = "metaschedule"):
        self.mod_json = tvm.ir.save_json(mod)
        self.origin = origin

    def apply(self, func: tvm.tirx.PrimFunc, target: tvm.target.Target) -> tvm.tirx.PrimFunc:
        scheduled = tvm.ir.load_json(self.mod_json)["main"]
        if [str(p.ty) for p in scheduled.params] != [str(p.ty) for p in func.params]:
            raise ValueError("the tuned function's signature differs from the fused function")
        return scheduled.with_attr("tirx.is_scheduled", True)

    def to_dict(self) -> dict:
        return {"scheduled_by": self.origin}


def evaluating_builder(
    evaluator: CandidateEvaluator,
    outcomes: dict,
    measure: bool = True,
    book: TimeBook | None = None,
    each: Callable[[int], None] | None = None,
) -> PyBuilder:
    """A builder that builds each batch through `evaluator` and, if `measure`, measures it
    there too (`each(done)` after each candidate of the batch is measured); `outcomes` keeps
    each candidate's record under its artifact handle. The time MetaSchedule waits for a
    batch goes to `book` (`wait_s`)."""
    timebook = book if book is not None else TimeBook()

    @derived_object
    class EvaluatingBuilder(PyBuilder):
        def build(self, build_inputs):
            schedules = [ScheduledModule(b.mod) for b in build_inputs]
            with timebook.timing("wait_s"):
                records = (
                    evaluator.evaluate(schedules, each) if measure else evaluator.build(schedules)
                )
            results = []
            for record in records:
                handle = record.get("path", f"candidate-{len(outcomes)}")
                outcomes[handle] = record
                if "reason" in record and Reason(record["reason"]).at_build:
                    results.append(
                        BuilderResult(handle, f"{record['reason']}: {record.get('detail')}")
                    )
                else:  # measured (or failed while running), or built: the runner reports it
                    results.append(BuilderResult(handle, None))
            return results

    return EvaluatingBuilder()


def recorded_runner(outcomes: dict) -> PyRunner:
    """A runner that hands MetaSchedule the times the builder measured (failures as errors,
    which it stores as 1e10)."""

    @derived_object
    class RecordedRunner(PyRunner):
        def run(self, runner_inputs):
            futures = []
            for runner_input in runner_inputs:
                record = outcomes[runner_input.artifact_path]
                if record["status"] == Status.OK:
                    result = RunnerResult([record["kernel_us"] * 1e-6], None)
                else:
                    result = RunnerResult(None, f"{record.get('reason')}: {record.get('detail')}")
                futures.append(RunnerFuture(f_done=lambda: True, f_result=lambda r=result: r))
            return futures

    return RecordedRunner()


def trial_recorder(
    outcomes: dict,
    rows: list,
    path: Path,
    runner: str = "local",
    finish=None,
    step=None,
    book: TimeBook | None = None,
) -> PyMeasureCallback:
    """A measure callback: one row per candidate, with its launch configuration and what
    measured it. `finish(handle, record, runner_result)` completes a record built here and
    measured by another runner; `step(rows)` follows each batch. Its time goes to `book`
    (`storage_s`)."""
    timebook = book if book is not None else TimeBook()

    @derived_object
    class RecordTrials(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, candidates, builder_results, runner_results):
            with timebook.timing("storage_s"):
                self._record(candidates, builder_results, runner_results)

        def _record(self, candidates, builder_results, runner_results):
            for candidate, built, ran in zip(candidates, builder_results, runner_results):
                record = outcomes.get(built.artifact_path) or failed(
                    Reason.BUILD_ERROR, (built.error_msg or "")[:300]
                )
                if record["status"] == Status.BUILT:
                    record = finish(built.artifact_path, record, ran)
                rows.append(trial_row(rows, candidate.sch.mod, record, runner))
            write_json(path, rows)
            if step is not None:
                step(rows)

    return RecordTrials()


def trial_row(rows: list, mod, record: Mapping, runner: str = "local", **marks) -> dict:
    """The trial row of a candidate (`mod`, scheduled) measured as `record` says, numbered after
    `rows`: its launch configuration, what measured it, any `marks` (`warm_start`)."""
    return {
        "trial": len(rows) + 1,
        "launch": next(iter(launch_configs(mod).values()), None),
        "runner": runner,
        **marks,
        **{k: v for k, v in record.items() if k != "samples_us"},
    }
