"""Blocks of real networks: exported, analysed for CUDA (rules, launches, the pattern flagged
only where the issue finds it), built for llvm and checked against PyTorch."""

import pytest
import tvm

from pool_fusion_tuning.baselines.models.analysis import analyze
from pool_fusion_tuning.baselines.models.build import build_model, run_model
from pool_fusion_tuning.baselines.models.eager_check import check_outputs, torch_outputs
from pool_fusion_tuning.baselines.models.importer import prepare_model
from pool_fusion_tuning.baselines.models.model_spec import ModelOptions
from pool_fusion_tuning.baselines.models.pattern import warp_lanes
from pool_fusion_tuning.baselines.pipeline import make_target

pytestmark = pytest.mark.torch

BLOCKS = "tests/fixtures/model_blocks.py"
_CACHE = {}


def imported(function: str, decompose: bool = False):
    """The block's ImportedModel and its analysis, once per test session."""
    key = (function, decompose)
    if key not in _CACHE:
        model = prepare_model(f"{BLOCKS}:{function}", ModelOptions(decompose=decompose))
        _CACHE[key] = model, analyze(model.mod)
    return _CACHE[key]


def kernel(analysis, *ops):
    """The one kernel whose name holds every op in `ops`."""
    found = [k for k in analysis.kernels if all(op in k.name for op in ops)]
    assert len(found) == 1, [k.name for k in analysis.kernels]
    return found[0]


def only_flagged(analysis, flagged):
    assert [k.name for k in analysis.pattern_kernels()] == [flagged.name]


def assert_one_block_per_output_of_256(found):
    assert found.rules["default"] == "GeneralReduction"
    assert found.launches["default"].grid == found.outputs
    assert found.launches["default"].block == 256
    assert found.cross_thread["default"] and found.pattern


def test_inception_pool_branch_is_flagged_and_the_window_rule_takes_it():
    _, analysis = imported("inception_block")
    pool = kernel(analysis, "avg_pool2d")
    # 3x3 window, padded (count_include_pad): pad + sum + divide needs no fusion.
    assert (pool.window, pool.outputs) == (9, 8 * 12 * 12)
    assert_one_block_per_output_of_256(pool)
    assert pool.rules["fixed"] == "WindowReduction"
    assert not pool.cross_thread["fixed"]
    assert pool.launches["fixed"].grid < pool.outputs  # threads, not blocks, per output
    only_flagged(analysis, pool)
    # The convolutions go to Matmul, the BatchNorm epilogues to Fallback, under both lists.
    assert {k.rules["default"] for k in analysis.kernels if k is not pool} == {"Matmul", "Fallback"}
    assert analysis.rule_changes() == [pool]


def test_convnext_depthwise_conv_with_bias_is_flagged_and_the_window_rule_takes_it():
    _, analysis = imported("convnext_block")
    dwconv = kernel(analysis, "conv2d", "add")
    assert dwconv.window == 49
    assert_one_block_per_output_of_256(dwconv)
    # The window rule takes the depthwise conv (one thread per output), and nothing else.
    assert dwconv.rules == {"default": "GeneralReduction", "fixed": "WindowReduction"}
    assert analysis.rule_changes() == [dwconv]
    # LayerNorm's reduction over 96 channels is cross-thread too, but no window.
    norm = kernel(analysis, "layer_norm")
    assert norm.cross_thread["default"] and norm.window == 96 and not norm.pattern
    only_flagged(analysis, dwconv)


def test_inverted_residual_decomposed_flags_the_depthwise_conv_with_its_epilogue():
    _, analysis = imported("inverted_residual", decompose=True)
    # BatchNorm decomposed: subtract, divide, multiply, add fused into the conv, then ReLU6.
    depthwise = kernel(analysis, "conv2d1", "clip")
    assert depthwise.window == 9
    assert_one_block_per_output_of_256(depthwise)
    assert depthwise.rules == {"default": "GeneralReduction", "fixed": "WindowReduction"}
    only_flagged(analysis, depthwise)


def test_inverted_residual_not_decomposed_keeps_batch_norm_apart():
    _, analysis = imported("inverted_residual")
    assert any("batch_norm" in k.name for k in analysis.kernels)
    assert not any("subtract" in k.name for k in analysis.kernels)


def test_pool_and_residual_add_fuse_once_decomposed_and_the_window_rule_takes_them():
    _, analysis = imported("pool_residual", decompose=True)
    fused = kernel(analysis, "max_pool2d", "add")
    assert fused.window == 9
    assert_one_block_per_output_of_256(fused)
    assert fused.rules["fixed"] == "WindowReduction"
    only_flagged(analysis, fused)


def test_pool_without_epilogue_is_not_flagged():
    # Not decomposed, BatchNorm stays unfused: the MaxPool has no epilogue.
    _, analysis = imported("pool_residual")
    pool = kernel(analysis, "max_pool2d")
    assert pool.rules["default"] == "Fallback" and not pool.cross_thread["default"]
    assert analysis.pattern_kernels() == []


def test_dense_transition_pool_gets_one_block_of_four_threads_per_output():
    _, analysis = imported("dense_transition")
    pool = kernel(analysis, "avg_pool2d")
    assert pool.window == 4
    assert pool.rules == {"default": "Reduction", "fixed": "WindowReduction"}
    assert (pool.launches["default"].grid, pool.launches["default"].block) == (pool.outputs, 4)
    assert warp_lanes(4) == 32
    only_flagged(analysis, pool)


def test_analysis_is_plain_data():
    _, analysis = imported("dense_transition")
    data = analysis.to_dict()
    assert data["criterion"].startswith("A kernel has the idle-lane pattern")
    assert data["target"]["kind"] == "cuda"
    row = {k["name"]: k for k in data["kernels"]}["avg_pool2d"]
    assert row["launches"]["default"] == {"grid": 288, "block": 4}
    assert row["rules"] == {"default": "Reduction", "fixed": "WindowReduction"}


@pytest.mark.parametrize(
    "function, decompose",
    [
        ("inception_block", False),
        ("convnext_block", False),
        ("inverted_residual", True),
        ("pool_residual", True),
        ("dense_transition", False),
    ],
)
def test_llvm_build_matches_pytorch_eager(function, decompose):
    model, _ = imported(function, decompose)
    executable = build_model(model.mod, make_target("llvm"))
    for seed in range(2):
        inputs = model.random_inputs(seed)
        got = run_model(executable, inputs, tvm.cpu(0))
        check = check_outputs(got, torch_outputs(model.loaded.module, inputs), "float32")
        assert check.correct, check
