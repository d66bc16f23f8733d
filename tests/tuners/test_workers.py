"""Several Optuna workers on one study: every trial measured once, the count equal to the budget.

The PostgreSQL test runs where POOL_TUNING_PG_URL names a server (.ci/run starts one)."""

import os
import subprocess
import uuid

import optuna
import pytest
from conftest import ROOT, SMALL, TUNE, tune

from pool_fusion_tuning.tuning.tuners.optuna.optuna_study import STUDY_NAME
from pool_fusion_tuning.tuning.tuners.optuna.record import measurement
from pool_fusion_tuning.tuning.tuners.optuna.storages import storage_for

SMALL_CASE = ["channels=2", "height=12", "width=12", "branches=2"]  # 24 valid CPU points


def _measured(storage, name):
    study = optuna.load_study(study_name=name, storage=storage_for(None, storage))
    return [t for t in study.get_trials(deepcopy=False) if measurement(t)]


def _assert_each_point_once(trials, budget):
    assert len(trials) == budget
    assert len({t.number for t in trials}) == budget
    assert len({t.user_attrs["key"] for t in trials}) == budget  # no point measured twice


@pytest.mark.slow
def test_local_workers_share_the_budget_exactly(tmp_path):
    out = tmp_path / "run"
    tune(
        "--budget",
        "12",
        "--tuners",
        "optuna",
        "--workers",
        "2",
        "--out",
        str(out),
        *SMALL,
        check_exit=0,
    )
    journal = f"journal://{out / 'tuners' / 'optuna' / 'study.journal'}"
    _assert_each_point_once(_measured(journal, STUDY_NAME), 12)


@pytest.mark.slow
@pytest.mark.postgres
def test_two_workers_on_postgresql_measure_each_trial_once():
    url = os.environ["POOL_TUNING_PG_URL"]
    name = f"ci-{uuid.uuid4().hex[:8]}"
    # A worker joins an existing study, made first as `tune --workers` does.
    optuna.create_study(study_name=name, storage=storage_for(None, url))
    command = [
        *TUNE,
        "worker",
        "--storage",
        url,
        "--study",
        name,
        "--budget",
        "5",
        "--target",
        "llvm",
        "--case",
        *SMALL_CASE,
    ]
    workers = [
        subprocess.Popen(
            command + ["--seed", str(i)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=900)
        assert worker.returncode == 0, err[-3000:]
        assert "worker measured 5 trials" in out
    _assert_each_point_once(_measured(url, name), 10)


def test_a_trial_left_running_by_a_dead_worker_is_failed_by_its_stopped_heartbeat(
    tmp_path, monkeypatch
):
    """A worker fails the trials whose heartbeat stopped and leaves live ones."""
    from fixtures.killed_search import CASE, InstantEvaluator

    from pool_fusion_tuning.tuning.tuners.optuna import heartbeat
    from pool_fusion_tuning.tuning.tuners.optuna.optuna_study import open_study
    from pool_fusion_tuning.tuning.tuners.optuna.samplers import make_sampler
    from pool_fusion_tuning.tuning.tuners.optuna.search_loop import OptunaSearch
    from pool_fusion_tuning.tuning.tuners.space import Space

    monkeypatch.setattr(heartbeat, "HEARTBEAT_S", 1)
    monkeypatch.setattr(heartbeat, "GRACE_S", 3)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = Space(CASE, "llvm")

    def study():
        return open_study(url, STUDY_NAME, make_sampler("random", 0), {"case": "x"})

    dead, alive = study(), study()
    stale = dead.ask()
    space.suggest(stale)
    beating = heartbeat.Heartbeat(dead)
    beating.add(stale)
    beating.stop()  # its worker dies: no heartbeat after the first
    live_trial = alive.ask()
    space.suggest(live_trial)
    live = heartbeat.Heartbeat(alive)
    live.add(live_trial)
    try:
        import time

        time.sleep(5)
        OptunaSearch(study(), space, InstantEvaluator(), shared=True).run(1, own=True)
        states = {t.number: t.state for t in study().trials}
    finally:
        live.stop()
    assert states[stale.number] == optuna.trial.TrialState.FAIL
    assert states[live_trial.number] == optuna.trial.TrialState.RUNNING
