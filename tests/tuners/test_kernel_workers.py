"""A network kernel's shared Optuna study: `tune model --storage` joined by a `tune worker`
rebuilding the kernel from the study, one budget for both, one-line refusals."""

import contextlib
import io
import json
import shutil
import subprocess
import threading
import time
from concurrent.futures import Future

import optuna
import pytest
from conftest import ROOT, TUNE, read_json, tuners_only

from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.tuners.optuna import search_loop
from pool_fusion_tuning.tuning.tuners.optuna.optuna_study import open_study
from pool_fusion_tuning.tuning.tuners.optuna.record import measurement
from pool_fusion_tuning.tuning.tuners.optuna.samplers import make_sampler
from pool_fusion_tuning.tuning.tuners.registry import TUNERS
from pool_fusion_tuning.tuning.tuners.space import Space

pytestmark = pytest.mark.torch

MODEL = f"{ROOT / 'tests' / 'baselines' / 'models' / 'whole_mean.py'}:make"
QUICK = [
    *"--target llvm --processes 1 --blocks 1 --number 1 --repeat 1 --min-repeat-ms 0".split(),
    *"--warmup-s 0 --peers none --rules default".split(),
]
BUDGET, SHARE = 4, 2  # the kernel's budget, and the worker's trials of it


def _worker(url: str, name: str, *extra: str) -> subprocess.CompletedProcess:
    command = [*TUNE, "worker", "--storage", url, "--study", name, "--target", "llvm", *extra]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The main's search starts once a worker has joined and measured its share."""
    folder = tmp_path_factory.mktemp("shared")
    url, out = f"sqlite:///{folder / 'studies.db'}", folder / "run"
    joined = {}
    search = search_loop.OptunaSearch.run

    def after_a_worker(self, budget, own=False, cap=None):
        if not own and not joined:
            joined["name"] = self.study.study_name
            joined["worker"] = _worker(url, joined["name"], "--budget", str(SHARE))
        return search(self, budget, own, cap)

    console = io.StringIO()
    with (
        tuners_only(TUNERS["optuna"]),
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stderr(console),
    ):
        patch.setattr(search_loop.OptunaSearch, "run", after_a_worker)
        args = ["model", MODEL, *QUICK, "--tune-top", "1", "--budget", str(BUDGET)]
        code = main([*args, "--storage", url, "--out", str(out)])
    assert code == 0, console.getvalue()[-3000:]
    return url, out, joined, console.getvalue()


def _trials(url: str, name: str) -> list:
    study = optuna.load_study(study_name=name, storage=url)
    return [t for t in study.get_trials(deepcopy=False) if measurement(t)]


@pytest.mark.slow
def test_the_main_and_a_worker_measure_the_kernel_s_budget_together_each_point_once(shared):
    url, out, joined, console = shared
    worker, name = joined["worker"], joined["name"]
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert f"worker measured {SHARE} trials" in worker.stdout
    trials = _trials(url, name)
    assert len(trials) == BUDGET and len({t.user_attrs["key"] for t in trials}) == BUDGET
    # Every valid trial, the worker's too, was checked against the kernel's host reference.
    valid = [t for t in trials if measurement(t)["status"] == "ok"]
    assert valid and all(measurement(t)["max_abs_err"] is not None for t in valid)
    meta = read_json(out / "run.json")
    kernel = json.loads(optuna.load_study(study_name=name, storage=url).user_attrs["identity"])
    assert name == f"{meta['study']}-{kernel['kernel']}" and name.startswith("run-")
    assert f"Optuna study {name} in {url}" in console  # the kernel's progress line
    # The report's tuned figure is the study's best.
    tuned = read_json(out / "report.json")["tuned"]["kernels"][kernel["kernel"]]
    assert tuned["optuna"]["study"] == name and tuned["optuna"]["trials"] == BUDGET
    assert tuned["optuna"]["best_kernel_us"] == min(t.value for t in valid)
    assert "storage" not in json.dumps(meta["settings"])  # where, not what: no setting


@pytest.mark.slow
def test_a_worker_joining_a_study_whose_budget_is_spent_measures_nothing_and_says_why(shared):
    url, _, joined, _ = shared
    worker = _worker(url, joined["name"], "--budget", "2")
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert worker.stdout.strip().endswith(
        "worker measured 0 trials, 0 valid: the study had no room (its budget taken by the "
        "processes measuring it, or every point of its space measured)"
    )
    assert len(_trials(url, joined["name"])) == BUDGET


