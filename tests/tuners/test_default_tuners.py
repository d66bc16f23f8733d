"""The tuners of a run that names none: on llvm `optuna` and `metaschedule` as ever; on CUDA also
`optuna-one-kernel` (the whole graph's kernel, a GPU arm), at its share of --budget; a run stored
before it was a default resumes as it was started."""

import pytest

from tuning.cli import run as run_module
from tuning.cli.choices import run_tuners
from tuning.cli.options import parser
from tuning.cli.run_options import refuse_changes, stored_options
from tuning.errors import UsageError
from tuning.tuners.optuna import one_kernel_budget
from tuning.tuners.registry import TUNERS

SMALL = "--trials 1 --blocks 1 --case channels=2 height=12 width=12 branches=2".split()


def test_the_default_tuners_depend_on_the_target():
    assert run_tuners(None, 500, "llvm") == ["optuna", "metaschedule"]
    assert run_tuners(None, 500, "cuda") == ["optuna", "metaschedule", "optuna-one-kernel"]
    assert run_tuners(None, 0, "cuda") == []  # --budget 0: the arms only
    assert run_tuners("optuna", 500, "cuda") == ["optuna"]  # a named list is the run's


def test_the_whole_graph_s_search_takes_a_quarter_of_the_budget_and_at_least_the_sweep_s():
    budgets = (500, 200, 100, 40, 20, 1, 0)
    assert [one_kernel_budget(b) for b in budgets] == [125, 50, 40, 40, 20, 1, 0]
    said = TUNERS["optuna-one-kernel"].budget_counts
    assert "a quarter of it (rounded down), at least 40" in said
    text = parser("tune").format_help()
    assert "optuna-one-kernel" in text and "BUDGET//4" in " ".join(text.split())


def _start(tmp_path, *argv):
    args = parser("tune").parse_args([*argv, *SMALL, "--out", str(tmp_path / "run")])
    return run_module.start_run(args, list(argv)).meta


def test_a_new_run_on_llvm_keeps_its_two_default_tuners(tmp_path):
    meta = _start(tmp_path, "--target", "llvm", "--budget", "8")
    assert meta["tuners"] == ["optuna", "metaschedule"]


def test_a_new_run_on_cuda_adds_the_whole_graph_s_tuner(tmp_path, monkeypatch, capsys):
    cuda = {"kind": "cuda", "arch": "sm_90"}
    monkeypatch.setattr(run_module, "resolve_target", lambda kind, say: (cuda, "H200 sm_90"))
    monkeypatch.setattr(run_module, "save_environment", lambda run, target: None)
    meta = _start(tmp_path, "--budget", "8")
    assert meta["tuners"] == ["optuna", "metaschedule", "optuna-one-kernel"]
    assert "one-kernel" in meta["arm_names"]  # the arm it is held against
    # a bad --tuners is refused before the target is resolved, as ever
    with pytest.raises(UsageError, match="unknown tuner 'nope'"):
        _start(tmp_path, "--budget", "8", "--tuners", "nope")


def test_a_run_stored_before_the_default_changed_resumes_as_it_was_started(tmp_path):
    meta = {
        "budget": 500,
        "tuners": ["optuna", "metaschedule"],
        "arm_names": ["off", "on", "one-kernel"],
        "protocol": {"trials": 3, "blocks": None},
        "options": {"sampler": "tpe", "seed": 0},
        "identity": {"target": "cuda"},
    }
    assert stored_options(meta)["tuners"] == ["optuna", "metaschedule"]
    refuse_changes({"tuners": None, "budget": None}, meta, tmp_path)  # left out: the run's own
    refuse_changes({"tuners": ["optuna", "metaschedule"]}, meta, tmp_path)
    with pytest.raises(UsageError, match="--tuners optuna,metaschedule,optuna-one-kernel differs"):
        refuse_changes({"tuners": run_tuners(None, 500, "cuda")}, meta, tmp_path)
