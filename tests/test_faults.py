"""Hanging or crashing candidates, SIGKILLed runs, corrupt or foreign storage: nothing lost."""

import io
import json
import os
import signal
import subprocess
import sys

import optuna
import pytest
import tvm
from conftest import ROOT, SMALL, WINDOW3, InjectingSpace, read_json, tune, tune_killed_when

from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.template import PoolSchedule
from pool_fusion_tuning.runfolder import store
from pool_fusion_tuning.runfolder.store import Run, RunError
from pool_fusion_tuning.tuning.base.faults import KILL_AFTER_WRITE
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.kernel import fused_function, kernel_module
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol
from pool_fusion_tuning.tuning.tuners.metaschedule import tuner as metaschedule
from pool_fusion_tuning.tuning.tuners.metaschedule.database import open_database
from pool_fusion_tuning.tuning.tuners.metaschedule.tuner import RUNS
from pool_fusion_tuning.tuning.tuners.optuna.record import measurement
from pool_fusion_tuning.tuning.tuners.optuna.samplers import make_sampler
from pool_fusion_tuning.tuning.tuners.optuna.search_loop import OptunaSearch
from pool_fusion_tuning.tuning.tuners.optuna.search_summary import records
from pool_fusion_tuning.tuning.tuners.optuna.storages import storage_for
from pool_fusion_tuning.tuning.tuners.spec import TunerPlan

# A limit shorter than a runner's start: it counts from when the runner is ready.
QUICK = KernelProtocol(number=1, repeat=1, min_repeat_ms=0, checks=1, time_limit_s=2)


class ExternCallFirst(PoolSchedule):
    """A real schedule whose kernel first calls a C function: `abort` or a long `sleep`."""

    call = ("abort",)

    def apply(self, func, target):
        scheduled = super().apply(func, target)
        first = tvm.tirx.Evaluate(tvm.tirx.call_extern("int32", *self.call))
        return scheduled.with_body(tvm.tirx.SeqStmt([first, scheduled.body]))


class Crash(ExternCallFirst):
    call = ("abort",)


class Hang(ExternCallFirst):
    call = ("sleep", 600)


class FaultySpace(InjectingSpace):
    faults = {(2, 1): Crash, (4, 1): Hang}


@pytest.mark.slow
def test_candidates_that_crash_or_hang_are_recorded_and_the_search_goes_on(tmp_path):
    space = FaultySpace(WINDOW3, "llvm")
    study = optuna.create_study(
        storage=storage_for(tmp_path, None), sampler=make_sampler("grid", 0)
    )
    with CandidateEvaluator(WINDOW3, TargetSpec("llvm"), QUICK, workers=2) as evaluator:
        OptunaSearch(study, space, evaluator, batch=6).run(len(space.valid_points()))
        restarts = evaluator.runner.restarts
    rows = records(study)
    reasons = [r.get("reason") for r in rows if r["status"] != "ok"]
    assert reasons.count("runner crashed") == 4 and reasons.count("time limit") == 4
    assert len(rows) == len(space.valid_points()) and restarts == 8
    assert sum(r["status"] == "ok" for r in rows) == len(rows) - 8


def _measured(storage_url, name="fused-pool"):
    """Finished measured trials (a trial's record is written just before it is told)."""
    study = optuna.load_study(study_name=name, storage=storage_url)
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    return {
        t.number: t.value
        for t in study.get_trials(deepcopy=False, states=finished)
        if measurement(t)
    }


@pytest.mark.slow
def test_a_run_killed_mid_search_resumes_with_every_measured_trial(tmp_path):
    out = tmp_path / "run"
    url = f"sqlite:///{out / 'tuners' / 'optuna' / 'study.db'}"
    before = {}

    def six_measured():
        try:
            before.update(_measured(url))
        except Exception:  # the study is not created yet
            pass
        return len(before) >= 6

    tune_killed_when(
        six_measured, "--budget", "20", "--tuners", "optuna", "--out", str(out), *SMALL
    )
    assert 6 <= len(before) < 20, "the run was not killed in the middle of the search"
    tune("--resume", str(out), check_exit=0)
    after = _measured(url)
    assert len(after) == 20  # the space has 24 valid points
    assert all(after[number] == value for number, value in before.items())


