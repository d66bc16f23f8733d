"""The small-window reduction kernels (the class of apache/tvm#20401) that `window_bench`
compares the rule lists on: each a small Relax graph with the shapes of a layer of a real model
(or a control that no list should change), the same computation in PyTorch for reference, and
the graph through the CUDA pipeline up to default scheduling with the one function that reduces.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax, s_tir, tirx
from tvm.relax import op as R

from .graph import float32_scalar
from .pipeline import make_target, unscheduled


@dataclass(frozen=True)
class Kernel:
    """A graph with one reduction: `inputs` (name -> shape, the data first), `graph(emit, *vars)`
    in Relax ops, and `reference(*tensors)` the same computation in PyTorch (None for a graph
    that is only scheduled, as TVM's test of the rule builds some)."""

    name: str
    where: str  # the model and layer it comes from, or why it is a control
    inputs: dict
    graph: Callable
    reference: Callable | None

    def module(self) -> tvm.IRModule:
        """The Relax module, BatchNorm decomposed as `static_shape_tuning` begins."""
        bb = relax.BlockBuilder()
        params = [relax.Var(n, relax.TensorType(s, "float32")) for n, s in self.inputs.items()]
        with bb.function("main", params):
            with bb.dataflow():
                out = bb.emit_output(self.graph(bb.emit, *params))
            bb.emit_func_output(out)
        decompose = [
            relax.transform.DecomposeOpsForInference(),
            relax.transform.CanonicalizeBindings(),
        ]
        return tvm.transform.Sequential(decompose)(bb.get())

    def arrays(self, seed: int = 0) -> list[np.ndarray]:
        """Random inputs in [-1, 1], BatchNorm's variance in [0.5, 1.5]."""
        rng = np.random.default_rng(seed)
        arrays = []
        for name, shape in self.inputs.items():
            low, high = (0.5, 1.5) if name == "var" else (-1, 1)
            arrays.append(rng.uniform(low, high, shape).astype("float32"))
        return arrays


def reference_torch():
    """PyTorch, imported where a reference is computed (it is an optional dependency)."""
    try:
        import torch
    except ImportError:
        raise SystemExit("the reference results need PyTorch: pip install torch") from None
    return torch


def _F():
    """torch.nn.functional, as PyTorch code names it."""
    return reference_torch().nn.functional


def _one():
    return float32_scalar(1.0)


def _conv(emit, x, weight, padding):
    """Conv2d with as many groups as the weight's input channels divide the data's."""
    groups = int(x.ty.shape[1]) // int(weight.ty.shape[1])
    return emit(R.nn.conv2d(x, weight, padding=padding, groups=groups))


def _torch_conv(x, weight, bias=None, padding=0):
    return _F().conv2d(x, weight, bias, padding=padding, groups=x.shape[1] // weight.shape[1])


def _batch_norm(emit, value, gamma, beta, mean, var):
    return emit(relax.TupleGetItem(emit(R.nn.batch_norm(value, gamma, beta, mean, var, 1)), 0))


def _torch_batch_norm(value, gamma, beta, mean, var):
    return _F().batch_norm(value, mean, var, gamma, beta, training=False, eps=1e-5)


def _with_batch_norm(data: tuple, weight: tuple) -> dict:
    parameters = {name: (weight[0],) for name in ("gamma", "beta", "mean", "var")}
    return {"x": data, "weight": weight, **parameters}


_KERNELS = [
    Kernel(
        "issue-maxpool-add",
        "apache/tvm#20401: MaxPool2d 2x2 + Add, the issue's fused kernel",
        {"x": (1, 144, 64, 64)},
        lambda emit, x: emit(R.add(emit(R.nn.max_pool2d(x, 2, 2)), _one())),
        lambda x: _F().max_pool2d(x, 2, 2) + 1,
    ),
    Kernel(
        "densenet-avgpool-relu",
        "DenseNet-121 transition: AvgPool2d 2x2 + ReLU, batch 8",
        {"x": (8, 128, 56, 56)},
        lambda emit, x: emit(R.nn.relu(emit(R.nn.avg_pool2d(x, 2, 2)))),
        lambda x: _F().relu(_F().avg_pool2d(x, 2, 2)),
    ),
    Kernel(
        "inception-avgpool3-pad",
        "Inception v3 Mixed_5b: AvgPool2d 3x3, stride 1, padding 1",
        {"x": (1, 192, 35, 35)},
        lambda emit, x: emit(R.nn.avg_pool2d(x, 3, 1, 1, count_include_pad=True)),
        lambda x: _F().avg_pool2d(x, 3, 1, 1),
    ),
    Kernel(
        "convnext-dw7-bias",
        "ConvNeXt-tiny stage 1: depthwise Conv2d 7x7 + bias",
        {"x": (1, 96, 56, 56), "weight": (96, 1, 7, 7), "bias": (96,)},
        lambda emit, x, w, b: emit(R.add(_conv(emit, x, w, 3), emit(R.reshape(b, (1, -1, 1, 1))))),
        lambda x, w, b: _torch_conv(x, w, b, padding=3),
    ),
    Kernel(
        "mobilenet-dw3-bn-relu6",
        "MobileNetV2 block 3: depthwise Conv2d 3x3 + BatchNorm + ReLU6",
        _with_batch_norm((1, 144, 56, 56), (144, 1, 3, 3)),
        lambda emit, x, w, *bn: emit(R.clip(_batch_norm(emit, _conv(emit, x, w, 1), *bn), 0, 6)),
        lambda x, w, *bn: _F().relu6(_torch_batch_norm(_torch_conv(x, w, padding=1), *bn)),
    ),
    Kernel(
        "resnext-group3-bn-relu",
        "ResNeXt-50 32x4d stage 1: grouped Conv2d 3x3 (groups of 4) + BatchNorm + ReLU",
        _with_batch_norm((1, 128, 56, 56), (128, 4, 3, 3)),
        lambda emit, x, w, *bn: emit(R.nn.relu(_batch_norm(emit, _conv(emit, x, w, 1), *bn))),
        lambda x, w, *bn: _F().relu(_torch_batch_norm(_torch_conv(x, w, padding=1), *bn)),
    ),
    Kernel(
        "maxpool1d-relu",
        "1-D MaxPool 3, stride 2, padding 1 + ReLU, batch 8",
        {"x": (8, 64, 4096)},
        lambda emit, x: emit(R.nn.relu(emit(R.nn.max_pool1d(x, 3, 2, 1)))),
        lambda x: _F().relu(_F().max_pool1d(x, 3, 2, 1)),
    ),
    Kernel(
        "maxpool3d-add",
        "3-D MaxPool 3x3x3, stride 2, padding 1 + Add (video networks)",
        {"x": (1, 64, 16, 56, 56)},
        lambda emit, x: emit(R.add(emit(R.nn.max_pool3d(x, 3, 2, 1)), _one())),
        lambda x: _F().max_pool3d(x, 3, 2, 1) + 1,
    ),
    Kernel(
        "nhwc-maxpool3-relu",
        "ResNet stem in NHWC: MaxPool2d 3x3, stride 2, padding 1 + ReLU, batch 8",
        {"x": (8, 112, 112, 64)},
        lambda emit, x: emit(R.nn.relu(emit(R.nn.max_pool2d(x, 3, 2, 1, layout="NHWC")))),
        lambda x: _F().relu(_F().max_pool2d(x.permute(0, 3, 1, 2), 3, 2, 1)).permute(0, 2, 3, 1),
    ),
    Kernel(
        "nasnet-dw5-lone",
        "NASNet-A large: depthwise Conv2d 5x5, padded apart, alone (Reduction: 16 threads each)",
        {"x": (1, 96, 87, 87), "weight": (96, 1, 5, 5)},
        lambda emit, x, w: _conv(emit, x, w, 0),
        lambda x, w: _torch_conv(x, w),
    ),
    Kernel(
        "lone-maxpool3",
        "ResNet stem: MaxPool2d 3x3, stride 2, padding 1, alone (Fallback: a thread per output)",
        {"x": (1, 64, 112, 112)},
        lambda emit, x: emit(R.nn.max_pool2d(x, 3, 2, 1)),
        lambda x: _F().max_pool2d(x, 3, 2, 1),
    ),
    Kernel(
        "control-global-avgpool",
        "control: ResNet-50's global AvgPool (7x7, a row reduction: Reduction's)",
        {"x": (1, 2048, 7, 7)},
        lambda emit, x: emit(R.nn.adaptive_avg_pool2d(x, (1, 1))),
        lambda x: _F().adaptive_avg_pool2d(x, (1, 1)),
    ),
    Kernel(
        "control-window1-avgpool",
        "control: AvgPool2d 1x1 + Add (window 1: Fallback's; TVM 0.27 computes it as x + 2)",
        {"x": (1, 256, 28, 28)},
        lambda emit, x: emit(R.add(emit(R.nn.avg_pool2d(x, 1, 1)), _one())),
        lambda x: _F().avg_pool2d(x, 1, 1) + 1,
    ),
]
KERNELS = {kernel.name: kernel for kernel in _KERNELS}


def fused(kernel: Kernel) -> tvm.IRModule:
    """The kernel's graph through the CUDA pipeline up to default scheduling (excluded)."""
    return unscheduled(kernel.module(), make_target("cuda"))


def reduction_function(mod: tvm.IRModule) -> tvm.ir.GlobalVar:
    """The one PrimFunc of `mod` that reduces: the kernel each list is timed on."""
    (found,) = [
        gv for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc) and _reduces(f)
    ]
    return found


def _reduces(func: tirx.PrimFunc) -> bool:
    sch = s_tir.Schedule(func)
    return any(
        v.iter_type == tirx.IterVar.CommReduce
        for block in sch.get_child_blocks(sch.get_sblock("root"))
        for v in sch.get(block).iter_vars
    )
