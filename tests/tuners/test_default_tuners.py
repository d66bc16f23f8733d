"""A run naming no tuner: on CUDA also `optuna-one-kernel`, at its share of --budget."""

import pytest

from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.cli import run as run_module
from pool_fusion_tuning.tuning.cli.choices import run_tuners
from pool_fusion_tuning.tuning.cli.options import parser
from pool_fusion_tuning.tuning.cli.run_options import refuse_changes, stored_options
from pool_fusion_tuning.tuning.tuners.optuna import one_kernel_budget
from pool_fusion_tuning.tuning.tuners.registry import TUNERS

BOTH = ["optuna", "metaschedule"]
SMALL = "--processes 1 --blocks 1 --case channels=2 height=12 width=12 branches=2".split()


def test_the_default_tuners_depend_on_the_target_and_the_whole_graph_takes_a_share():
    assert run_tuners(None, 500, "llvm") == BOTH
    assert run_tuners(None, 500, "cuda") == [*BOTH, "optuna-one-kernel"]
    assert run_tuners(None, 0, "cuda") == [] and run_tuners("optuna", 500, "cuda") == ["optuna"]
    budgets = (500, 200, 100, 40, 20, 1, 0)
    assert [one_kernel_budget(b) for b in budgets] == [125, 50, 40, 40, 20, 1, 0]
    assert (
        "a quarter of it (rounded down), at least 40" in TUNERS["optuna-one-kernel"].budget_counts
    )
    assert "BUDGET//4 trials (at least 40" in " ".join(parser("tune").format_help().split())


def _start(tmp_path, *argv) -> dict:
    args = parser("tune").parse_args([*argv, *SMALL, "--out", str(tmp_path / "run")])
    return run_module.start_run(args, list(argv)).meta


def test_a_new_run_on_llvm_keeps_its_two_tuners_and_on_cuda_adds_the_whole_graph_s(
    tmp_path, monkeypatch
):
    assert _start(tmp_path / "llvm", "--target", "llvm", "--budget", "8")["tuners"] == BOTH
    cuda = TargetSpec("cuda", "sm_90", "H200 sm_90")
    monkeypatch.setattr(run_module, "resolve_target", lambda kind, say: cuda)
    monkeypatch.setattr(run_module, "save_environment", lambda run, target: None)
    meta = _start(tmp_path / "cuda", "--budget", "8")
    assert meta["tuners"] == [*BOTH, "optuna-one-kernel"] and "one-kernel" in meta["arm_names"]
    with pytest.raises(UsageError, match="unknown tuner 'nope'"):  # checked first, as ever
        _start(tmp_path / "bad", "--tuners", "nope")


def test_a_run_stored_before_the_default_changed_resumes_as_it_was_started(tmp_path):
    meta = {
        "budget": 500,
        "tuners": BOTH,
        "arm_names": ["on", "one-kernel"],
        "protocol": {"trials": 3, "blocks": None},
        "options": {},
    }
    assert stored_options(meta)["tuners"] == BOTH
    refuse_changes({"tuners": None, "budget": None}, meta, tmp_path)  # left out: the run's own
    refuse_changes({"tuners": BOTH}, meta, tmp_path)
    with pytest.raises(UsageError, match="--tuners optuna,metaschedule,optuna-one-kernel differs"):
        refuse_changes({"tuners": run_tuners(None, 500, "cuda")}, meta, tmp_path)
