"""`outputs_strided`: thread t takes t, t + threads, ... of the flat index, as Triton does."""

import re
import subprocess

import numpy as np
import pytest
import tvm
from tvm import s_tir

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.window_bench import without_bindings
from pool_fusion_tuning.tuning.candidates.kernel import bias_count, fused_function, kernel_module
from pool_fusion_tuning.tuning.candidates.kernel_check import _inputs, expected_outputs
from pool_fusion_tuning.tuning.tuners.metaschedule.design_space import STRUCTURES, template_space
from pool_fusion_tuning.tuning.tuners.space import Space, like_inductor

CUDA = make_target("cuda")
CUDA_SPEC = TargetSpec("cuda")
# `s1-96` of reports/h200/kernel_code, smaller: 5 x 23 x 23 = 2645 outputs (odd), two Adds.
ODD = Case(
    channels=5, height=24, width=24, window=2, stride=1, prelude=False, tail=2, shared_output=False
)


def test_like_inductor_gives_the_launches_inductor_made_on_the_h200():
    """kernel_code.md: `s1-32` 128 threads, float2 stores; `s1-96` 4 scalar stores, 16 loads."""
    first = like_inductor(32 * 31 * 31)[0]
    assert (first.threads, first.outputs_flat, first.outputs_strided, first.vector) == (
        128,
        2,
        1,
        True,
    )
    first = like_inductor(5 * 95 * 95)[0]
    assert (first.threads, first.outputs_flat, first.outputs_strided, first.vector) == (
        128,
        1,
        4,
        False,
    )


def test_the_seeds_hold_inductors_launches_for_the_kernel():
    space = Space.for_target(ODD, CUDA)
    seeds = [space.config(p) for p in space.seeds()[2:]]
    assert seeds == [p for p in like_inductor(space.kernel.outputs)]
    assert all(space.why_invalid(space.params(p)) is None for p in seeds)


def test_strided_points_are_pruned_where_they_cannot_apply():
    space = Space.for_target(ODD, CUDA)
    strided = {**space.seeds()[0], "outputs_strided": 2}
    assert space.why_invalid({**strided, "outputs_w": 2}) == (
        "outputs a block apart and along W or H at once"
    )
    assert space.why_invalid({**strided, "thread_axis": "outer"}) == (
        "outputs a block apart need consecutive threads on consecutive outputs"
    )
    assert space.why_invalid({**strided, "threads": 1024, "outputs_strided": 8}) == (
        "tile larger than the output"
    )


def _run_without_bindings(case: Case, params: dict, whole: bool) -> list[np.ndarray]:
    """The point's CUDA schedule, its thread bindings dropped, run on the CPU."""
    _, func = fused_function(case, CUDA_SPEC, whole)
    sch = s_tir.Schedule(func)
    Space.for_target(case, CUDA, whole).config(params).schedule(sch, "cuda")
    serial = without_bindings(func, sch.trace)
    library = tvm.compile(kernel_module(serial), target="llvm")
    expected = expected_outputs(case, bias_count(func), 0, whole)
    arguments = [tvm.runtime.tensor(a) for a in _inputs(case, bias_count(func), 0, whole)]
    outputs = [tvm.runtime.tensor(np.full(e.shape, np.nan, "float32")) for e in expected]
    library["main"](*arguments, *outputs)
    return [o.numpy() for o in outputs], expected


@pytest.mark.parametrize("whole", [False, True], ids=["pool", "whole"])
@pytest.mark.parametrize(
    "case",
    [ODD, Case(channels=4, height=12, width=12, window=3, stride=1, prelude=True, tail=3)],
    ids=["odd", "prelude"],
)
@pytest.mark.parametrize("strided,flat", [(2, 1), (4, 1), (8, 1), (2, 2)])
def test_a_strided_cuda_schedule_computes_every_output_right(case, whole, strided, flat):
    space = Space.for_target(case, CUDA, whole)
    params = {**space.seeds()[0], "threads": 32, "unroll": True}
    params |= {"outputs_strided": strided, "outputs_flat": flat}
    assert space.why_invalid(params) is None
    got, expected = _run_without_bindings(case, params, whole)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6)


@pytest.mark.nvcc
def test_inductors_launch_on_an_odd_count_stores_each_output_coalesced(tmp_path):
    """`s1-96`'s launch: 128 threads, 4 scalar stores, no load but the window's."""
    space = Space.for_target(ODD, CUDA, whole=True)
    params = space.params(like_inductor(space.kernel.outputs)[0])
    assert (params["threads"], params["outputs_strided"]) == (128, 2)  # 2645 outputs: 2 each
    params["outputs_strided"] = 4
    _, func = fused_function(ODD, CUDA_SPEC, True)
    scheduled = space.config(params).apply(func, CUDA)
    source = tvm.compile(kernel_module(scheduled), target=CUDA).mod.imports[0].inspect_source()
    assert "__launch_bounds__(128)" in source
    (tmp_path / "k.cu").write_text(source)
    ptx = tmp_path / "k.ptx"
    subprocess.run(["nvcc", "--ptx", "-arch=sm_90", "-o", ptx, tmp_path / "k.cu"], check=True)
    ops = re.findall(r"^\s*(?:@!?%\w+\s+)?((?:ld|st)\.global[\w.]*)", ptx.read_text(), re.M)
    assert [op for op in ops if op.startswith("st.")] == ["st.global.f32"] * 4
    assert sum(op.startswith("ld.") for op in ops) == 4 * 4


def test_metaschedule_has_a_strided_design_per_structure_with_inner_threads():
    """After the designs from before (a stored database's traces replay on them)."""
    _, func = fused_function(ODD, CUDA_SPEC, False)
    designs = template_space("cuda")(s_tir.Schedule(func))
    every = STRUCTURES["cuda"]
    inner = [s for s in every if s["thread_axis"] == "inner"]
    assert len(designs) == 2 * len(every) + len(inner)
    for design in designs[
        -len(inner) :
    ]:  # the thread loop split in three: blocks, strided, threads
        splits = [i for i in design.trace.insts if i.kind.name == "Split"]
        assert any(len(i.inputs) == 4 for i in splits)
