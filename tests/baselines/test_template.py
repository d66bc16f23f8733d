"""The schedule template over the whole space: every unpruned point builds and is right, for
the fused pool kernel and for the one kernel of the whole graph."""

import pytest
import tvm
from conftest import DEFAULT

from pool_fusion_tuning.baselines.anatomy import ptxas_resources
from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.kernel import fused_function, kernel_module
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol
from pool_fusion_tuning.tuning.tuners.space import Space

CUDA = make_target("cuda")
QUICK = KernelProtocol(number=1, repeat=1, min_repeat_ms=0, checks=1)


def test_every_valid_cpu_point_builds_and_matches_the_reference(case):
    space = Space(case, "llvm")
    points = space.valid_points()
    assert points, "the space has no valid point"
    with CandidateEvaluator(case, TargetSpec("llvm"), QUICK, workers=2) as evaluator:
        records = evaluator.evaluate([space.config(p) for p in points])
    failed = [(p, r) for p, r in zip(points, records) if r["status"] != "ok"]
    assert not failed, failed[:3]


def test_a_spread_of_cpu_points_of_the_whole_graph_kernel_is_right(case):
    space = Space(case, "llvm", whole=True)
    points = space.valid_points()[::5]
    with CandidateEvaluator(case, TargetSpec("llvm"), QUICK, workers=2, whole=True) as evaluator:
        records = evaluator.evaluate([space.config(p) for p in points])
    failed = [(p, r) for p, r in zip(points, records) if r["status"] != "ok"]
    assert not failed, failed[:3]


def _cuda_source(case, params, whole=False):
    target = make_target("cuda")
    _, func = fused_function(case, TargetSpec("cuda"), whole)
    scheduled = Space.for_target(case, target, whole).config(params).apply(func, target)
    executable = tvm.compile(kernel_module(scheduled), target=target)
    return executable.mod.imports[0].inspect_source()


@pytest.mark.nvcc
def test_valid_cuda_points_compile_with_nvcc():
    points = Space.for_target(DEFAULT, CUDA).valid_points()[::111]  # a spread over every knob
    for params in points:
        resources = ptxas_resources(_cuda_source(DEFAULT, params))
        assert resources["main_kernel"]["shared_bytes"] <= 49152, params


@pytest.mark.nvcc
def test_valid_cuda_points_of_the_whole_graph_kernel_compile_with_nvcc():
    space = Space.for_target(DEFAULT, CUDA, whole=True)
    assert (
        space.why_invalid({**space.seeds()[0], "outputs_w": 2, "vector": True})
        == "no vector loads from an inlined prologue"
    )
    for params in space.valid_points()[::167]:
        resources = ptxas_resources(_cuda_source(DEFAULT, params, whole=True))
        assert resources["main_kernel"]["shared_bytes"] <= 49152, params


@pytest.mark.nvcc
def test_pruned_shared_memory_points_really_do_not_fit():
    space = Space.for_target(DEFAULT, CUDA)
    pruned = [p for p in space.points() if space.why_invalid(p) == "shared memory over the limit"]
    assert pruned
    with pytest.raises(RuntimeError, match="too much shared data"):
        ptxas_resources(_cuda_source(DEFAULT, pruned[0]))


def test_seeds_are_serial_closest_to_default_and_like_inductor():
    seeds = Space.for_target(DEFAULT, CUDA).seeds()
    assert seeds[0] == {
        "threads": 256,
        "outputs_w": 1,
        "outputs_h": 1,
        "thread_axis": "inner",
        "unroll": False,
        "vector": False,
        "pooled_scope": "local",
        "outputs_flat": 1,
        "outputs_strided": 1,
        "masked_loads": False,
    }
    assert seeds[1]["pooled_scope"] == "shared"
    # 147456 outputs: inductor's blocks of 1024 on 128 threads (two float4 stores, a block
    # apart) and of 512 on 256 (one float2)
    launches = [(s["threads"], s["outputs_flat"], s["outputs_strided"], s["vector"]) for s in seeds]
    assert launches[2:] == [(128, 4, 2, True), (256, 2, 1, True)]
    assert [s["masked_loads"] for s in seeds] == [False, False, True, True]  # Triton masks
