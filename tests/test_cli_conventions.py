"""`tune`'s conventions: a mistyped subcommand, --version, bare `tune` as the study, the old
--trials, a folder per run of a day."""

import contextlib
import datetime
import importlib.metadata
import io
import platform
from pathlib import Path

import pytest
from conftest import ROOT, SMALL, one_line, python_path, python_without_tvm, read_json, tune

from pool_fusion_tuning.tuning.cli.commands import COMMANDS


@pytest.mark.parametrize("word", ["modle", "500", "reprot"])
def test_a_mistyped_subcommand_is_refused_with_the_choices(word):
    done = tune(word, "--budget", "0")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"tune: error: argument command: invalid choice: '{word}'")
    assert "(choose from " in lines[0] and all(f"'{name}'" in lines[0] for name in COMMANDS)
    assert done.stdout == ""


def test_version_says_the_toolkit_s_and_tvm_s():
    done = tune("--version", check_exit=0)
    toolkit = importlib.metadata.version("pool-fusion-tuning")
    tvm = importlib.metadata.version("apache-tvm")
    assert done.stdout == f"tune {toolkit}, TVM {tvm}, Python {platform.python_version()}\n"
    assert done.stderr == ""


def test_version_where_a_distribution_is_not_installed_says_so(monkeypatch):
    from pool_fusion_tuning.tuning.cli import commands

    monkeypatch.setattr(commands, "TOOLKIT", "no-such-distribution-installed")
    monkeypatch.setattr(commands, "TVM", "no-such-tvm-installed")
    line = commands.version()
    assert "(no-such-distribution-installed is not installed)" in line
    assert "TVM unknown (no-such-tvm-installed is not installed)" in line


def test_version_and_a_mistyped_subcommand_need_no_tvm():
    """As `tune report` does: both are read before anything imports TVM."""
    done = python_without_tvm(
        "import sys\nfrom pool_fusion_tuning.tuning.cli.main import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit as stop:\n    assert stop.code == 0\n"
        "assert main(['modle']) == 2 and 'tvm' not in sys.modules\n"
    )
    assert done.stdout.startswith("tune ") and ", TVM " in done.stdout
    assert "invalid choice: 'modle'" in done.stderr


@pytest.mark.parametrize("words", [["--verb"], ["-h"], ["--budget=0", "--verbose"], []])
def test_options_first_are_the_study_s(words):
    """No abbreviation of the study's options is taken for --version; -h is the study's help."""
    from pool_fusion_tuning.tuning.cli.commands import command

    assert command(words) is None


def test_the_study_s_help_lists_every_subcommand_and_version(capsys):
    from pool_fusion_tuning.tuning.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(["-h"])
    text = capsys.readouterr().out
    assert stop.value.code == 0 and "--version" in text
    assert all(f"    tune {name} " in text for name in COMMANDS), text


# ---- --processes, and --trials, its old spelling ----

OLD_SPELLING = "--trials is now --processes"


@pytest.mark.parametrize("command", [[], ["sweep"]], ids=["tune", "tune sweep"])
def test_the_old_spelling_is_taken_as_processes_with_one_line(command, tmp_path, monkeypatch):
    """Its value reaches --processes' check; the line names the new option, once."""
    from pool_fusion_tuning.tuning.cli.main import main

    monkeypatch.chdir(tmp_path)
    args = [*command, "--target", "llvm", "--trials", "0", "--trials", "0"]
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(args) == 2
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 2 and OLD_SPELLING in lines[0] and "not tuning trials" in lines[0]
    assert "--processes must be between 1 and 1000, got 0" in lines[1], lines
    assert list(tmp_path.iterdir()) == []


# ---- a second run of a day ----

# One arm, one timing process of one block, a small graph: the quickest whole run.
ONE_ARM = [*SMALL, "--budget", "0", "--arms", "off"]


@pytest.fixture(scope="module")
def second_run(tmp_path_factory):
    """`tune --trials 1` beside an earlier run of today: (folder, earlier run's, outcome)."""
    cwd = tmp_path_factory.mktemp("day")
    earlier = cwd / "runs" / f"{datetime.date.today()}-llvm"
    earlier.mkdir(parents=True)
    (earlier / "run.json").write_text('{"earlier": true}')
    args = ["--trials" if a == "--processes" else a for a in ONE_ARM]
    assert args[args.index("--trials") + 1] == "1" and "--processes" not in args
    done = tune(*args, cwd=cwd, env={"PYTHONPATH": python_path(ROOT)})
    return cwd, earlier, done


def test_a_second_run_of_a_day_goes_to_a_new_folder_and_says_which(second_run):
    cwd, earlier, done = second_run
    assert done.returncode == 0, done.stderr[-3000:]
    new = Path("runs") / f"{earlier.name}-2"
    lines = done.stderr.splitlines()
    assert f"run folder: {new}" in lines, done.stderr
    assert sorted(p.name for p in earlier.iterdir()) == ["run.json"]
    assert (earlier / "run.json").read_text() == '{"earlier": true}'
    meta = read_json(cwd / new / "run.json")
    assert meta["protocol"]["trials"] == 1  # --trials 1 taken: the default is 3
    assert [line for line in lines if OLD_SPELLING in line] == [lines[0]]
    assert (cwd / new / "report.md").is_file()


def test_an_out_that_holds_a_run_names_both_ways_on(second_run, capsys):
    from pool_fusion_tuning.tuning.cli.main import main

    cwd, earlier, _ = second_run
    out = cwd / "runs" / f"{earlier.name}-2"
    before = sorted(p.name for p in out.iterdir())
    code = main([*ONE_ARM, "--out", str(out)])
    one_line(capsys, code, f"{out} already holds a run", f"--resume {out}", "--out NEWDIR")
    assert sorted(p.name for p in out.iterdir()) == before


def test_a_resume_takes_the_old_spelling_as_processes(second_run, capsys):
    from pool_fusion_tuning.tuning.cli.main import main

    cwd, earlier, _ = second_run
    code = main(["--resume", str(cwd / "runs" / f"{earlier.name}-2"), "--trials", "5"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 2 and OLD_SPELLING in lines[0], lines
    assert "--processes 5 differs from the run's (1)" in lines[1]


def test_the_default_folder_is_the_first_of_the_day_not_taken(tmp_path):
    from pool_fusion_tuning.tuning.cli.run import new_default_folder

    first = tmp_path / f"{datetime.date.today()}-cuda"
    assert new_default_folder("cuda", tmp_path) == first
    first.mkdir()
    (tmp_path / f"{first.name}-2").write_text("a file takes the name too")
    (tmp_path / f"{first.name}-4").mkdir()
    assert new_default_folder("cuda", tmp_path) == tmp_path / f"{first.name}-3"
    assert new_default_folder("llvm", tmp_path) == tmp_path / f"{datetime.date.today()}-llvm"
