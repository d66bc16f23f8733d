"""TVM's own kind of test for the window rule, as the patch ships it.

A `Before`/`After` TVMScript pair for each path of the schedule, one parametrized test over
them (TVM's dlight tests compare the rule's output with `tvm.ir.assert_structural_equal`), the
kernels the rule declines left as they were, a Vulkan launch, and the numerics on a CUDA GPU
over its WORKLOADS (the issue's kernel with its two outputs among them). Each `Before` is a
kernel as the CUDA pipeline makes it (`EXAMPLES`, in tvm_examples.py), each `After` the rule's
real output when the file was rendered; the
project's tests run the rendered file against the installed TVM with the rule registered as the
patch registers it, and fail on a rendering that is not today's. It is kept xz-compressed (79
KB of TVMScript, 9 KB packed: the project's tree travels to the GPU machine with little room);
`tune upstream` writes it out as a plain file. Render it again after a change to the rule with

    python -m pool_fusion_tuning.tuning.upstream.tvm_test

The rule's launch depends on the target alone, so the `After` modules hold on any machine. The
issue's Relax graph through the default CUDA pipeline (one thread per output: the rule's place
in the list is what makes it so) is a test of relax's pipelines instead (PIPELINE_ADDITION).
The issue's graph and the launch walk are the PR's repro script's text (pr_repro.py).
"""

from __future__ import annotations

import lzma
import textwrap
from pathlib import Path

import tvm

from . import pr_repro
from .rule import ASF_HEADER
from .tvm_examples import EXAMPLES, TARGET, Example, scheduled

TVM_TEST = Path(__file__).parent / "tvm_tests" / "test_gpu_window_reduction.py.xz"
INDENT = " " * 4


HEAD = f"""\
# pylint: disable=missing-docstring
# ruff: noqa: E501
\"\"\"Tests of dlight's WindowReduction rule: one thread per output of a small-window reduction
(pooling, depthwise convolution) with its elementwise epilogue.\"\"\"

import numpy as np
import pytest
import tvm_ffi

import tvm
import tvm.testing
from tvm import te, tirx
from tvm.ir import IRModule, assert_structural_equal
from tvm.s_tir import dlight as dl
from tvm.script import ir as I
from tvm.script import tirx as T
from tvm.target import Target
from tvm.testing import env

TARGET = Target("{TARGET}")


def _schedule(mod: IRModule) -> IRModule:
    with TARGET:
        rule = dl.gpu.WindowReduction()
        return dl.ApplyDefaultSchedule(rule)(mod)  # pylint: disable=not-callable
"""

# TVMScript as TVM's tests write a symbolic shape (0.27's printer gives it as a module-level
# TypeVar, which does not parse back): the rule must decline it.
SYMBOLIC = """

# A batch of symbolic size: the launch cannot be sized from it, the rule declines.
@I.ir_module(s_tir=True)
class SymbolicShapeBefore:
    @T.prim_func(s_tir=True)
    def main(p_x: T.handle, p_out: T.handle):
        T.func_attr({"tirx.noalias": True})
        n = T.int64()
        x = T.match_buffer(p_x, (n, T.int64(8), T.int64(16), T.int64(16)))
        T_add = T.match_buffer(p_out, (n, T.int64(8), T.int64(8), T.int64(8)))
        # with T.sblock("root"):
        pool_max = T.sblock_alloc_buffer((n, T.int64(8), T.int64(8), T.int64(8)))
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(n, T.int64(8), T.int64(8), T.int64(8), T.int64(2), T.int64(2)):
            with T.sblock("pool_max"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                T.writes(pool_max[v_ax0, v_ax1, v_ax2, v_ax3])
                with T.init():
                    pool_max[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-3.4028234663852886e38)
                pool_max[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max[v_ax0, v_ax1, v_ax2, v_ax3], x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
        for ax0, ax1, ax2, ax3 in T.grid(n, T.int64(8), T.int64(8), T.int64(8)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(pool_max[v_ax0, v_ax1, v_ax2, v_ax3])
                T.writes(T_add[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add[v_ax0, v_ax1, v_ax2, v_ax3] = pool_max[v_ax0, v_ax1, v_ax2, v_ax3] + T.float32(1.0)
"""  # noqa: E501

