"""large_reduction.py: kernels taken and declined, the CUDA launches, numerics on llvm and
on a GPU."""

import re

import numpy as np
import pytest
import tvm
from tvm import s_tir, te, topi

from pool_fusion_tuning.baselines.anatomy import cuda_source, kernel_launches
from pool_fusion_tuning.baselines.large_reduction import (
    MAX_BLOCKS,
    THREADS,
    LargeReduction,
    analyze_large,
    choose_parts,
)
from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.rules import RULE_LISTS, first_rule
from pool_fusion_tuning.baselines.torch_peer import torch_available
from pool_fusion_tuning.baselines.window_bench import without_bindings

CUDA = make_target("cuda")


def _whole_mean(x):
    return topi.divide(topi.sum(x), float(np.prod([int(d) for d in x.shape])))


# name -> (input shape, TE compute, NumPy reference): the class the rule takes.
TAKEN = {
    "whole-sum": ((8, 16, 16), topi.sum, np.sum),
    "whole-max": ((8, 16, 16), topi.max, np.max),
    "whole-mean-two-stage": ((4, 64, 64), _whole_mean, np.mean),
    "whole-mean-keepdims": (
        (1, 8, 32, 32),
        lambda x: topi.divide(topi.sum(x, axis=(1, 2, 3), keepdims=True), 8192.0),
        lambda a: a.mean(axis=(1, 2, 3), keepdims=True),
    ),
    "two-long-rows": ((2, 16384), lambda x: topi.sum(x, axis=1), lambda a: a.sum(axis=1)),
    "odd-whole-sum": ((7, 9, 11), topi.sum, np.sum),  # one stage, an uneven split
    "odd-rows-max-relu": (  # two stages, an uneven split (a racy stage 1 was wrong on the H200)
        (3, 10007),
        lambda x: topi.nn.relu(topi.max(x, axis=1)),
        lambda a: np.maximum(a.max(axis=1), 0),
    ),
}
# Reductions a block per output already fills the GPU with, or another rule's form.
DECLINED = {
    "global-avg-pool": ((1, 16, 64, 64), lambda x: topi.nn.adaptive_pool(x, (1, 1), "avg")),
    "many-long-rows": ((1024, 4096), lambda x: topi.sum(x, axis=1)),
    "softmax-one-row": ((1, 4096), lambda x: topi.nn.softmax(x, axis=1)),
    "window": (
        (1, 8, 16, 16),
        lambda x: topi.nn.pool2d(x, (2, 2), (2, 2), (1, 1), (0,) * 4, "max"),
    ),
    "elementwise": ((64, 64), topi.exp),
    "whole-argmax": ((8, 64, 64), topi.argmax),  # an (index, value) pair: its build would fail
}


def _func(shape, compute) -> tvm.tirx.PrimFunc:
    x = te.placeholder(shape, name="x")
    return te.create_prim_func([x, compute(x)]).with_attr("global_symbol", "k")


def _scheduled(name: str) -> tvm.IRModule:
    shape, compute, _ = TAKEN[name]
    with CUDA:
        sch = LargeReduction().apply(_func(shape, compute), CUDA, False)
    assert sch is not None, name
    return sch


@pytest.mark.parametrize("name", TAKEN)
def test_the_fixed_list_gives_the_class_the_rule(name):
    shape, compute, _ = TAKEN[name]
    rule, _ = first_rule(_func(shape, compute), CUDA, RULE_LISTS["fixed"](CUDA))
    assert rule == "LargeReduction"


def test_the_default_list_raises_on_a_whole_mean_and_gives_a_whole_sum_one_block():
    """TVM's list: rfactor raises on a whole mean (apache/tvm#20061), a sum gets one block."""
    with pytest.raises(tvm.error.InternalError, match="block_realize == old_block_realize_"):
        first_rule(_func((4, 64, 64), _whole_mean), CUDA, RULE_LISTS["default"](CUDA))
    rule, sch = first_rule(_func((4, 64, 64), topi.sum), CUDA, RULE_LISTS["default"](CUDA))
    assert rule == "Reduction"
    assert [launch["grid"] for launch in kernel_launches(sch.mod, CUDA).values()] == [1]


