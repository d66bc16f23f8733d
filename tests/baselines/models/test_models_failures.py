"""A kernel a rule cannot schedule (a whole mean, apache/tvm#20061) is a finding recorded with
the rule and TVM's message, not a crash; analysis, build and `tune model` go on."""

import json

import numpy as np
import pytest
import tvm
from tvm.s_tir import dlight

from pool_fusion_tuning.baselines.anatomy import cuda_source, kernel_launches
from pool_fusion_tuning.baselines.models.analysis import analyze
from pool_fusion_tuning.baselines.models.build import build_model, lower_model, run_model
from pool_fusion_tuning.baselines.models.eager_check import check_outputs, torch_outputs
from pool_fusion_tuning.baselines.models.failures import failure_lines, tvm_message, upstream_issue
from pool_fusion_tuning.baselines.models.importer import prepare_model
from pool_fusion_tuning.baselines.models.kernels import rule_lists, schedule_kernel
from pool_fusion_tuning.baselines.models.load import load_model
from pool_fusion_tuning.baselines.models.model_spec import ModelOptions, parse_spec
from pool_fusion_tuning.baselines.pipeline import make_target, unscheduled
from tests.conftest import ROOT, tune

pytestmark = pytest.mark.torch

CUDA = make_target("cuda")
SPEC = "tests/baselines/models/whole_mean.py:make"
ISSUE = "apache/tvm#20061"


@pytest.fixture(scope="module")
def whole_mean():
    return prepare_model(SPEC, ModelOptions())


def test_dlight_cannot_schedule_the_whole_tensor_mean(whole_mean):
    """dlight's pass raises as TVM ships it (fails the day TVM fixes it)."""
    mod = unscheduled(whole_mean.mod, CUDA)
    with CUDA, pytest.raises(tvm.error.InternalError) as raised:
        dlight.ApplyDefaultSchedule(*rule_lists(CUDA)["default"])(mod)
    assert upstream_issue(tvm_message(raised.value)) == ISSUE


def test_the_rule_that_raises_is_recorded_and_the_kernel_left_to_the_next(whole_mean):
    """TVM's list: GeneralReduction takes it after Reduction raises; `fixed`: LargeReduction."""
    mean = unscheduled(whole_mean.mod, CUDA)["mean"]
    lists = rule_lists(CUDA)
    scheduled = schedule_kernel(mean, CUDA, lists["default"])
    failure = scheduled.failure
    assert failure is not None
    assert (failure.rule, failure.upstream) == ("Reduction", ISSUE)
    assert failure.message.startswith("InternalError: Check failed: block_realize ==")
    assert "0x" not in failure.message and "\n" not in failure.message
    assert scheduled.rule == failure.next_rule == "GeneralReduction"
    fixed = schedule_kernel(mean, CUDA, lists["fixed"])
    assert (fixed.rule, fixed.failure) == ("LargeReduction", None)


def test_the_analysis_goes_on_and_names_the_failure_per_list(whole_mean):
    analysis = analyze(whole_mean.mod)
    assert analysis.failing_lists() == ["default"]
    failed = [k.name for k in analysis.kernels if k.failures]
    assert failed == ["mean"]
    kernels = json.loads(json.dumps(analysis.to_dict()["kernels"]))  # as analysis.json holds them
    lines = failure_lines({"kernels": kernels})
    assert len(lines) == 1 and ISSUE in lines[0] and "`mean`" in lines[0]
    # the window rule still takes the pools of the same network, the large rule its mean
    assert any(k.rules["fixed"] == "WindowReduction" for k in analysis.kernels)
    assert [k.rules["fixed"] for k in analysis.kernels if k.name == "mean"] == ["LargeReduction"]


def test_a_cuda_build_goes_on_with_the_failing_kernel_left_to_the_next_rule(whole_mean):
    """The default list's mean: grid 1 x block 1; the fixed list's: threads share it."""
    launches = {}
    for name, rules in rule_lists(CUDA).items():
        failures: dict = {}
        lowered = lower_model(whole_mean.mod, CUDA, rules, failures=failures)
        executable = tvm.relax.build(lowered, target=CUDA, relax_pipeline=None)
        assert "mean_kernel" in cuda_source(executable)
        found = kernel_launches(lowered, CUDA).items()
        launches[name] = [(v["grid"], v["block"]) for k, v in found if k.startswith("mean_")]
        expected = ["mean"] if name == "default" else []
        assert list(failures) == expected, name
    assert set(launches["default"]) == {(1, 1)}  # the reduction and its divide
    assert launches["fixed"] == [(1, 256)]  # 2048 terms: one block's threads share them


def test_the_network_itself_is_computed_right_on_the_host(whole_mean):
    """The host build (no rule list) of the same network matches PyTorch eager."""
    loaded = load_model(parse_spec(SPEC), ModelOptions())
    inputs = loaded.random_inputs(0)
    got = run_model(build_model(whole_mean.mod, make_target("llvm")), inputs, tvm.cpu(0))
    assert check_outputs(got, torch_outputs(loaded.module, inputs), "float32").correct
    assert np.ndim(got[0]) == 0


def test_tune_model_reports_the_failure_in_one_line_and_a_row(tmp_path):
    out = tmp_path / "run"
    result = tune("model", str(ROOT / SPEC), "--analyze", "--out", str(out), check_exit=0)
    printed = result.stdout + result.stderr
    assert "Traceback" not in printed
    own = [line for line in printed.splitlines() if "cannot build" in line.split(":")[0]]
    assert [line.split("`")[1] for line in own] == ["default"]
    assert all(ISSUE in line and "`mean`" in line for line in own)
    report = (out / "report.md").read_text()
    assert "## Kernels a rule cannot schedule" in report
    rows = [row for row in report.splitlines() if row.startswith("| `default` | `mean` |")]
    assert len(rows) == 1 and ISSUE in rows[0] and rows[0].endswith("| GeneralReduction |")
    assert "Kernel `mean`: `fixed` gives it LargeReduction." in report