# The launch walk the Vulkan test uses (the PR's repro script's too).
LAUNCH = "\n" + pr_repro.LAUNCH

# The issue's graph through the default CUDA pipeline, no GPU needed, as a test of relax's
# pipelines (PIPELINE_TEST, where that suite tests the CUDA pipeline's rules already), added
# before its `if __name__` block (patch.py).
PIPELINE_TEST_NAME = "test_default_cuda_pipeline_one_thread_per_pool_output"
PIPELINE_ADDITION = (
    pr_repro.ISSUE_GRAPH.lstrip("\n")
    + "\n"
    + pr_repro.LAUNCH
    + f"""

def {PIPELINE_TEST_NAME}():
    # apache/tvm#20401's graph (no GPU needed): the fused max pool and the Adds after it get one
    # thread per output of the pool, not a block of threads each.
    target = tvm.target.Target("nvidia/geforce-rtx-3090-ti")
    with target:
        mod = relax.pipeline.get_default_pipeline(target)(_issue_graph())
    (pool,) = [gv for gv in mod.functions if "pool" in gv.name_hint]
    launch = _launch(mod[pool])
    assert launch["blockIdx.x"] * launch["threadIdx.x"] == 144 * 32 * 32

"""
)

TAIL = """

def _max_pool_2x2(channels):
    x = te.placeholder((1, channels, 64, 64), name="x")
    rh, rw = te.reduce_axis((0, 2), "rh"), te.reduce_axis((0, 2), "rw")
    pool = te.compute(
        (1, channels, 32, 32),
        lambda n, c, h, w: te.max(x[n, c, h * 2 + rh, w * 2 + rw], axis=[rh, rw]),
        "pool_max",
    )
    return x, pool


def _pooled_2x2(a):
    return a.reshape(1, -1, 32, 2, 32, 2).max(axis=(3, 5))


def _max_pool_add():
    x, pool = _max_pool_2x2(32)
    out = te.compute(pool.shape, lambda *i: pool(*i) + tirx.const(1, "float32"), "T_add")
    return te.create_prim_func([x, out]), (1, 32, 64, 64), lambda a: (_pooled_2x2(a) + 1,)


def _max_pool_two_adds():
    # The issue's kernel: 144 channels, an Add after the pool and one after that, both outputs.
    x, pool = _max_pool_2x2(144)
    first = te.compute(pool.shape, lambda *i: pool(*i) + tirx.const(1, "float32"), "T_add")
    second = te.compute(pool.shape, lambda *i: first(*i) + tirx.const(1, "float32"), "T_add_1")

    def reference(a):
        first = _pooled_2x2(a) + 1
        return first, first + 1

    return te.create_prim_func([x, first, second]), (1, 144, 64, 64), reference


def _avg_pool_relu():
    # 35 rows of outputs, two per thread: the last row alone, under a predicate.
    x = te.placeholder((1, 64, 35, 35), name="x")
    padded = te.compute(
        (1, 64, 37, 37),
        lambda n, c, h, w: tirx.if_then_else(
            tirx.all(h >= 1, h < 36, w >= 1, w < 36),
            x[n, c, h - 1, w - 1],
            tirx.const(0, "float32"),
        ),
        "pad_temp",
    )
    rh, rw = te.reduce_axis((0, 3), "rh"), te.reduce_axis((0, 3), "rw")
    total = te.compute(
        (1, 64, 35, 35),
        lambda n, c, h, w: te.sum(padded[n, c, h + rh, w + rw], axis=[rh, rw]),
        "pool_sum",
    )
    out = te.compute(
        total.shape,
        lambda *i: tirx.max(total(*i) / tirx.const(9, "float32"), tirx.const(0, "float32")),
        "relu",
    )

    def reference(a):
        padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        total = sum(padded[:, :, i : i + 35, j : j + 35] for i in range(3) for j in range(3))
        return (np.maximum(total / 9, 0),)

    return te.create_prim_func([x, out]), (1, 64, 35, 35), reference


def _nhwc_max_pool_relu():
    # NHWC: consecutive threads take consecutive channels.
    x = te.placeholder((1, 16, 16, 32), name="x")
    rh, rw = te.reduce_axis((0, 3), "rh"), te.reduce_axis((0, 3), "rw")
    pool = te.compute(
        (1, 7, 7, 32),
        lambda n, h, w, c: te.max(x[n, h * 2 + rh, w * 2 + rw, c], axis=[rh, rw]),
        "pool_max",
    )
    out = te.compute(pool.shape, lambda *i: tirx.max(pool(*i), tirx.const(0, "float32")), "relu")

    def reference(a):
        windows = [a[:, i : i + 13 : 2, j : j + 13 : 2, :] for i in range(3) for j in range(3)]
        return (np.maximum(np.max(windows, axis=0), 0),)

    return te.create_prim_func([x, out]), (1, 16, 16, 32), reference


def _lone_depthwise_conv():
    # A depthwise 3x3 convolution with nothing after it: the value is copied out of a register.
    x = te.placeholder((1, 16, 18, 18), name="x")
    rh, rw = te.reduce_axis((0, 3), "rh"), te.reduce_axis((0, 3), "rw")

    def weight(c, i, j):
        return (c % 3 + i * 3 + j).astype("float32") * 0.125

    out = te.compute(
        (1, 16, 16, 16),
        lambda n, c, h, w: te.sum(x[n, c, h + rh, w + rw] * weight(c, rh, rw), axis=[rh, rw]),
        "depthwise_conv2d",
    )

    def reference(a):
        c = np.arange(16).reshape(1, 16, 1, 1) % 3
        total = sum(
            a[:, :, i : i + 16, j : j + 16] * (c + i * 3 + j) * 0.125
            for i in range(3)
            for j in range(3)
        )
        return (total,)

    return te.create_prim_func([x, out]), (1, 16, 18, 18), reference


def test_vulkan_launch_within_target_limits():
    # Vulkan: warps of 1 thread and blocks of at most 256 (the target's own limits).
    target = Target("vulkan")
    func, _, _ = _max_pool_add()
    with target:
        mod = dl.ApplyDefaultSchedule(dl.gpu.WindowReduction())(IRModule({"main": func}))
    launch = _launch(mod["main"])
    assert launch["threadIdx.x"] <= int(target.attrs["max_threads_per_block"])
    assert launch["blockIdx.x"] * launch["threadIdx.x"] == 32 * 32 * 32


@pytest.mark.gpu
@pytest.mark.skipif(not env.has_cuda(), reason="need cuda")
def test_view_one_element_in_on_cuda():
    # An input that starts one element into its allocation: the rule cannot prove its rows
    # aligned, so it loads them as scalars, and the result is right.
    device = tvm.cuda()
    target = Target.from_device(device)
    with target:
        mod = dl.ApplyDefaultSchedule(dl.gpu.WindowReduction())(UnalignedViewBefore)
    kernel = tvm.compile(mod, target=target)
    data = np.random.default_rng(0).uniform(-1, 1, 1 + 8 * 16 * 16).astype("float32")
    view = tvm.runtime.tensor(data, device)._create_view((1, 8, 16, 16), "float32", 4)
    got = tvm.runtime.empty((1, 8, 8, 8), "float32", device)
    kernel["main"](view, got)
    want = data[1:].reshape(1, 8, 8, 2, 8, 2).max(axis=(3, 5)) + 1
    tvm.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


# Each gives its kernel, its input's shape and a reference of its outputs.
WORKLOADS = [
    _max_pool_add,
    _max_pool_two_adds,
    _avg_pool_relu,
    _nhwc_max_pool_relu,
    _lone_depthwise_conv,
]


@pytest.mark.gpu
@pytest.mark.skipif(not env.has_cuda(), reason="need cuda")
@pytest.mark.parametrize("workload", WORKLOADS)
def test_numerics_on_cuda(workload):
    func, shape, reference = workload()
    device = tvm.cuda()
    target = Target.from_device(device)
    with target:
        mod = dl.ApplyDefaultSchedule(dl.gpu.WindowReduction())(IRModule({"main": func}))
    assert mod["main"].attrs["tirx.is_scheduled"]
    kernel = tvm.compile(mod, target=target)
    data = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
    wants = reference(data)
    gots = [tvm.runtime.empty(want.shape, "float32", device) for want in wants]
    kernel["main"](tvm.runtime.tensor(data, device), *gots)
    for got, want in zip(gots, wants):
        tvm.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    tvm.testing.main()
"""


