"""The console: library and child-process output goes to the run folder's log, progress and
summary lines to the console."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import python_path

from pool_fusion_tuning.runfolder.store import RunError
from pool_fusion_tuning.tuning.base.progress import Progress, details_to

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import os, subprocess, sys
from pool_fusion_tuning.tuning.base.progress import Progress, details_to
progress = Progress(stream=sys.stderr)
with details_to(sys.argv[1], progress):
    os.write(2, b"[C++] Warning: Unknown schedule rule\\n")  # as TVM's logging writes
    print("a library's print")
    subprocess.run([sys.executable, "-c", "import sys; print('child', file=sys.stderr)"])
    progress.step("optuna", 3, 10, "best 2.00 us")
    progress.finish("optuna", "best 2.00 us at trial 3 of 10")
print("after the run")
"""


def test_library_and_child_output_go_to_the_log_and_summaries_to_the_console(tmp_path):
    log = tmp_path / "details.log"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": python_path(ROOT)},
    )
    assert done.stderr.startswith("optuna: best 2.00 us at trial 3 of 10 (")
    assert done.stderr.count("\n") == 1
    assert done.stdout == "after the run\n"  # the descriptors are back
    text = log.read_text()
    for expected in ("Unknown schedule rule", "a library's print", "child"):
        assert expected in text


def test_verbose_leaves_the_console_alone(tmp_path, capfd):
    progress = Progress(verbose=True, stream=sys.stderr)
    with details_to(tmp_path / "details.log", progress):
        os.write(2, b"tvm log line\n")
        progress.say("trial 0: timing block 1/6")
        progress.step("optuna", 10, 10)
    err = capfd.readouterr().err
    assert "tvm log line" in err and "timing block 1/6" in err and "optuna: 10/10" in err
    assert not (tmp_path / "details.log").exists()


def test_details_are_hidden_without_verbose_and_lines_are_not(capsys):
    progress = Progress(stream=sys.stderr)
    progress.say("trial 0: building on")
    progress.step("comparison", 1, 3)
    progress.line("metaschedule: no valid candidate")
    assert capsys.readouterr().err == "metaschedule: no valid candidate\n"


def test_the_log_is_never_written_through_a_planted_link(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    (tmp_path / "details.log").symlink_to(target)
    with pytest.raises(RunError, match="details.log is a symbolic link"):
        with details_to(tmp_path / "details.log", Progress(stream=sys.stderr)):
            pass
    assert target.read_text() == "keep\n"


def test_the_log_is_never_appended_through_a_hard_link(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    os.link(target, tmp_path / "details.log")
    with pytest.raises(RunError, match="details.log has 2 hard links"):
        with details_to(tmp_path / "details.log", Progress(stream=sys.stderr)):
            print("lost")
    assert target.read_text() == "keep\n"
