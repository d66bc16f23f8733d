"""The cases of TVM's test of the window rule: the kernels each `Before` module is made from.

One `Example` for each path of the schedule and for a kernel the rule declines, each a kernel as
the CUDA pipeline makes it (most of them window_bench's, at small shapes), and `scheduled`, the
rule applied alone for the target of TVM's dlight tests: tvm_test.py renders both modules of each
into the test file. An example the rule no longer treats as declared stops the rendering.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import tvm
from tvm import te, tirx
from tvm.relax import op as R
from tvm.s_tir import dlight as dl

from pool_fusion_tuning.baselines.window_kernels import KERNELS, Kernel, fused, reduction_function
from pool_fusion_tuning.baselines.window_reduction import WindowReduction

TARGET = "nvidia/geforce-rtx-3090-ti"  # the target of TVM's own dlight tests


@dataclass(frozen=True)
class Example:
    """One test: its name, what it shows (comment lines), and its `Before` module."""

    name: str
    comment: str
    before: Callable[[], tvm.IRModule]
    scheduled: bool = True  # False: the rule declines, the module is left as it was


def _main(func: tirx.PrimFunc) -> tvm.IRModule:
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def _kernel(name: str, **inputs) -> Callable[[], tvm.IRModule]:
    """The reduction's function of a window_bench kernel at the given input shapes."""
    kernel = dataclasses.replace(KERNELS[name], inputs=inputs)
    return lambda: _graph_kernel(kernel)


def _graph_kernel(kernel: Kernel) -> tvm.IRModule:
    mod = fused(kernel)
    return _main(mod[reduction_function(mod)])


def _relu(emit, value):
    return emit(R.nn.relu(value))


def _no_reference(*tensors):
    raise NotImplementedError("TVM's test renders the schedule only; no reference is run")


def _padded_max_pool() -> tvm.IRModule:
    """MaxPool2d 3x3, stride 2, padding 1, then ReLU (a ResNet stem's pool)."""
    return _graph_kernel(
        Kernel(
            "padded",
            "",
            {"x": (1, 64, 64, 64)},
            lambda emit, x: _relu(emit, emit(R.nn.max_pool2d(x, 3, 2, 1))),
            reference=_no_reference,
        )
    )