def _class_name(example: Example, part: str) -> str:
    return "".join(word.capitalize() for word in example.name.split("_")) + part


def _module_class(mod: tvm.IRModule, name: str) -> str:
    """The module's TVMScript as a module-level `class name`, as TVM's dlight tests write it."""
    lines = [line for line in mod.script().splitlines() if not line.startswith("# from ")]
    text = "\n".join(lines).strip()
    return text.replace("@I.ir_module\nclass Module:", f"@I.ir_module(s_tir=True)\nclass {name}:")


def _modules(example: Example) -> str:
    """The example's Before module (and After, where the rule schedules it), its comment above."""
    before = example.before()
    before_class = _module_class(before, _class_name(example, "Before"))  # before scheduling
    after = scheduled(before)
    if ("tirx.is_scheduled" in after["main"].attrs) != example.scheduled:
        taken = "declines" if example.scheduled else "schedules"
        raise AssertionError(f"the rule {taken} {example.name}: change EXAMPLES")
    comment = textwrap.indent(example.comment, "# ")
    modules = [before_class]
    if example.scheduled:
        modules.append(_module_class(after, _class_name(example, "After")))
    return f"\n\n{comment}\n" + "\n\n\n".join(modules) + "\n"


def _parametrize(names: str, params: list[str]) -> str:
    """`pytest.mark.parametrize` over `params` (`pytest.param(...)`), as ruff formats it."""
    lines = []
    for param in params:
        if len(f"{INDENT * 2}{param},") <= 100:
            lines.append(f"{INDENT * 2}{param},\n")
        else:  # the arguments on a line of their own
            inner = param.removeprefix("pytest.param(").removesuffix(")")
            lines.append(f"{INDENT * 2}pytest.param(\n{INDENT * 3}{inner}\n{INDENT * 2}),\n")
    return (
        f'@pytest.mark.parametrize(\n{INDENT}"{names}",\n{INDENT}[\n'
        + "".join(lines)
        + f"{INDENT}],\n)\n"
    )