@pytest.mark.parametrize("name", DECLINED)
def test_what_the_rule_does_not_take_is_declined(name):
    func = _func(*DECLINED[name])
    with CUDA:
        assert LargeReduction().apply(func, CUDA, False) is None
    assert LargeReduction().apply(_func(*TAKEN["whole-sum"][:2]), make_target("llvm"), 0) is None


def test_blocks_per_output_fill_the_gpu_and_no_more():
    assert choose_parts(1, 2048) == 1  # one block's threads reduce 8 terms each
    assert choose_parts(1, 64 * 256 * 256) == THREADS  # stage 2 takes a partial per thread
    assert choose_parts(2, 10**7) == MAX_BLOCKS // 2
    assert choose_parts(16, 4096) == 1  # a block per output: Reduction's, declined
    shape, compute, _ = TAKEN["odd-rows-max-relu"]
    found = analyze_large(s_tir.Schedule(_func(shape, compute)))
    assert (found.outputs, found.terms, len(found.epilogues)) == (3, 10007, 1)


@pytest.mark.parametrize(
    "name, launches",
    [
        ("whole-sum", [(1, THREADS)]),
        ("whole-mean-two-stage", [(4, THREADS), (1, THREADS)]),
        ("whole-mean-keepdims", [(2, THREADS), (1, THREADS)]),
        ("two-long-rows", [(8, THREADS), (2, THREADS)]),
        ("odd-rows-max-relu", [(6, THREADS), (3, THREADS)]),
        ("odd-whole-sum", [(1, THREADS)]),
    ],
)
def test_the_launch_of_each_stage_from_the_cuda_build(name, launches):
    """Stage 1 a block per slice, a partial per thread; the last a block per output, reduced
    by warp shuffles."""
    sch = _scheduled(name)
    found = kernel_launches(sch.mod, CUDA)
    assert [(k["grid"], k["block"]) for k in found.values()] == launches
    source = cuda_source(tvm.compile(sch.mod, target=CUDA))
    bodies = [text for text in source.split("__global__")[1:] if "{" in text.split(";")[0]]
    assert len(bodies) == len(launches)
    assert all(f"__launch_bounds__({THREADS})" in b for b in bodies)
    *first, last = bodies
    assert "__shfl_down_sync" in last
    for body in first:
        writes = re.findall(r"(x_red_rf_ptr\[[^\]]*\]) = ", body)
        assert writes and all("threadIdx.x" in w for w in writes), writes


@pytest.mark.parametrize("name", TAKEN)
def test_every_schedule_is_right_on_llvm(name):
    """The CUDA schedule replayed without its thread bindings, on the CPU, against NumPy."""
    shape, compute, reference = TAKEN[name]
    func = _func(shape, compute)
    cpu = without_bindings(func, _scheduled(name).trace)
    library = tvm.compile(tvm.IRModule({"k": cpu}), target=make_target("llvm"))
    _check(library, shape, reference, tvm.cpu(0))


def _check(library, shape, reference, device) -> np.ndarray:
    data = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
    want = np.asarray(reference(data.astype("float64")), "float32")
    out = tvm.runtime.empty(want.shape, "float32", device)
    library["k"](tvm.runtime.tensor(data, device=device), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
    return data


@pytest.mark.gpu
@pytest.mark.parametrize("name", TAKEN)
def test_every_schedule_is_right_on_the_gpu(name):
    """The CUDA kernels themselves, against NumPy (float64) and PyTorch's reduction."""
    shape, compute, reference = TAKEN[name]
    library = tvm.compile(_scheduled(name).mod, target=CUDA)
    data = _check(library, shape, reference, tvm.cuda(0))
    if torch_available() and name.startswith("whole"):
        import torch

        ours = np.asarray(reference(data)).item()
        theirs = {np.sum: torch.sum, np.max: torch.max}.get(reference, torch.mean)
        assert abs(theirs(torch.from_numpy(data).cuda()).item() - ours) < 1e-3
