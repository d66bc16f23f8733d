"""`tune` as command lines go: a mistyped subcommand is refused with the names to choose from,
`tune --version` says the toolkit's and TVM's versions, the bare `tune [options]` stays the
study; --processes counts timing processes (--trials, read as tuning trials, still works with a
line saying so). Run as a user runs them,
through the `tune` command, or in process where only the parsing is checked."""

import contextlib
import importlib.metadata
import io
import platform

import pytest
from conftest import tune

from tuning.cli.commands import COMMANDS


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
    from tuning.cli import commands

    monkeypatch.setattr(commands, "TOOLKIT", "no-such-distribution-installed")
    monkeypatch.setattr(commands, "TVM", "no-such-tvm-installed")
    line = commands.version()
    assert "(no-such-distribution-installed is not installed)" in line
    assert "TVM unknown (no-such-tvm-installed is not installed)" in line


@pytest.mark.parametrize("words", [["--verb"], ["-h"], ["--budget=0", "--verbose"], []])
def test_options_first_are_the_study_s(words):
    """No abbreviation of the study's options is taken for --version; -h is the study's help."""
    from tuning.cli.commands import command

    assert command(words) is None


def test_the_study_s_help_lists_every_subcommand_and_version(capsys):
    from tuning.cli.main import main

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
    from tuning.cli.main import main

    monkeypatch.chdir(tmp_path)
    args = [*command, "--target", "llvm", "--trials", "0", "--trials", "0"]
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(args) == 2
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 2 and OLD_SPELLING in lines[0] and "not tuning trials" in lines[0]
    assert "--processes must be between 1 and 1000, got 0" in lines[1], lines
    assert list(tmp_path.iterdir()) == []
