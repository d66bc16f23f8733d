"""Resources: a disk that fills up (a real tmpfs where the machine lets the test mount one, and
a simulated ENOSPC everywhere), and Cases too large for the machine."""

import errno
import os
import subprocess
import sys
import time

import optuna
import pytest
from conftest import ROOT, SMALL, TUNE, tune

from pool_fusion_tuning.baselines.case import Case, CaseError
from pool_fusion_tuning.reports.stats.cpu_noise import CPU_NOTE
from pool_fusion_tuning.runfolder import store
from pool_fusion_tuning.tuning.limits import check_case_fits, slow_case_note
from pool_fusion_tuning.tuning.tuners.optuna.record import measurement
from pool_fusion_tuning.tuning.tuners.optuna.storages import storage_for

# As a user runs it, with stdout to a file or a pipe: Python buffers it.
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(
            "cannot mount a tmpfs here (needs root); the simulated ENOSPC test covers the writes"
        )
    yield disk
    subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def _fill(disk):
    """Fill the disk to the last byte."""
    with open(disk / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * (1 << 20))
                handle.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC
    with open(disk / "filler", "ab", buffering=0) as handle:  # the last partial block
        try:
            while True:
                handle.write(b"\0" * 512)
        except OSError:
            pass


def _records(url) -> dict:
    try:
        study = optuna.load_study(study_name="fused-pool", storage=storage_for(None, url))
    except Exception:  # not created yet
        return {}
    return {t.number: measurement(t) for t in study.get_trials(deepcopy=False) if measurement(t)}


@pytest.mark.slow
def test_a_disk_filled_mid_run_gives_one_line_and_the_run_resumes(small_disk):
    out = small_disk / "run"
    url = f"sqlite:///{out / 'tuners' / 'optuna' / 'study.db'}"
    process = subprocess.Popen(
        [*TUNE, "--budget", "6", "--tuners", "optuna", "--out", str(out), *SMALL],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=BUFFERED,
    )
    try:
        while len(_records(url)) < 2 and process.poll() is None:
            time.sleep(0.2)
        _fill(small_disk)
        _, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    note, *lines = err.strip().splitlines()  # a CPU run says first that it is a smoke test
    assert process.returncode == 2 and "Traceback" not in err, err[-3000:]
    assert note == CPU_NOTE and lines[0] == f"run folder: {out}" and len(lines) == 2, err[-3000:]
    assert lines[1].startswith("tune: error: the disk is full") and f"--resume {out}" in lines[1]
    assert not [p for p in out.rglob("*.tmp")]  # no half-written file blocks the resume
    assert isinstance(store.read_json(out / "kernels.json"), dict)  # each measurement's write
    assert (out / "details.log").exists()  # where the libraries' output went, full disk or not
    before = _records(url)
    (small_disk / "filler").unlink()
    tune("--resume", str(out), check_exit=0)
    after = _records(url)
    assert len(after) == 6 and all(after[n] == r for n, r in before.items())


# A library's buffered output with details.log on /dev/full, then the run's error.
FULL_DETAILS = """
import sys
from pool_fusion_tuning.tuning.base.progress import Progress, details_to
try:
    with details_to(sys.argv[1], Progress()):
        print("a library's output", end="")
        raise OSError(28, "No space left on device")
except OSError as error:
    print(f"tune: error: {error}", file=sys.stderr)
"""


def test_details_log_on_a_full_disk_gives_the_console_back_for_the_error(small_disk):
    """The log on a full disk (a regular file: /dev/full is a device, which the log refuses)."""
    _fill(small_disk)
    done = subprocess.run(
        [sys.executable, "-c", FULL_DETAILS, str(small_disk / "details.log")],
        cwd=ROOT,
        env=BUFFERED,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == "tune: error: [Errno 28] No space left on device\n"


def test_a_full_disk_at_the_start_leaves_nothing_that_blocks_the_same_command(small_disk):
    _fill(small_disk)
    out = small_disk / "run"
    done = tune("--budget", "0", "--out", str(out), *SMALL)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"tune: error: cannot write the run folder {out}: No space left on device"
    ]
    assert not out.exists()


def test_a_write_that_fails_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    store.write_json(path, {"kept": True})

    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.os, "fsync", disk_full)
    with pytest.raises(OSError):
        store.write_json(path, {"kept": False})
    assert store.read_json(path) == {"kept": True}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


@pytest.mark.parametrize(
    "case, available, message",
    [
        (Case(channels=100000, height=4096, width=4096), 10**12, "TVM indexes with int32"),
        (Case(channels=200, height=1024, width=1024), 32 * 10**9, "this machine has 32.0 GB"),
    ],
)
def test_a_case_too_large_is_refused_with_its_size_and_the_limit(case, available, message):
    with pytest.raises(CaseError, match=message):
        check_case_fits(case, available=available)
    check_case_fits(Case(branches=50), available=32 * 10**9)  # large, but it fits


def test_a_case_that_takes_long_says_so():
    assert "2,600 operators" in slow_case_note(Case(branches=50))
    assert slow_case_note(Case()) is None
