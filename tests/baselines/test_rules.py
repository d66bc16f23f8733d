"""The rule each of the project's kernels gets with `WindowReduction`, and what it builds."""

import dataclasses
import math

import pytest
import tvm
from conftest import DEFAULT, ODD, rule_launch
from tvm import relax, topi
from tvm.s_tir import dlight

from pool_fusion_tuning.baselines.anatomy import captured_launches, cuda_source, kernel_table
from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.graph import REDUCTION_GRAPHS
from pool_fusion_tuning.baselines.pipeline import (
    backend_passes,
    build,
    fused_pool_function,
    fused_stage,
    lower,
    make_target,
    unscheduled,
)
from pool_fusion_tuning.baselines.rules import (
    RULE_LISTS,
    WholeGraphWindowReduction,
    default_rules,
    fixed_rules,
    rule_assignment,
)
from pool_fusion_tuning.baselines.window_reduction import Launch
from pool_fusion_tuning.runfolder.store import folder_writer

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
    """The window rule leaves them all; `fixed` gives rows of 64 to RowReduction alone."""
    mod = unscheduled(REDUCTION_GRAPHS[graph](), CUDA)
    fixed = rule_assignment(mod, CUDA, fixed_rules(CUDA))
    default = rule_assignment(mod, CUDA, default_rules(CUDA))
    rows = {name for name, rule in fixed.items() if rule == "RowReduction"}
    assert bool(rows) == (graph == "softmax")
    assert {name: default[name] for name in rows} == {name: "GeneralReduction" for name in rows}
    assert {k: v for k, v in fixed.items() if k not in rows} == {
        k: v for k, v in default.items() if k not in rows
    }
    # Under every list (`fixed` but for the rows), scheduled exactly as the default list does.
    with CUDA:
        scripts = {
            name: dlight.ApplyDefaultSchedule(*rules(CUDA))(
                tvm.IRModule(dict(mod.functions))
            ).script()
            for name, rules in RULE_LISTS.items()
            if not (rows and name == "fixed")
        }
    assert len(set(scripts.values())) == 1
    # Declined by the rule itself, not only shadowed by a rule earlier in the list.
    rule = WholeGraphWindowReduction()
    with CUDA:
        assert all(
            rule.apply(func, CUDA, False) is None
            for func in mod.functions.values()
            if not isinstance(func, relax.Function)
        )


def test_the_rule_leaves_cpu_targets_alone():
    mod = fused_stage(DEFAULT, ARMS["on"], CUDA)
    _, func = fused_pool_function(mod)
    assert WholeGraphWindowReduction().apply(func, make_target("llvm"), False) is None


def _window(case):
    _, func = fused_pool_function(fused_stage(case, ARMS["on"], CUDA))
    return rule_launch(func, CUDA)


def test_the_rule_reads_the_window_off_the_kernel():
    window, _ = _window(dataclasses.replace(DEFAULT, window=3, stride=2))
    assert (window.shape, window.size) == ((1, 144, 31, 31), 9)
    assert (window.shares_rows, window.vector, window.inlined_input) == (False, False, False)


def test_the_schedule_follows_the_shape():
    issue, launch = _window(DEFAULT)  # 2x2 windows, stride 2: no overlap, aligned columns
    assert (issue.vector, launch) == (True, Launch(threads=256, rows=1))
    stride1, launch = _window(dataclasses.replace(DEFAULT, stride=1))
    assert (stride1.vector, launch.rows) == (False, 2)  # rows shared, columns unaligned
    window3, launch = _window(dataclasses.replace(DEFAULT, window=3))
    assert (window3.vector, launch.rows) == (False, 1)  # little overlap, odd columns
    assert not _window(ODD)[0].vector  # odd input rows start unaligned


def test_fixed_arm_compiles_to_the_chosen_launch(case):
    mod = lower(case, ARMS["fixed"], CUDA)
    executable = relax.build(mod, target=CUDA, relax_pipeline=None, tir_pipeline="default")
    pool = next(
        row
        for row in kernel_table(mod, executable, "sm_90")
        if row["name"].startswith("fused_pool2d")
    )
    window, launch = _window(case)
    n, c, h, w = case.pool_shape
    per_thread = n * c * math.ceil(h / launch.rows) * w
    assert (pool["grid"], pool["block"]) == (math.ceil(per_thread / launch.threads), launch.threads)
    assert pool["shared_bytes"] == 0  # the pooled value stays in a register
    kernel = next(
        text
        for text in cuda_source(executable).split("__global__")
        if f"{pool['name']}(" in text and "{" in text
    )  # not the declaration
    assert ("float2" in kernel) == window.vector  # the window's columns in one load


def test_cuda_graph_rewriting_captures_no_launch_of_this_graph(tmp_path):
    """Relax captures only kernels between storage it allocates."""
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
