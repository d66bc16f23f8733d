"""MetaSchedule on llvm with real measurements: both runs, resume, loud failure, apply-back."""

import io
import re

import numpy as np
import pytest
import tvm
from conftest import WINDOW3, read_json
from tvm import relax

from pool_fusion_tuning.baselines.pipeline import build, make_target
from pool_fusion_tuning.baselines.reference import random_input, reference
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.runfolder.store import Run
from pool_fusion_tuning.tuning.base.errors import TuningFailed
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.candidates.summary import budget_shares
from pool_fusion_tuning.tuning.measure.vm_arms import outputs_of
from pool_fusion_tuning.tuning.tuners.metaschedule import bridge as ms_bridge
from pool_fusion_tuning.tuning.tuners.metaschedule import tuner as metaschedule
from pool_fusion_tuning.tuning.tuners.metaschedule.diagnosis import default_space_outcomes
from pool_fusion_tuning.tuning.tuners.spec import RunOptions, TunerPlan

OPTIONS: RunOptions = {"seed": 0}


def _plan(budget: int) -> TunerPlan:
    return TunerPlan(WINDOW3, TargetSpec("llvm"), budget, OPTIONS, {})


def _quiet() -> Progress:
    return Progress(stream=io.StringIO())


# Shared by the two runs: 4 trials each.
BUDGET = 8


def _run(path):
    """A run folder whose run.json holds nothing a tuner could read back: all it needs is in
    its plan."""
    return Run.create(path, {})


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    run = _run(tmp_path_factory.mktemp("ms") / "run")
    console = io.StringIO()  # --verbose: every step of the bars as a line
    progress = Progress(verbose=True, stream=console)
    arm = metaschedule.tune_run(run, _plan(BUDGET), progress)
    return run, arm, console.getvalue()


def test_budget_shares_add_up_to_the_budget():
    assert budget_shares(500, 2) == [250, 250]
    assert budget_shares(7, 2) == [3, 4]
    assert budget_shares(1, 2) == [0, 1]


def test_both_runs_measure_valid_candidates(tuned):
    run, _, _ = tuned
    summary = read_json(run.path / "tuners" / "metaschedule" / "summary.json")
    assert set(summary["runs"]) == {"ms-default", "ms-space"}
    # the arm's trials are what both runs measured (the report's row), not its source run's
    runs = summary["runs"].values()
    assert summary["trials"] == sum(r["trials"] for r in runs) == BUDGET
    assert summary["valid"] == sum(r["valid"] for r in runs)
    assert summary["best_of"] == summary["runs"][summary["source"]]["trials"]
    for name, result in summary["runs"].items():
        assert result["trials"] == 4 and result["valid"] > 0, name
        assert result["best_kernel_us"] > 0
        rows = read_json(run.path / "tuners" / name / "trials.json")
        assert [r["trial"] for r in rows] == [1, 2, 3, 4]
        assert all(r["status"] in ("ok", "wrong", "failed") for r in rows)
        assert (run.path / "tuners" / name / "database_tuning_record.json").exists()
    assert summary["best_kernel_us"] == min(r["best_kernel_us"] for r in summary["runs"].values())


def test_the_bars_move_with_each_candidate_and_say_when_they_wait_on_a_round(tuned):
    """One round of 4 here: the bar steps 1, 2, 3, 4 within it, then says it waits."""
    _, _, console = tuned
    for name in metaschedule.RUNS:
        line = rf"^metaschedule {name}: (\d+)/4 (?:.*; )?([a-z][a-z ]+round)$"
        steps = re.findall(line, console, re.M)
        assert [int(done) for done, _ in steps][:4] == [1, 2, 3, 4], console
        assert {doing for _, doing in steps} == {"measuring its round", "waiting on its next round"}


def test_tuned_schedule_applied_back_matches_the_reference(tuned):
    _, arm, _ = tuned
    vm = relax.VirtualMachine(build(WINDOW3, arm, make_target("llvm")), tvm.cpu())
    x = random_input(WINDOW3, 7)
    for got, want in zip(outputs_of(vm["main"](tvm.runtime.tensor(x))), reference(WINDOW3, x)):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


@pytest.mark.slow
def test_resume_does_not_measure_again(tuned):
    run, _, _ = tuned
    path = run.path / "tuners" / "ms-space" / "trials.json"
    before = path.read_text()
    metaschedule.tune_run(run, _plan(BUDGET), _quiet())
    assert path.read_text() == before


class BrokenModule(ms_bridge.ScheduledModule):
    """Every candidate fails to build (importable by the builder processes)."""

    def apply(self, func, target):
        raise tvm.error.InternalError("injected build failure")


def test_a_run_that_measured_nothing_fails_loudly(tmp_path, monkeypatch):
    monkeypatch.setattr(ms_bridge, "ScheduledModule", BrokenModule)
    monkeypatch.setattr(metaschedule, "RUNS", ("ms-space",))
    with pytest.raises(TuningFailed, match="measured no valid candidate"):
        metaschedule.tune_run(_run(tmp_path / "run"), _plan(3), _quiet())


