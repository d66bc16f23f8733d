"""Which rule each kernel receives with the candidate `WindowReduction` rule, and what it builds."""

import dataclasses
import math

import pytest
import tvm
from conftest import DEFAULT, ODD
from tvm import relax, topi

from baselines.anatomy import captured_launches, cuda_source, kernel_table
from baselines.arms import ARMS
from baselines.graph import REDUCTION_GRAPHS
from baselines.pipeline import (
    backend_passes,
    build,
    fused_pool_function,
    fused_stage,
    lower,
    make_target,
    unscheduled,
)
from baselines.rules import (
    WindowReduction,
    choose_schedule,
    default_rules,
    fixed_rules,
    rule_assignment,
    small_window_shape,
)
from baselines.template import PoolSchedule
from tuning.runfolder.store import folder_writer

CUDA = make_target("cuda")


def test_the_fused_pool_kernel_gets_the_window_rule_and_nothing_else_changes(case):
    mod = fused_stage(case, ARMS["on"], CUDA)
    default = rule_assignment(mod, CUDA, default_rules(CUDA))
    fixed = rule_assignment(mod, CUDA, fixed_rules(CUDA))
    pool, _ = fused_pool_function(mod)
    assert default[pool.name_hint] == "GeneralReduction"
    assert fixed[pool.name_hint] == "WindowReduction"
    assert {k: v for k, v in fixed.items() if k != pool.name_hint} == {
        k: v for k, v in default.items() if k != pool.name_hint
    }


@pytest.mark.parametrize("graph", REDUCTION_GRAPHS)
def test_large_reductions_keep_their_default_rule(graph):
    mod = unscheduled(REDUCTION_GRAPHS[graph](), CUDA)
    assert rule_assignment(mod, CUDA, fixed_rules(CUDA)) == rule_assignment(
        mod, CUDA, default_rules(CUDA)
    )
    # Declined by the rule itself, not only shadowed by a rule earlier in the list.
    rule = WindowReduction()
    with CUDA:
        assert all(
            rule.apply(func, CUDA, False) is None
            for func in mod.functions.values()
            if not isinstance(func, relax.Function)
        )


def test_the_rule_leaves_cpu_targets_alone():
    mod = fused_stage(DEFAULT, ARMS["on"], CUDA)
    _, func = fused_pool_function(mod)
    assert WindowReduction().apply(func, make_target("llvm"), False) is None


def window_shape(case):
    _, func = fused_pool_function(fused_stage(case, ARMS["on"], CUDA))
    return small_window_shape(func)


def test_the_rule_reads_the_window_off_the_kernel():
    shape = window_shape(dataclasses.replace(DEFAULT, window=3, stride=2))
    assert (shape.outputs, shape.window, shape.inputs) == (144 * 31 * 31, 9, 144 * 64 * 64)
    assert (shape.columns, shape.stride, shape.input_width, shape.output_width) == (3, 2, 64, 31)


def test_the_schedule_follows_the_shape():
    issue = window_shape(DEFAULT)  # 2x2 windows, stride 2: no overlap, aligned columns
    assert choose_schedule(issue) == PoolSchedule(threads=256, unroll=True, vector=True)
    stride1 = choose_schedule(window_shape(dataclasses.replace(DEFAULT, stride=1)))
    assert (stride1.outputs_h, stride1.vector) == (2, False)  # rows shared, columns unaligned
    window3 = choose_schedule(window_shape(dataclasses.replace(DEFAULT, window=3)))
    assert (window3.outputs_h, window3.vector) == (1, False)  # little overlap, odd columns
    assert not choose_schedule(window_shape(ODD)).vector  # odd input rows start unaligned
    assert choose_schedule(dataclasses.replace(issue, outputs=100)).threads == 128
    assert choose_schedule(dataclasses.replace(issue, outputs=5)).threads == 32
    assert not choose_schedule(dataclasses.replace(issue, stride=None)).vector


def test_fixed_arm_compiles_to_the_chosen_launch(case):
    mod = lower(case, ARMS["fixed"], CUDA)
    executable = relax.build(mod, target=CUDA, relax_pipeline=None, tir_pipeline="default")
    pool = next(
        row
        for row in kernel_table(mod, executable, "sm_90")
        if row["name"].startswith("fused_pool2d")
    )
    _, func = fused_pool_function(fused_stage(case, ARMS["on"], CUDA))
    chosen = choose_schedule(small_window_shape(func))
    n, c, h, w = case.pool_shape
    per_thread = n * c * math.ceil(h / chosen.outputs_h) * w
    assert (pool["grid"], pool["block"]) == (math.ceil(per_thread / chosen.threads), chosen.threads)
    assert pool["shared_bytes"] == 0  # the pooled value stays in a register
    kernel = next(
        text
        for text in cuda_source(executable).split("__global__")
        if f"{pool['name']}(" in text and "{" in text
    )  # not the declaration
    assert ("float2" in kernel) == chosen.vector  # the window's columns in one load


def test_cuda_graph_rewriting_captures_no_launch_of_this_graph(tmp_path):
    """The first kernel reads the function's input and the last ones write its outputs, and
    Relax only captures kernels between storage it allocates itself."""
    build(DEFAULT, ARMS["on+graph"], CUDA, folder_writer(tmp_path))
    mod = lower(DEFAULT, ARMS["on+graph"], CUDA)
    assert "cuda_graph_alloc" in [gv.name_hint for gv in mod.functions]
    assert captured_launches(mod) == 0


def test_captured_launches_counts_kernels_between_internal_buffers():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((64, 64), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            value = x
            for _ in range(4):
                value = bb.emit_te(topi.nn.softmax, value)
            out = bb.emit_output(value)
        bb.emit_func_output(out)
    mod = bb.get()
    with (
        CUDA,
        tvm.transform.PassContext(opt_level=3, config={"relax.backend.use_cuda_graph": True}),
    ):
        for transform in backend_passes(CUDA):
            mod = transform(mod)
    assert captured_launches(mod) == 2