def render() -> str:
    """The test file as the patch ships it."""
    modules = "".join(_modules(example) for example in EXAMPLES)
    scheduled_params = [
        f'pytest.param({_class_name(e, "Before")}, {_class_name(e, "After")}, id="{e.name}")'
        for e in EXAMPLES
        if e.scheduled
    ]
    declined_params = [
        f'pytest.param({_class_name(e, "Before")}, id="{e.name}")'
        for e in EXAMPLES
        if not e.scheduled
    ] + ['pytest.param(SymbolicShapeBefore, id="symbolic_shape")']
    tests = (
        "\n\n"
        + _parametrize("before, after", scheduled_params)
        + "def test_scheduled(before, after):\n"
        + f"{INDENT}assert_structural_equal(_schedule(before), after)\n\n\n"
        + _parametrize("before", declined_params)
        + "def test_declined(before):\n"
        + f"{INDENT}unchanged = tvm.ir.load_json(tvm.ir.save_json(before))\n"
        + f"{INDENT}assert_structural_equal(_schedule(before), unchanged)\n"
    )
    return (
        ASF_HEADER
        + HEAD
        + "\n\n# fmt: off"
        + modules
        + SYMBOLIC
        + "# fmt: on\n"
        + tests
        + LAUNCH
        + TAIL
    )


def shipped_test() -> str:
    """The checked-in rendering, as TVM gets it."""
    return lzma.decompress(TVM_TEST.read_bytes()).decode()


if __name__ == "__main__":
    TVM_TEST.write_bytes(lzma.compress(render().encode(), preset=9 | lzma.PRESET_EXTREME))
