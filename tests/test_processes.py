"""Killing the main process leaves no child alive; workers stop with their run; Ctrl-C prints
one line naming the resume; a second writer of a run folder is refused."""

import contextlib
import os
import re
import signal
import subprocess
import time

import optuna
import psutil
import pytest
from conftest import ROOT, SMALL, TUNE, assert_all_gone, read_json

from pool_fusion_tuning.reports.stats.cpu_noise import CPU_NOTE
from pool_fusion_tuning.tuning.base.faults import INTERRUPT_AFTER_WRITE
from pool_fusion_tuning.tuning.tuners.optuna.record import measurement
from pool_fusion_tuning.tuning.tuners.optuna.storages import storage_for


def _as_in_a_terminal() -> None:
    """Before exec: SIGINT back to default (a background job inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def start(tmp_path):
    """Start `tune` in a session of its own; whatever it started is killed after the test."""
    started, seen = [], []

    def run(*args, env=None):
        stderr = open(tmp_path / f"stderr{len(started)}.txt", "w+")
        process = subprocess.Popen(
            [*TUNE, *args, *SMALL],
            cwd=ROOT,
            env=None if env is None else {**os.environ, **env},
            preexec_fn=_as_in_a_terminal,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
        )
        process.stderr_file, process.seen = stderr, seen
        started.append(process)
        return process

    yield run
    for child in seen:
        with contextlib.suppress(psutil.Error):
            child.kill()
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stderr_file.close()


def _stderr(process) -> str:
    process.wait(timeout=60)
    process.stderr_file.seek(0)
    return process.stderr_file.read()


def _measured(url) -> int:
    try:
        study = optuna.load_study(study_name="fused-pool", storage=storage_for(None, url))
    except Exception:  # not created yet
        return 0
    return sum(1 for t in study.get_trials(deepcopy=False) if measurement(t))


def _wait_for(condition, process, timeout=300):
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, _stderr(process)[-3000:]
        assert time.monotonic() < deadline, "the run never reached the point to kill it at"
        time.sleep(0.3)


def _descendants(process) -> list:
    found = psutil.Process(process.pid).children(recursive=True)
    process.seen.extend(found)
    return found


def _workers(process) -> list:
    """The run's worker processes alive now."""
    found = []
    for child in _descendants(process):
        with contextlib.suppress(psutil.Error):
            if "worker" in child.cmdline():
                found.append(child)
    return found


def _spawned(process, since: float = 0) -> int:
    """How many multiprocessing children run, of those started after `since` (time.time())."""
    found = 0
    for child in _descendants(process):
        with contextlib.suppress(psutil.Error):
            found += "spawn_main" in " ".join(child.cmdline()) and child.create_time() >= since
    return found


def _metaschedule_measuring(process, out) -> bool:
    """MetaSchedule's first batch is under way (its log says so), so its children run."""
    log = out / "tuners" / "ms-default" / "tuning.log"
    if not log.exists() or "to builder" not in log.read_text(errors="replace"):
        return False
    sent = log.stat().st_mtime - 1
    return _spawned(process, since=sent) >= 3  # two builders (at least), one measuring process


BOTH_TUNERS = ["--tuners", "optuna,metaschedule"]


