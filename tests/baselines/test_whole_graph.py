"""FuseAroundReduction: one kernel for the whole graph where it fits, the module unchanged where
it does not; the kernel is right on llvm and compiles to the launch the rule chose."""

import math
import re

import numpy as np
import pytest
import tvm
from conftest import DEFAULT, ODD, WINDOW3, rule_launch
from tvm import relax, s_tir, topi

from pool_fusion_tuning.baselines.anatomy import cuda_source, kernel_table
from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.graph import REDUCTION_GRAPHS
from pool_fusion_tuning.baselines.pipeline import (
    build,
    fused_pool_function,
    fused_stage,
    lower,
    make_target,
)
from pool_fusion_tuning.baselines.reference import random_input, reference
from pool_fusion_tuning.baselines.rules import WholeGraphWindowReduction
from pool_fusion_tuning.baselines.whole_graph import FuseAroundReduction
from pool_fusion_tuning.runfolder.store import folder_writer
from pool_fusion_tuning.tuning.measure.vm_arms import outputs_of

CUDA = make_target("cuda")
ONE_KERNEL = ARMS["one-kernel"]
# Prelude on and off, tail 1 and 2, shared output or not, window 2 and 3, stride 1 and 2, odd.
GROUPED = [
    DEFAULT,
    ODD,
    Case(tail=1),
    Case(prelude=False),
    Case(window=3, stride=1, height=20, width=18, branches=2),
]
GROUPED_IDS = ["default", "odd", "tail1", "no-prelude", "window3-stride1"]


def _kernels(mod):
    return {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}


def _block_kinds(func) -> dict:
    sch = s_tir.Schedule(func)
    names = [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))]
    return {
        kind: sum(1 for n in names if re.fullmatch(rf"{kind}\d*", n))
        for kind in ("T_add", "T_concat", "pool_max")
    }


@pytest.mark.parametrize("case", GROUPED, ids=GROUPED_IDS)
def test_one_primfunc_reads_the_input_and_writes_every_output(case):
    mod = fused_stage(case, ONE_KERNEL, CUDA)
    (func,) = _kernels(mod).values()
    prelude_adds = case.branches**2 + case.branches if case.prelude else 0
    assert _block_kinds(func) == {
        "T_add": prelude_adds + case.tail,
        "T_concat": case.branches + 1 if case.prelude else 0,
        "pool_max": 1,
    }
    written = 2 if case.shared_output and case.tail > 1 else 1
    shapes = [tuple(int(d) for d in p.ty.shape) for p in func.params]
    assert shapes == [case.input_shape] + [case.pool_shape] * written  # no bias is a parameter
    assert mod["main"].script().count("R.call_tir(") == 1


@pytest.mark.parametrize("graph", REDUCTION_GRAPHS)
def test_the_graphs_with_large_reductions_are_left_unchanged(graph):
    """One kernel already, or a plain reduction (kCommReduce), whose epilogue is another rule."""
    _left_unchanged(REDUCTION_GRAPHS[graph]())


def _pool(value):
    return topi.nn.pool2d(value, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "max", False, "NCHW")


def _graph(body) -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 16, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(body(bb, x))
        bb.emit_func_output(out)
    return bb.get()


def _add_one(bb, value):
    return bb.emit_te(topi.add, value, relax.const(1, "float32"))


def test_a_consumer_that_is_not_elementwise_leaves_the_module_unchanged():
    _left_unchanged(
        _graph(
            lambda bb, x: bb.emit_te(
                topi.sum, bb.emit_te(_pool, _add_one(bb, x)), axis=3, keepdims=True
            )
        )
    )


def test_a_prologue_value_used_elsewhere_leaves_the_module_unchanged():
    def body(bb, x):
        shifted = _add_one(bb, x)
        return relax.Tuple([shifted, _add_one(bb, bb.emit_te(_pool, shifted))])

    _left_unchanged(_graph(body))


def test_two_reductions_leave_the_module_unchanged():
    _left_unchanged(_graph(lambda bb, x: bb.emit_te(_pool, bb.emit_te(_pool, _add_one(bb, x)))))


def _left_unchanged(graph: tvm.IRModule) -> None:
    with CUDA, tvm.transform.PassContext(opt_level=3):
        fused = relax.transform.FuseOps()(
            relax.transform.AnnotateTIROpPattern()(relax.transform.LegalizeOps()(graph))
        )
        after = FuseAroundReduction()(fused)
    tvm.ir.assert_structural_equal(after, fused)


def test_the_pass_merges_after_fuse_ops_and_the_ir_of_both_is_saved(tmp_path):
    build(DEFAULT, ONE_KERNEL, CUDA, folder_writer(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "05_FuseAroundReduction.py",
        "05_FuseOps.py",
        "06_FuseTIR.py",
        "07_ApplyDefaultSchedule.py",
    ]
    assert (tmp_path / "05_FuseOps.py").read_text().count("fused_") > (
        tmp_path / "05_FuseAroundReduction.py"
    ).read_text().count("fused_")


@pytest.mark.parametrize("case", GROUPED, ids=GROUPED_IDS)
def test_one_kernel_matches_the_reference_on_llvm(case, tmp_path):
    vm = relax.VirtualMachine(build(case, ONE_KERNEL, make_target("llvm")), tvm.cpu())
    for seed in range(2):
        x = random_input(case, seed)
        got, want = outputs_of(vm["main"](tvm.runtime.tensor(x))), reference(case, x)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


@pytest.mark.nvcc
@pytest.mark.parametrize(
    "case",
    [DEFAULT, ODD, WINDOW3, GROUPED[-1], GROUPED[3]],
    ids=["default", "odd", "window3", "window3-stride1", "no-prelude"],
)
def test_one_kernel_compiles_to_the_launch_the_rule_chose(case):
    mod = lower(case, ONE_KERNEL, CUDA)
    executable = relax.build(mod, target=CUDA, relax_pipeline=None, tir_pipeline="default")
    (kernel,) = kernel_table(mod, executable, "sm_90")
    _, func = fused_pool_function(fused_stage(case, ONE_KERNEL, CUDA))
    window, launch = rule_launch(func, CUDA)
    n, c, h, w = case.pool_shape
    per_thread = n * c * math.ceil(h / launch.rows) * w
    assert (kernel["grid"], kernel["block"]) == (
        math.ceil(per_thread / launch.threads),
        launch.threads,
    )
    assert kernel["shared_bytes"] == 0 and kernel["spill_bytes"] == 0
    source = cuda_source(executable)
    body = source[source.rindex(f"{kernel['name']}(") :]
    assert "condval" not in body  # no if_then_else left: the branches became selected offsets
    assert ("float2" in body) == window.vector  # vector loads only where x is read directly


def test_the_rule_selects_the_concatenation_s_offsets_instead_of_branching():
    _, func = fused_pool_function(fused_stage(DEFAULT, ONE_KERNEL, CUDA))
    with CUDA:
        text = WholeGraphWindowReduction().apply(func, CUDA, False).mod["main"].script()
    assert "if_then_else" not in text and "T.Select" in text
