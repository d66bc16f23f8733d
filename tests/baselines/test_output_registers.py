"""Stride-1 Cases as inductor computes them: outputs handed over in registers, the Add's
constant an immediate; right on llvm, no load but the window's in CUDA."""

import re
import subprocess

import numpy as np
import pytest
import tvm
from conftest import rule_launch
from test_template import CUDA
from tvm import relax, s_tir

from pool_fusion_tuning.baselines import window_reduction
from pool_fusion_tuning.baselines.anatomy import cuda_source
from pool_fusion_tuning.baselines.arms import ARMS, template_arm, tuned_task_arm
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.pipeline import (
    build,
    fused_pool_function,
    fused_stage,
    make_target,
)
from pool_fusion_tuning.baselines.reference import random_input, reference
from pool_fusion_tuning.baselines.rules import WholeGraphWindowReduction
from pool_fusion_tuning.tuning.measure.vm_arms import outputs_of

# The measured stride-1 Cases (`s1-32`, `s1-h6`, `s1-96`), smaller, with odd output widths.
STRIDE1 = {
    "s1-32": Case(channels=4, height=12, width=12, window=2, stride=1, prelude=False, tail=3),
    "s1-h6": Case(channels=6, height=10, width=10, window=2, stride=1, prelude=False, tail=1),
    "s1-96": Case(
        channels=2,
        height=16,
        width=16,
        window=2,
        stride=1,
        prelude=False,
        tail=2,
        shared_output=False,
    ),
}
# The Cases as measured on the H200: two rows of outputs per thread.
MEASURED = {
    "s1-32": Case(channels=32, height=32, width=32, window=2, stride=1, prelude=False, tail=3),
    "s1-h6": Case(channels=48, height=20, width=20, window=2, stride=1, prelude=False, tail=1),
    "s1-96": STRIDE1["s1-96"].replace(channels=5, height=96, width=96),
}
# The rule's schedule, and template points along W and the flattened output.
POINTS = [
    {"threads": 64, "outputs_w": 2, "unroll": True},
    {"threads": 32, "outputs_h": 2, "thread_axis": "outer"},
    {"threads": 128, "outputs_flat": 2, "unroll": True, "vector": True},
]


def _reads_of_outputs(func: tvm.tirx.PrimFunc) -> list[str]:
    """The blocks that read one of the function's outputs (every parameter but the first)."""
    outputs = func.params[1:]
    sch = s_tir.Schedule(func)
    blocks = [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]
    assert len(blocks) > len(outputs)  # every block, under the thread loops too
    return [
        b.name_hint for b in blocks if any(r.source.same_as(o) for r in b.reads for o in outputs)
    ]


@pytest.mark.parametrize("case", STRIDE1.values(), ids=STRIDE1)
@pytest.mark.parametrize("whole", [False, True], ids=["pool", "whole"])
def test_the_tuned_kernels_take_no_constant_and_read_no_output(case, whole):
    """The tuners' kernel takes the input and outputs alone; no schedule reads an output."""
    _, func = fused_pool_function(fused_stage(case, tuned_task_arm(whole), CUDA))
    assert all(len(p.ty.shape) == 4 for p in func.params), func.params
    with CUDA:
        ruled = WholeGraphWindowReduction().apply(func, CUDA, False)
    assert ruled is not None and _reads_of_outputs(ruled.mod["main"]) == []
    for point in POINTS:
        scheduled = template_arm("t", point).schedule.apply(func, CUDA)
        assert _reads_of_outputs(scheduled) == [], point


def test_without_the_handover_the_last_add_reads_the_first_back():
    """What `output_registers` removes: the shipped rule alone reads the first Add back."""
    _, func = fused_pool_function(fused_stage(STRIDE1["s1-32"], ARMS["one-kernel"], CUDA))
    with CUDA:
        shipped = window_reduction.WindowReduction().apply(func, CUDA, False)
    assert len(_reads_of_outputs(shipped.mod["main"])) == 1


def test_the_backend_s_arms_keep_their_kernels():
    """ON's kernels load their constants; tuned arms bind them in the pool kernel alone."""
    case = STRIDE1["s1-32"]
    on = fused_stage(case, ARMS["on"], CUDA)
    tuned = fused_stage(case, tuned_task_arm(), CUDA)
    pool = fused_pool_function(on)[0].name_hint
    scalars = {
        gv.name_hint: sum(len(p.ty.shape) == 0 for p in f.params)
        for gv, f in on.functions.items()
        if isinstance(f, tvm.tirx.PrimFunc)
    }
    assert scalars == {pool: 1, "fused_add_add": 2}
    for gv, func in tuned.functions.items():
        if gv.name_hint != pool and isinstance(func, tvm.tirx.PrimFunc):
            tvm.ir.assert_structural_equal(func, on[gv.name_hint])
    assert sum(len(p.ty.shape) == 0 for p in fused_pool_function(tuned)[1].params) == 0


@pytest.mark.parametrize("case", STRIDE1.values(), ids=STRIDE1)
@pytest.mark.parametrize("whole", [False, True], ids=["pool", "whole"])
def test_the_tuned_arms_match_the_reference_on_llvm(case, whole):
    arms = [template_arm("t", point, whole) for point in POINTS]
    for arm in arms + ([ARMS["one-kernel"]] if whole else []):
        vm = relax.VirtualMachine(build(case, arm, make_target("llvm")), tvm.cpu())
        for seed in range(2):
            x = random_input(case, seed)
            got, want = outputs_of(vm["main"](tvm.runtime.tensor(x))), reference(case, x)
            assert len(got) == len(want), arm
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def _ptx_accesses(case: Case, arm, folder) -> list[str]:
    """The global loads and stores of the fused pool kernel's PTX, as nvcc makes it."""
    source = cuda_source(build(case, arm, CUDA))
    (folder / "k.cu").write_text(source)
    subprocess.run(
        ["nvcc", "--ptx", "-arch=sm_90", "-o", folder / "k.ptx", folder / "k.cu"], check=True
    )
    pool = fused_pool_function(fused_stage(case, arm, CUDA))[0].name_hint
    ptx = (folder / "k.ptx").read_text()
    kernel = ptx.split(f".entry {pool}_kernel(")[1].split(".entry")[0]
    return re.findall(r"^\s*(?:@!?%\w+\s+)?((?:ld|st)\.global[\w.]*)", kernel, re.M)


@pytest.mark.nvcc
@pytest.mark.parametrize("name", MEASURED)
def test_one_kernel_loads_the_window_alone(name, tmp_path):
    """`one-kernel` on the measured Cases loads only its windows' input columns, all
    non-coherent: no constant, no output it wrote."""
    case = MEASURED[name]
    _, launch = rule_launch(
        fused_pool_function(fused_stage(case, ARMS["one-kernel"], CUDA))[1], CUDA
    )
    ops = _ptx_accesses(case, ARMS["one-kernel"], tmp_path)
    loads = [op for op in ops if op.startswith("ld.")]
    assert loads == ["ld.global.nc.f32"] * (launch.rows - 1 + case.window) * case.window, ops
    stored = 2 if case.shared_output and case.tail > 1 else 1
    assert [op for op in ops if op.startswith("st.")] == ["st.global.f32"] * launch.rows * stored