@pytest.mark.slow
def test_a_second_writer_is_refused_and_a_killed_main_process_leaves_no_child(tmp_path, start):
    """Both tuners' children and the resource tracker die with the main process."""
    out = tmp_path / "run"
    url = f"sqlite:///{out / 'tuners' / 'optuna' / 'study.db'}"
    process = start("--budget", "40", *BOTH_TUNERS, "--out", str(out))
    _wait_for(lambda: _measured(url) >= 1, process)
    second = subprocess.run(
        [*TUNE, "--resume", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert second.returncode == 2 and second.stderr.strip().splitlines() == [
        f"tune: error: {out} is in use by another tune (process {process.pid}); wait for it to "
        f"end, or stop it (kill {process.pid}) and run the command again"
    ]
    assert process.poll() is None  # the first writer goes on
    _wait_for(lambda: _metaschedule_measuring(process, out), process)
    children = _descendants(process)
    assert len(children) >= 4  # the builder pool, the measuring process, the resource tracker
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert_all_gone(children)


@pytest.mark.slow
def test_workers_stop_when_their_run_is_killed(tmp_path, start):
    out = tmp_path / "run"
    url = f"journal://{out / 'tuners' / 'optuna' / 'study.journal'}"
    process = start("--budget", "40", "--tuners", "optuna", "--workers", "2", "--out", str(out))
    # Both workers up (the second may start after the first has measured, on a busy machine).
    _wait_for(lambda: _measured(url) >= 1 and len(_workers(process)) == 2, process)
    children = _descendants(process)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert_all_gone(children)
    measured = _measured(url)
    time.sleep(2)
    assert _measured(url) == measured < 40  # nobody measures into the study any more


# A builder pool given a long task, its parent exiting while the pool still starts.
STARTS_A_POOL_AND_EXITS = """
import os, time
from pool_fusion_tuning.tuning.base.children import process_pool
pool = process_pool(1)
pool.submit(time.sleep, 600)
print(*pool._processes, flush=True)
os._exit(0)
"""


def test_a_child_that_starts_after_its_parent_died_exits():
    done = subprocess.run(
        [*TUNE[:1], "-c", STARTS_A_POOL_AND_EXITS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    children = [psutil.Process(int(pid)) for pid in done.stdout.split()]
    assert children
    assert_all_gone(children)


def _tuned(out) -> bool:
    """The tuners are done (run.json has their wall time); the trial processes wait."""
    with contextlib.suppress(FileNotFoundError, ValueError):
        return "tuning" in read_json(out / "run.json").get("phase_wall_s", {})
    return False


@pytest.mark.slow
def test_the_main_process_killed_alone_leaves_no_trial_process(tmp_path, start):
    out = tmp_path / "run"
    process = start("--budget", "0", "--out", str(out))
    _wait_for(lambda: _tuned(out) and _spawned(process) > 0, process)
    children = _descendants(process)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert_all_gone(children)


def _records(url) -> dict:
    study = optuna.load_study(study_name="fused-pool", storage=storage_for(None, url))
    return {t.number: measurement(t) for t in study.get_trials(deepcopy=False) if measurement(t)}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_prints_one_line_naming_the_run_and_its_resume(tmp_path, start, how):
    """Ctrl-C mid-search, resumed keeping every trial; SIGTERM with both tuners at work."""
    out = tmp_path / "run"
    url = f"sqlite:///{out / 'tuners' / 'optuna' / 'study.db'}"
    if how == "ctrl-c":
        # SIGINT to the process group, as a terminal, right after the first trial's tell
        # (waiting for a told trial raced the whole small search).
        interrupt = {INTERRUPT_AFTER_WRITE: "2"}
        process = start("--budget", "24", "--tuners", "optuna", "--out", str(out), env=interrupt)
        while process.poll() is None:  # its children, seen while they live
            _descendants(process)
            time.sleep(0.3)
        children = process.seen
    else:
        process = start("--budget", "40", *BOTH_TUNERS, "--out", str(out))
        _wait_for(lambda: _metaschedule_measuring(process, out), process)
        children = _descendants(process)
        os.kill(process.pid, signal.SIGTERM)  # the main process alone
    stderr = _stderr(process)
    assert process.returncode == 130, stderr[-3000:]
    note, first, *finished, last = stderr.strip().splitlines()  # a CPU run's note first
    assert note == CPU_NOTE and first == f"run folder: {out}" and "Traceback" not in stderr, stderr
    assert last == (
        f"tune: interrupted; everything measured so far is kept in {out}. "
        f"Finish with: tune --resume {out}"
    )
    # Before it: only ended phases' summary lines and Optuna's note on its small space.
    phase_ended = (
        r"(optuna|metaschedule ms-(default|space)): .* \(\d+ s\)"
        r"|optuna: the space holds \d+ distinct points, so \d+ of the \d+ budget will be measured"
    )
    assert all(re.fullmatch(phase_ended, line) for line in finished), stderr
    assert_all_gone(children)
    if how == "ctrl-c":
        before = _records(url)
        resumed = subprocess.run(
            [*TUNE, "--resume", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600
        )
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        after = _records(url)
        assert len(after) == 24 and all(after[n] == r for n, r in before.items())