def test_corrupt_optuna_storage_is_refused_and_left_alone(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 10)
    done = tune(
        "--budget",
        "2",
        "--tuners",
        "optuna",
        "--storage",
        f"sqlite:///{bad}",
        "--out",
        str(tmp_path / "run"),
        *SMALL,
        check_exit=2,
    )
    assert "Optuna storage" in done.stderr and "it was left as it is" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert bad.read_bytes() == b"this is not a database" * 10
    assert not (tmp_path / "run").exists()  # tried first: the same command works once it is fixed


@pytest.mark.slow
def test_two_runs_given_one_storage_never_share_trials(tmp_path):
    """Two runs sharing a storage tune a study each; the first's trials are left as they were."""
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    kept = {}
    for name in ("a", "b"):
        tune(
            "--budget", "2", "--tuners", "optuna", "--storage", storage,
            "--out", str(tmp_path / name), *SMALL, check_exit=0,
        )  # fmt: skip
        study = read_json(tmp_path / name / "run.json")["options"]["study"]
        kept[study] = _measured(storage, study)
    # The budget counts measured trials; points the template cannot build are pruned trials.
    studies = {s.study_name for s in optuna.get_all_study_summaries(storage)}
    assert len(kept) == 2 and studies == set(kept)
    assert all(len(trials) == 2 for trials in kept.values())
    assert all(_measured(storage, study) == trials for study, trials in kept.items())


def test_corrupt_metaschedule_database_is_refused_and_left_alone(tmp_path):
    run = Run.create(tmp_path / "run", {})
    record = run.tuner_dir("ms-default") / "database_tuning_record.json"
    record.write_text("{ not json\n")  # a whole line, damaged: not a stopped append
    (run.tuner_dir("ms-default") / "database_workload.json").write_text("")
    with pytest.raises(RunError, match="cannot read the MetaSchedule database"):
        plan = TunerPlan(WINDOW3, TargetSpec("llvm"), 2, {}, {})
        metaschedule.tune_run(run, plan, Progress(stream=io.StringIO()))
    assert record.read_text() == "{ not json\n"
    assert not record.with_name(record.name + ".damaged").exists()


def _metaschedule_database(directory, records: int):
    """A database as TVM writes it: the kernel's workload, then `records` tuning records."""
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.s_tir.meta_schedule.database import JSONDatabase, TuningRecord

    _, func = fused_function(WINDOW3, TargetSpec("llvm"))
    directory.mkdir()
    database = JSONDatabase(work_dir=str(directory))
    workload = database.commit_workload(kernel_module(func))
    for index in range(records):
        database.commit_tuning_record(
            TuningRecord(
                tvm.s_tir.Schedule(func).trace,
                workload,
                [1e-6 * (index + 1)],
                make_target("llvm"),
                ArgInfo.from_prim_func(func),
            )
        )