def _one_line(argv, capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    return line


@pytest.mark.slow
def test_a_worker_given_a_case_for_a_kernel_study_is_refused_in_one_line(shared, capsys):
    url, _, joined, _ = shared
    argv = ["worker", "--storage", url, "--study", joined["name"], "--budget", "1"]
    line = _one_line([*argv, "--target", "llvm", "--case", "channels=2"], capsys)
    assert "holds the network kernel" in line and "give no --case" in line


@pytest.mark.slow
def test_a_worker_on_another_target_than_the_study_s_is_refused(shared, tmp_path, capsys):
    url, _, joined, _ = shared
    copy = tmp_path / "copy.db"
    shutil.copy(url.removeprefix("sqlite:///"), copy)
    study = optuna.load_study(study_name=joined["name"], storage=f"sqlite:///{copy}")
    made = json.loads(study.user_attrs["identity"])
    study.set_user_attr("identity", json.dumps({**made, "target": "cuda", "device": "H200"}))
    argv = ["worker", "--storage", f"sqlite:///{copy}", "--study", joined["name"]]
    line = _one_line([*argv, "--budget", "1", "--target", "llvm"], capsys)
    assert "was made for cuda on H200, and this worker measures on llvm" in line
    assert len(_trials(f"sqlite:///{copy}", joined["name"])) == BUDGET  # nothing measured


@pytest.mark.parametrize(
    "args, says",
    [
        (["--storage", "sqlite:///x.db"], "--storage keeps the Optuna studies of --tune-top"),
        (["--storage-password-env", "PW"], "is the password of --storage; give --storage"),
    ],
)
def test_storage_without_tune_top_is_one_line(args, says, capsys, tmp_path):
    line = _one_line(["model", MODEL, "--target", "llvm", *args, "--out", str(tmp_path)], capsys)
    assert says in line and not (tmp_path / "run.json").exists()


def test_a_storage_that_cannot_be_opened_is_said_before_any_work(capsys, tmp_path):
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"not a database" * 100)
    out = tmp_path / "run"
    argv = ["model", MODEL, "--target", "llvm", "--tune-top", "1"]
    line = _one_line([*argv, "--storage", f"sqlite:///{damaged}", "--out", str(out)], capsys)
    assert f"the Optuna storage {damaged} is damaged" in line and not out.exists()


class _SlowEvaluator:
    """Candidates measured in 20 ms each, two in flight: the searches' trials overlap."""

    workers = 2

    def submit(self, schedule) -> Future:
        from fixtures.killed_search import kernel_us

        done: Future = Future()
        us = kernel_us(schedule)
        record = {"status": "ok", "kernel_us": us, "samples_us": [us] * 3, "timer": "slow"}
        threading.Timer(0.02, done.set_result, (record,)).start()
        return done

    def finish(self, future: Future) -> dict:
        return future.result()


def test_a_main_and_a_worker_searching_at_once_fill_the_study_s_budget_exactly(tmp_path):
    """Every process's trials count to the budget; of two racing for the last, the later yields."""
    from fixtures.killed_search import CASE

    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = Space(CASE, "llvm")

    def search(seed: int) -> search_loop.OptunaSearch:
        study = open_study(url, "kernel", make_sampler("random", seed), {"kernel": "k"})
        return search_loop.OptunaSearch(study, space, _SlowEvaluator(), shared=True)

    raised: list[BaseException] = []

    def searching(search, *args, **named):
        try:
            search.run(*args, **named)
        except BaseException as error:  # said by the test, not lost in its thread
            raised.append(error)

    main_search = search(0)
    threads = [threading.Thread(target=searching, args=(main_search, 10))]
    threads[0].start()
    # The worker joins once the main took its queued points (SQLite has no row lock).
    while len(main_search.mine) < len(space.seeds()) and threads[0].is_alive():
        time.sleep(0.01)
    worker = search(1)
    threads.append(
        threading.Thread(target=searching, args=(worker, 8), kwargs={"own": True, "cap": 10})
    )
    threads[1].start()
    for thread in threads:
        thread.join(timeout=120)
    assert not raised
    measured = main_search.measured()
    assert len(measured) == 10  # not the main's 10 and the worker's 8
    assert main_search.mine and worker.mine and not main_search.mine & worker.mine
    assert main_search.mine | worker.mine == {t.number for t in measured.values()}
