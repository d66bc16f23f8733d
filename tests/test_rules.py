"""Which rule each kernel receives with the candidate `WindowReduction` rule, and what it builds."""

import math

import pytest
import tvm
from tvm import relax, topi

from baselines.anatomy import captured_launches, kernel_table
from baselines.arms import ARMS
from baselines.graph import REDUCTION_GRAPHS
from baselines.pipeline import backend_passes, build, fused_pool_function, fused_stage, lower, \
    make_target, unscheduled
from baselines.rules import WindowReduction, choose_schedule, default_rules, fixed_rules, \
    rule_assignment, small_window_shape

from conftest import DEFAULT

CUDA = make_target("cuda")


def test_the_fused_pool_kernel_gets_the_window_rule_and_nothing_else_changes(case):
    mod = fused_stage(case, ARMS["on"], CUDA)
    default = rule_assignment(mod, CUDA, default_rules(CUDA))
    fixed = rule_assignment(mod, CUDA, fixed_rules(CUDA))
    pool, _ = fused_pool_function(mod)
    assert default[pool.name_hint] == "GeneralReduction"
    assert fixed[pool.name_hint] == "WindowReduction"
    assert {k: v for k, v in fixed.items() if k != pool.name_hint} == \
        {k: v for k, v in default.items() if k != pool.name_hint}


@pytest.mark.parametrize("graph", REDUCTION_GRAPHS)
def test_large_reductions_keep_their_default_rule(graph):
    mod = unscheduled(REDUCTION_GRAPHS[graph](), CUDA)
    assert rule_assignment(mod, CUDA, fixed_rules(CUDA)) == \
        rule_assignment(mod, CUDA, default_rules(CUDA))
    # Declined by the rule itself, not only shadowed by a rule earlier in the list.
    rule = WindowReduction()
    with CUDA:
        assert all(rule.apply(func, CUDA, False) is None for func in mod.functions.values()
                   if not isinstance(func, relax.Function))


def test_the_rule_leaves_cpu_targets_alone():
    mod = fused_stage(DEFAULT, ARMS["on"], CUDA)
    _, func = fused_pool_function(mod)
    assert WindowReduction().apply(func, make_target("llvm"), False) is None


def test_the_schedule_follows_the_shape():
    issue = choose_schedule(147456, 4, 589824)  # 2x2 windows, stride 2: no overlap
    assert (issue.threads, issue.outputs_w, issue.outputs_h, issue.unroll) == (256, 1, 1, True)
    assert choose_schedule(571536, 4, 589824).outputs_h == 2  # stride 1: rows shared
    assert choose_schedule(138384, 9, 589824).outputs_h == 1  # 3x3, stride 2: little overlap
    assert choose_schedule(100, 4, 400).threads == 128
    assert choose_schedule(5, 4, 20).threads == 32


def test_fixed_arm_compiles_to_the_chosen_launch(case):
    mod = lower(case, ARMS["fixed"], CUDA)
    executable = relax.build(mod, target=CUDA, relax_pipeline=None, tir_pipeline="default")
    pool = next(row for row in kernel_table(mod, executable, "sm_90")
                if row["name"].startswith("fused_pool2d"))
    _, func = fused_pool_function(fused_stage(case, ARMS["on"], CUDA))
    chosen = choose_schedule(*small_window_shape(func))
    n, c, h, w = case.pool_shape
    per_thread = n * c * math.ceil(h / chosen.outputs_h) * w
    assert (pool["grid"], pool["block"]) == (math.ceil(per_thread / chosen.threads),
                                             chosen.threads)
    assert pool["shared_bytes"] == 0  # the pooled value stays in a register


def test_cuda_graph_rewriting_captures_no_launch_of_this_graph(tmp_path):
    """The first kernel reads the function's input and the last ones write its outputs, and
    Relax only captures kernels between storage it allocates itself."""
    build(DEFAULT, ARMS["on+graph"], CUDA, tmp_path)
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
    with CUDA, tvm.transform.PassContext(opt_level=3,
                                         config={"relax.backend.use_cuda_graph": True}):
        for transform in backend_passes(CUDA):
            mod = transform(mod)
    assert captured_launches(mod) == 2