def _cut_last_line(path) -> tuple[bytes, bytes]:
    """Cut the file's last line in half, as a kill mid-append does: (whole lines, cut file)."""
    *whole, last = path.read_bytes().splitlines(keepends=True)
    cut = b"".join(whole) + last[: len(last) // 2]
    path.write_bytes(cut)
    return b"".join(whole), cut


def test_a_metaschedule_database_cut_short_mid_line_is_repaired_by_the_resume(tmp_path):
    """A half last line from a killed append: dropped (original kept), said in one line."""
    directory = tmp_path / "ms-space"
    _metaschedule_database(directory, records=3)
    store.write_json(
        directory / "trials.json",
        [{"trial": n, "status": "failed", "reason": "build error"} for n in (1, 2)],
    )
    record = directory / "database_tuning_record.json"
    whole, cut = _cut_last_line(record)
    said = []
    summary = metaschedule.tune_one(
        "ms-space",
        directory,
        WINDOW3,
        TargetSpec("llvm"),
        2,
        {},
        say=said.append,
    )
    assert said == [
        f"{record}: dropped its last line, cut short when the run stopped (the "
        "original is kept as database_tuning_record.json.damaged)"
    ]
    assert record.with_name(record.name + ".damaged").read_bytes() == cut
    assert record.read_bytes() == whole and summary["trials"] == 2
    database = tvm.s_tir.meta_schedule.database.JSONDatabase(work_dir=str(directory))
    assert len(database.get_all_tuning_records()) == 2


def test_a_metaschedule_database_the_repair_cannot_mend_is_put_back_as_it_was(tmp_path):
    """A cut workload that records name is refused, both files left byte for byte."""
    directory = tmp_path / "ms-space"
    _metaschedule_database(directory, records=1)
    _, cut = _cut_last_line(directory / "database_workload.json")
    records = (directory / "database_tuning_record.json").read_bytes()
    with pytest.raises(RunError, match="it was left as it is"):
        open_database(directory, say=pytest.fail)
    assert (directory / "database_workload.json").read_bytes() == cut
    assert (directory / "database_tuning_record.json").read_bytes() == records
    assert sorted(p.name for p in directory.iterdir()) == [
        "database_tuning_record.json",
        "database_workload.json",
    ]


@pytest.mark.slow
def test_a_run_killed_mid_metaschedule_resumes_with_every_recorded_trial(tmp_path):
    out = tmp_path / "run"
    runs = out / "tuners"

    def finished() -> list[str]:
        return [name for name in RUNS if (runs / name / "summary.json").exists()]

    # The two runs go side by side and end seconds apart: killed once one of them is done.
    tune_killed_when(
        lambda: len(finished()) == 1,
        *("--budget", "12", "--tuners", "metaschedule", "--out", str(out), *SMALL),
    )
    assert len(finished()) == 1, "the run was not killed between the two runs' ends"
    done = finished()[0]
    before = (runs / done / "trials.json").read_text()
    assert len(json.loads(before)) == 6
    assert not (runs / "metaschedule" / "summary.json").exists()
    tune("--resume", str(out), check_exit=0)
    assert (runs / done / "trials.json").read_text() == before
    summary = read_json(runs / "metaschedule" / "summary.json")
    assert [summary["runs"][name]["trials"] for name in RUNS] == [6, 6]


class KillsItsBuilder(PoolSchedule):
    """The compiler dies with the candidate (a crash inside TVM looks like this)."""

    def apply(self, func, target):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def test_a_candidate_that_kills_its_builder_is_recorded_and_building_goes_on():
    with CandidateEvaluator(WINDOW3, TargetSpec("llvm"), QUICK, workers=2) as evaluator:
        crashed = evaluator.evaluate([KillsItsBuilder()])
        after = evaluator.evaluate([PoolSchedule()])
    assert crashed[0]["status"] == "failed" and crashed[0]["reason"] == "builder crashed"
    assert after[0]["status"] == "ok"


KILLED_SEARCH = [sys.executable, str(ROOT / "tests" / "fixtures" / "killed_search.py")]


def _records(url):
    study = optuna.load_study(study_name="fused-pool", storage=storage_for(None, url))
    trials = study.get_trials(deepcopy=False)
    return {t.number: measurement(t) for t in trials if measurement(t)}, study


@pytest.mark.parametrize("storage, kills", [("sqlite", (1, 2, 3, 4)), ("journal", (1, 2))])
def test_a_kill_after_each_storage_write_of_a_measurement_loses_nothing(tmp_path, storage, kills):
    """Killed after each write of a batch (record, tell, ...), the resume finishes the budget,
    keeps every record, and tells an untold record its own time."""
    budget = 2
    for kill in kills:
        path = tmp_path / f"kill{kill}.{'db' if storage == 'sqlite' else 'journal'}"
        url = f"sqlite:///{path}" if storage == "sqlite" else f"journal://{path}"
        command = [*KILLED_SEARCH, url, str(budget)]
        killed = subprocess.run(
            command,
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, KILL_AFTER_WRITE: str(kill)},
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        before, _ = _records(url)
        assert len(before) == (kill + 1) // 2
        resumed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        after, study = _records(url)
        assert len(after) == budget and all(after[n] == r for n, r in before.items())
        told = {t.number: t.value for t in study.get_trials(deepcopy=False)}
        assert all(told[n] == r["kernel_us"] for n, r in after.items())
        assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))


def test_both_optuna_tuners_in_one_given_storage_keep_their_own_studies(tmp_path):
    """With --storage shared by `optuna` and `optuna-one-kernel`, each tunes its own study."""
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    tune(
        "--budget",
        "3",
        "--tuners",
        "optuna,optuna-one-kernel",
        "--storage",
        storage,
        "--out",
        str(tmp_path / "run"),
        *SMALL,
        check_exit=0,
    )
    studies = {s.study_name for s in optuna.get_all_study_summaries(storage)}
    study = read_json(tmp_path / "run" / "run.json")["options"]["study"]
    assert studies == {study, f"{study}-one-kernel"}
    assert all(len(_measured(storage, name)) == 3 for name in studies)  # the budget, measured