def test_default_cuda_space_fails_only_through_its_unroll_rule():
    """ms-default's unroll pragma around a cross-thread reduction fails LowerThreadAllreduce."""
    default = default_space_outcomes(WINDOW3.replace(prelude=True), samples=24)
    failures = {k: v for k, v in default.items() if not k.endswith(": built")}
    assert failures and all(
        k.startswith("cross-thread reduction") and "load_remap_" in k for k in failures
    )
    fixed = default_space_outcomes(
        WINDOW3.replace(prelude=True), ("ParallelizeVectorizeUnroll",), samples=24
    )
    assert all(k.endswith(": built") for k in fixed)


def test_applied_schedule_is_what_meta_schedule_apply_database_gives(tuned):
    """The arm's hook puts in exactly what MetaScheduleApplyDatabase takes from the database."""
    from pool_fusion_tuning.baselines.arms import tuned_task_arm
    from pool_fusion_tuning.baselines.pipeline import fused_pool_function, fused_stage

    run, arm, _ = tuned
    source = read_json(run.path / "tuners" / "metaschedule" / "summary.json")
    target = make_target("llvm")
    mod = fused_stage(WINDOW3, tuned_task_arm(), target)
    gv, func = fused_pool_function(mod)
    work_dir = str(run.path / "tuners" / source["source"])
    with metaschedule._ms_target(TargetSpec("llvm")), tvm.transform.PassContext(opt_level=3):
        applied = relax.transform.MetaScheduleApplyDatabase(work_dir=work_dir)(
            tvm.IRModule({gv: func.with_attr("global_symbol", "main")})
        )
    ours = arm.schedule.apply(func, target)
    tvm.ir.assert_structural_equal(applied[gv.name_hint].body, ours.body)


def test_two_tunes_in_one_process_with_an_unnamed_handler_attached(tmp_path, capfd):
    """Unnamed handlers on MetaSchedule's logger are left alone; its logs go to the run folder."""
    import io
    import logging

    logger = logging.getLogger("tvm.s_tir.meta_schedule")
    unnamed = logging.StreamHandler(io.StringIO())  # as pytest's LogCaptureHandler is
    assert unnamed.get_name() is None
    logger.addHandler(unnamed)
    try:
        for index in range(2):
            directory = tmp_path / f"tune{index}"
            directory.mkdir()
            summary = metaschedule.tune_one(
                "ms-space", directory, WINDOW3, TargetSpec("llvm"), 2, OPTIONS
            )
            assert summary["trials"] == 2
            log = (directory / "tuning.log").read_text()
            assert 'Initializing Task #0: "main"' in log and "TaskScheduler picks" in log
        assert unnamed in logger.handlers and len(logger.handlers) == 1
    finally:
        logger.removeHandler(unnamed)
    assert "Task" not in capfd.readouterr().out


def test_every_template_design_replays_from_its_trace_and_builds_right():
    """ms-space's designs on a stride-1 kernel replay from their stored traces, right on llvm."""
    from tvm import s_tir

    from pool_fusion_tuning.tuning.candidates.kernel import kernel_module
    from pool_fusion_tuning.tuning.candidates.kernel_check import check_and_time
    from pool_fusion_tuning.tuning.candidates.task import PoolKernel
    from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol
    from pool_fusion_tuning.tuning.tuners.metaschedule.design_space import (
        STRUCTURES,
        template_space,
    )

    case = WINDOW3.replace(height=12, width=12, window=2, tail=2)
    quick = KernelProtocol(number=1, repeat=1, min_repeat_ms=0, checks=1)
    for kind, spec in (("cuda", TargetSpec("cuda")), ("llvm", TargetSpec("llvm"))):
        task = PoolKernel.of(case, spec, whole=True)
        module = kernel_module(task.function(spec))
        designs = template_space(kind)(s_tir.Schedule(module, seed=1))
        strided = [s for s in STRUCTURES[kind] if s.get("thread_axis") == "inner"]
        assert len(designs) == 2 * len(STRUCTURES[kind]) + (len(strided) if kind == "cuda" else 0)
        for design in designs:
            replayed = s_tir.Schedule(module)
            s_tir.schedule.Trace.apply_json_to_schedule(design.trace.as_json(), replayed)
            tvm.ir.assert_structural_equal(replayed.mod, design.mod)
            if kind == "llvm":
                scheduled = design.mod["main"].with_attr("tirx.is_scheduled", True)
                built = tvm.compile(kernel_module(scheduled), target=make_target("llvm")).mod
                device = tvm.cpu(0)
                outcome = check_and_time(built, device, task, quick, [task.upload(0, device)])
                assert outcome["status"] == "ok", (design.trace, outcome)
