"""A model's kernels one by one (for kernel-level timing), its builds per rule list, and the
check against PyTorch: what the harness will take from `baselines/models`."""

import numpy as np
import pytest
import tvm
from tvm.s_tir import dlight

from pool_fusion_tuning.baselines.anatomy import cuda_source, launch_configs
from pool_fusion_tuning.baselines.models.analysis import analyze
from pool_fusion_tuning.baselines.models.build import build_model, flatten_outputs, lower_model
from pool_fusion_tuning.baselines.models.eager_check import check_outputs, tf32, tf32_state
from pool_fusion_tuning.baselines.models.importer import prepare_model
from pool_fusion_tuning.baselines.models.kernels import (
    kernel_arguments,
    kernel_module,
    kernel_reference,
    output_positions,
    rule_lists,
    schedule_kernel,
    scheduled_kernels,
    unscheduled_kernels,
)
from pool_fusion_tuning.baselines.models.model_spec import ModelOptions
from pool_fusion_tuning.baselines.pipeline import make_target, unscheduled
from pool_fusion_tuning.baselines.rules import rule_assignment

pytestmark = pytest.mark.torch

CUDA = make_target("cuda")


@pytest.fixture(scope="module")
def inception():
    return prepare_model("tests/fixtures/model_blocks.py:inception_block", ModelOptions())


@pytest.fixture(scope="module")
def pool_residual():
    return prepare_model(
        "tests/fixtures/model_blocks.py:pool_residual", ModelOptions(decompose=True)
    )


def test_each_kernel_gets_the_rule_and_schedule_apply_default_schedule_gives(inception):
    mod = unscheduled(inception.mod, CUDA)
    for name, rules in rule_lists(CUDA).items():
        kernels = scheduled_kernels(inception.mod, CUDA, rules)
        assert {k: s.rule for k, s in kernels.items()} == rule_assignment(mod, CUDA, rules), name
        with CUDA:
            applied = dlight.ApplyDefaultSchedule(*rules)(tvm.IRModule(dict(mod.functions)))
        for kernel, scheduled in kernels.items():
            assert scheduled.func.script() == applied[kernel].script(), (name, kernel)


def test_the_analysed_launches_are_the_built_kernels_launches(pool_residual):
    analysis = {k.name: k for k in analyze(pool_residual.mod).kernels}
    for name, rules in rule_lists(CUDA).items():
        launches = launch_configs(lower_model(pool_residual.mod, CUDA, rules))
        for kernel, found in analysis.items():
            launch = found.launches[name]
            assert launches[f"{kernel}_kernel"] == {"grid": launch.grid, "block": launch.block}


def test_cuda_builds_for_both_rule_lists_without_a_gpu(pool_residual):
    sources = {
        name: cuda_source(build_model(pool_residual.mod, CUDA, rules))
        for name, rules in rule_lists(CUDA).items()
    }
    assert all("fused_max_pool2d_add" in source for source in sources.values())
    assert sources["default"] != sources["fixed"]


def test_each_scheduled_kernel_compiles_alone_for_cuda(pool_residual):
    for rules in rule_lists(CUDA).values():
        for name, scheduled in scheduled_kernels(pool_residual.mod, CUDA, rules).items():
            source = cuda_source(tvm.compile(kernel_module(scheduled.func), target=CUDA))
            assert "__global__" in source, name


def test_the_host_pipeline_takes_no_rule_list(inception):
    with pytest.raises(ValueError, match="llvm pipeline schedules with no rule list"):
        lower_model(inception.mod, make_target("llvm"), rule_lists(CUDA)["default"])


def test_a_kernel_alone_gets_arguments_and_a_host_reference(inception):
    import torch

    pool = unscheduled_kernels(inception.mod, CUDA)["avg_pool2d"]
    assert output_positions(pool) == [len(pool.params) - 1]
    arguments = kernel_arguments(pool, seed=3)
    assert np.isnan(arguments[-1]).all()
    (got,) = kernel_reference(pool, arguments)
    want = torch.nn.functional.avg_pool2d(torch.from_numpy(arguments[0]), 3, 1, 1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)
    again = kernel_arguments(pool, seed=3)
    assert np.array_equal(again[0], arguments[0])


def test_outputs_within_the_relative_tolerance_pass_and_others_fail():
    want = [np.array([100.0, -3.0, 0.0], "float32")]
    near = [want[0] + np.float32(0.09)]  # 0.09 <= 1e-3 * 100
    assert check_outputs(near, want, "float32").correct
    far = [want[0] + np.float32(0.2)]
    check = check_outputs(far, want, "float32")
    assert not check.correct and check.reason == "outside the tolerance"
    assert check.max_abs_err == pytest.approx(0.2) and check.bound == pytest.approx(0.1)
    assert check.scale == 100
    assert check_outputs([want[0] * np.nan], want, "float32").reason == "NaN in the output"
    assert "shapes differ" in check_outputs([want[0][:2]], want, "float32").reason
    assert check_outputs(near, want, "float16").correct
    # Outputs of any scale are held to the same relative bound (no absolute floor).
    tiny = [w * np.float32(1e-9) for w in want]
    assert check_outputs([t * np.float32(1.0001) for t in tiny], tiny, "float32").correct
    assert not check_outputs([t * np.float32(1.01) for t in tiny], tiny, "float32").correct
    zeros = [np.zeros(3, "float32")]
    assert check_outputs(zeros, zeros, "float32").correct


def test_tf32_is_set_inside_and_restored_after():
    before = tf32_state()
    with tf32(True):
        assert tf32_state() == {"cudnn_allow_tf32": True, "matmul_allow_tf32": True}
    with tf32(False):
        assert tf32_state() == {"cudnn_allow_tf32": False, "matmul_allow_tf32": False}
    assert tf32_state() == before


def test_vm_results_flatten_like_pytorch_outputs():
    device = tvm.cpu(0)
    a, b = (tvm.runtime.tensor(np.full(2, v, "float32"), device=device) for v in (1, 2))
    flat = flatten_outputs((a, (b, a)))
    assert [x[0] for x in flat] == [1, 2, 1]


def test_a_kernel_marked_scheduled_is_left_as_it_is(inception):
    pool = unscheduled_kernels(inception.mod, CUDA)["avg_pool2d"]
    marked = pool.with_attr("tirx.is_scheduled", True)
    found = schedule_kernel(marked, CUDA, rule_lists(CUDA)["default"])
    assert found.rule is None and found.func.same_as(marked)


class _Applied(dict):
    """A `tried` that counts the rules applied (each stored once)."""

    count = 0

    def __setitem__(self, key, value):
        self.count += 1
        super().__setitem__(key, value)


def test_the_rules_the_lists_share_are_applied_once_with_the_same_schedules(inception):
    alone_count = shared_count = 0
    for func in unscheduled_kernels(inception.mod, CUDA).values():
        tried, union = _Applied(), set()
        for rules in rule_lists(CUDA, ("default", "fixed", "reduction-fix")).values():
            alone = _Applied()
            applied = schedule_kernel(func, CUDA, rules, alone)
            shared = schedule_kernel(func, CUDA, rules, tried)
            assert (shared.rule, shared.func.script()) == (applied.rule, applied.func.script())
            alone_count, union = alone_count + alone.count, union | set(alone)
        assert tried.count == len(union)  # each rule the lists tried, once
        shared_count += tried.count
    assert 0 < shared_count < alone_count
