"""The short-row kernels `row_bench` times: softmax and layer norm over rows of at most 64 elements,
at the shapes of the transformers whose flagged kernels the window rule declines as not sliding
(Swin-T, MaxViT-T, ViT-B/32 at batch 1, and Swin-T's first stage at batch 8).

Each is one Relax operator, so the CUDA pipeline makes it one PrimFunc and PyTorch one kernel: like
for like. The NumPy reference is computed in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax, tirx
from tvm.relax import op as R

from .pipeline import make_target, unscheduled

SOFTMAX, LAYER_NORM = "softmax", "layer_norm"
EPS = 1e-5  # torch.nn.LayerNorm's


@dataclass(frozen=True)
class RowKernel:
    """`op` over the last axis of an input of `shape` (layer norm: with its weight and bias)."""

    name: str
    where: str  # the model and layer it comes from
    op: str
    shape: tuple

    @property
    def rows(self) -> int:
        return math.prod(self.shape[:-1])

    @property
    def length(self) -> int:
        return self.shape[-1]

    def arrays(self, seed: int = 0) -> list[np.ndarray]:
        """Inputs: the data (logits in [-4, 4], activations in [-1, 1]), then a layer norm's
        weight in [0.5, 1.5] and bias in [-1, 1]."""
        rng = np.random.default_rng(seed)
        if self.op == SOFTMAX:
            return [rng.uniform(-4, 4, self.shape).astype("float32")]
        return [
            rng.uniform(-1, 1, self.shape).astype("float32"),
            rng.uniform(0.5, 1.5, self.length).astype("float32"),
            rng.uniform(-1, 1, self.length).astype("float32"),
        ]

    def function(self) -> tirx.PrimFunc:
        """The operator's PrimFunc as the CUDA pipeline leaves it for default scheduling."""
        params = [relax.Var("x", relax.TensorType(self.shape, "float32"))]
        if self.op == LAYER_NORM:
            params += [relax.Var(n, relax.TensorType((self.length,), "float32")) for n in "gb"]
        bb = relax.BlockBuilder()
        with bb.function("main", params):
            with bb.dataflow():
                if self.op == SOFTMAX:
                    value = R.nn.softmax(params[0], -1)
                else:
                    value = R.nn.layer_norm(*params, [-1], EPS)
                out = bb.emit_output(value)
            bb.emit_func_output(out)
        mod = unscheduled(bb.get(), make_target("cuda"))
        (func,) = [f for f in mod.functions.values() if isinstance(f, tirx.PrimFunc)]
        return func


def reference(kernel: RowKernel, arrays: list[np.ndarray]) -> np.ndarray:
    """The kernel's output in float64, by NumPy."""
    x = arrays[0].astype(np.float64)
    if kernel.op == SOFTMAX:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * arrays[1] + arrays[2]


def torch_function(kernel: RowKernel):
    """PyTorch's own kernel for the operator: torch.softmax or F.layer_norm."""
    import torch

    if kernel.op == SOFTMAX:
        return lambda x: torch.softmax(x, -1)
    return lambda x, g, b: torch.nn.functional.layer_norm(x, (kernel.length,), g, b, EPS)


def error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest difference relative to the reference's largest magnitude (inf where an element
    was not written or shapes differ)."""
    if got.shape != want.shape or np.isnan(got).any():
        return math.inf
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))


def _swin(stage: int, batch: int = 1) -> RowKernel:
    """Swin-T's window attention softmax: 7x7 windows, (224 / 4 / 2^(s-1) / 7)^2 of them, and
    3 x 2^(s-1) heads, over 49 keys."""
    windows, heads = (8 >> (stage - 1)) ** 2, 3 << (stage - 1)
    shape = (batch * windows, heads, 49, 49)
    return RowKernel(
        f"swin_t-s{stage}-softmax" + (f"-b{batch}" if batch > 1 else ""),
        f"Swin-T stage {stage}, batch {batch}: attention softmax, {_count(windows, 'window')} x "
        f"{heads} heads x 49 queries, over 49 keys",
        SOFTMAX,
        shape,
    )


def _maxvit(stage: int) -> RowKernel:
    """MaxViT-T's block and grid attention softmax: (56 / 2^(s-1) / 7)^2 partitions, heads of
    32 channels (64 x 2^(s-1) channels), over 49 keys."""
    partitions, heads = (8 >> (stage - 1)) ** 2, 2 << (stage - 1)
    return RowKernel(
        f"maxvit_t-s{stage}-softmax",
        f"MaxViT-T stage {stage}: attention softmax, {_count(partitions, 'partition')} x {heads} "
        "heads x 49 queries, over 49 keys",
        SOFTMAX,
        (1, partitions, heads, 49, 49),
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


_KERNELS = [
    *[_swin(stage) for stage in (1, 2, 3, 4)],
    _swin(1, batch=8),
    *[_maxvit(stage) for stage in (1, 2, 3, 4)],
    RowKernel(
        "maxvit_t-s1-layer_norm",
        "MaxViT-T stage 1: LayerNorm over 64 channels of 64 partitions x 49 positions",
        LAYER_NORM,
        (1, 64, 49, 64),
    ),
    RowKernel(
        "vit_b_32-softmax",
        "ViT-B/32: attention softmax, 12 heads x 50 tokens, over 50 keys",
        SOFTMAX,
        (1, 12, 50, 50),
    ),
]
KERNELS = {kernel.name: kernel for kernel in _KERNELS}


def with_symbol(func: tirx.PrimFunc, name: str) -> tvm.IRModule:
    """`func` as the function `name` of a module of its own, ready to build."""
    return tvm.IRModule({name: func.with_attr("global_symbol", name)})