def _max_pool(shape: tuple[int, int, int, int], window: int):
    """The input `x` of `shape` and its MaxPool2d window x window, stride window, unpadded."""
    x = te.placeholder(shape, name="x")
    rh, rw = te.reduce_axis((0, window), "rh"), te.reduce_axis((0, window), "rw")
    n, c, h, w = shape
    pool = te.compute(
        (n, c, h // window, w // window),
        lambda n, c, h, w: te.max(x[n, c, h * window + rh, w * window + rw], axis=[rh, rw]),
        "pool_max",
    )
    return x, pool


def _several_outputs() -> tvm.IRModule:
    """A 2x2 max pool + 1, returned, and that sum + 2 returned too: the issue's graph with its
    shared output, as one kernel."""
    x, pool = _max_pool((1, 64, 64, 64), 2)
    first = te.compute(pool.shape, lambda *i: pool(*i) + tirx.const(1, "float32"), "T_add")
    second = te.compute(pool.shape, lambda *i: first(*i) + tirx.const(2, "float32"), "T_add_1")
    return _main(te.create_prim_func([x, first, second]))


def _gather() -> tvm.IRModule:
    """`table[idx[i, k], j]` summed over k, + 1: the index is data, no window."""
    table, idx = te.placeholder((32, 8), name="table"), te.placeholder((8, 3), "int32", "idx")
    k = te.reduce_axis((0, 3), "k")
    total = te.compute((8, 8), lambda i, j: te.sum(table[idx[i, k], j], axis=[k]), "total")
    out = te.compute((8, 8), lambda *i: total(*i) + tirx.const(1, "float32"), "T_add")
    return _main(te.create_prim_func([table, idx, out]))


def _max_pool_9x9() -> tvm.IRModule:
    """MaxPool2d 9x9, stride 9, + 1: 81 elements a window, over MAX_WINDOW."""
    x, pool = _max_pool((1, 4, 18, 18), 9)
    out = te.compute(pool.shape, lambda *i: pool(*i) + tirx.const(1, "float32"), "T_add")
    return _main(te.create_prim_func([x, out]))


# MaxPool2d 2x2 + 1 over an input whose offset is symbolic and known a multiple of nothing
# (offset_factor=1), as a view into a larger allocation is.
UNALIGNED_VIEW = """
# from tvm.script import tirx as T
@T.prim_func(s_tir=True)
def main(p_x: T.handle, T_add: T.Buffer((1, 8, 8, 8), "float32")):
    x = T.match_buffer(p_x, (1, 8, 16, 16), offset_factor=1)
    pool_max = T.sblock_alloc_buffer((1, 8, 8, 8))
    for n, c, h, w, rh, rw in T.grid(1, 8, 8, 8, 2, 2):
        with T.sblock("pool_max"):
            vn, vc, vh, vw, vrh, vrw = T.axis.remap("SSSSRR", [n, c, h, w, rh, rw])
            with T.init():
                pool_max[vn, vc, vh, vw] = T.float32(-3.4028234663852886e38)
            pool_max[vn, vc, vh, vw] = T.max(
                pool_max[vn, vc, vh, vw], x[vn, vc, vh * 2 + vrh, vw * 2 + vrw]
            )
    for n, c, h, w in T.grid(1, 8, 8, 8):
        with T.sblock("T_add"):
            vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, w])
            T_add[vn, vc, vh, vw] = pool_max[vn, vc, vh, vw] + T.float32(1.0)
"""


def _unaligned_view() -> tvm.IRModule:
    return _main(tvm.script.from_source(UNALIGNED_VIEW))


EXAMPLES = [
    Example(
        "max_pool_add",
        "MaxPool2d 2x2, stride 2, and the Add after it, fused (apache/tvm#20401): one thread\n"
        "per output, the window's rows loaded from memory as vectors.",
        _kernel("issue-maxpool-add", x=(1, 64, 64, 64)),
    ),
    Example(
        "padded_max_pool",
        "MaxPool2d 3x3, stride 2, padding 1, then ReLU: the padding is inlined into the\n"
        "window's loads; the windows overlap too little to share rows.",
        _padded_max_pool,
    ),
    Example(
        "overlapping_windows",
        "AvgPool2d 3x3, stride 1, padding 1 (Inception's): each input row is read by three\n"
        "windows, so a thread computes two rows of outputs.",
        _kernel("inception-avgpool3-pad", x=(1, 128, 32, 32)),
    ),
    Example(
        "average_pool",
        "AvgPool2d 2x2 + ReLU (DenseNet's transition): Reduction would give each output a\n"
        "block of 4 threads; the sum, the division and the ReLU in one thread.",
        _kernel("densenet-avgpool-relu", x=(1, 64, 64, 64)),
    ),
    Example(
        "several_outputs",
        "Two outputs, the second computed from the first: the thread that reduces a window\n"
        "writes both.",
        _several_outputs,
    ),
    Example(
        "depthwise_conv_epilogue",
        "Depthwise Conv2d 3x3 + BatchNorm (decomposed for inference) + ReLU6 (MobileNetV2):\n"
        "the same schedule for a convolution's window, its epilogue in place.",
        _kernel(
            "mobilenet-dw3-bn-relu6",
            x=(1, 64, 64, 64),
            weight=(64, 1, 3, 3),
            **{name: (64,) for name in ("gamma", "beta", "mean", "var")},
        ),
    ),
    Example(
        "lone_depthwise_conv",
        "Depthwise Conv2d 5x5 with nothing after it and no padding (NASNet's, padded apart):\n"
        "Reduction would give each output a block of 16 threads; the value is kept in a\n"
        "register and copied out.",
        _kernel("nasnet-dw5-lone", x=(1, 32, 36, 36), weight=(32, 1, 5, 5)),
    ),
    Example(
        "nhwc",
        "MaxPool2d 3x3, stride 2, padding 1 + ReLU in NHWC: consecutive threads take\n"
        "consecutive channels.",
        _kernel("nhwc-maxpool3-relu", x=(1, 64, 64, 64)),
    ),
    Example(
        "unaligned_view",
        "MaxPool2d 2x2 + Add over an input that may start anywhere in its allocation (a view):\n"
        "its rows load as scalars, their alignment unknown.",
        _unaligned_view,
    ),
    Example(
        "gather_declined",
        "A sum over k of table[idx[i, k], j]: the index is read from memory, no window.",
        _gather,
        scheduled=False,
    ),
    Example(
        "window_81_declined",
        "MaxPool2d 9x9: 81 elements a window, more than MAX_WINDOW, left to GeneralReduction.",
        _max_pool_9x9,
        scheduled=False,
    ),
    Example(
        "window_1_declined",
        "AvgPool2d 1x1: nothing is reduced, the rule leaves it to Fallback.",
        _kernel("control-window1-avgpool", x=(1, 8, 6, 6)),
        scheduled=False,
    ),
]


def scheduled(mod: tvm.IRModule) -> tvm.IRModule:
    """`mod` as ApplyDefaultSchedule with the window rule alone gives it for TARGET (the pass
    changes `mod` itself too)."""
    with tvm.target.Target(TARGET):
        return dl.ApplyDefaultSchedule(WindowReduction())(mod)
