"""The GEMM a TVM matmul kernel computes, read off its unscheduled PrimFunc, so PyTorch's own GEMM
of the same shape can be timed beside it (`tuning/models/cublas_gemms.py`).

The kernel's one reduction block reads two operands and writes the product. A Linear has a 2-D
right operand (the weight): M x N x K with M the product of the output's leading dims. A batched
matmul has batch dims on both operands, the same on each: B x M x N x K. K is the reduction's
extent (the analysis' window), and must be the left operand's last axis and the right one's
reduced axis. A bias is an add, after the reduction, of a 1-D vector of N elements over N.
Anything else is not read, with its reason: a shape is never guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import tvm_ffi
from tvm import ir, s_tir, tirx

from .analysis import reduction_window


class GemmShapeUnread(ValueError):
    """Why a kernel's GEMM shape cannot be read."""


@dataclass(frozen=True)
class GemmShape:
    """`batch` None for a Linear (F.linear), else the batch of a torch.bmm."""

    m: int
    n: int
    k: int
    batch: int | None
    bias: bool


def gemm_shape(func: tirx.PrimFunc) -> GemmShape:
    """The GEMM of the unscheduled `func`; GemmShapeUnread where it is not one as the module
    says."""
    blocks: list[s_tir.SBlock] = []
    tvm_ffi.structural_walk(func.body, [(s_tir.SBlock, blocks.append)])
    reductions = [b for b in blocks if any(_reduced(v) for v in b.iter_vars)]
    if len(reductions) != 1:
        raise GemmShapeUnread(f"{len(reductions)} reduction blocks, not one")
    block = reductions[0]
    reduce_vars = [v.var for v in block.iter_vars if _reduced(v)]
    k, _ = reduction_window(func)
    if len(reduce_vars) != 1 or k is None:
        raise GemmShapeUnread("not one reduction axis of constant extent")
    if len(block.reads) != 2 or len(block.writes) != 1:
        raise GemmShapeUnread(f"{len(block.reads)} operands read, {len(block.writes)} written")
    (left, left_k), (right, right_k) = (_operand(r, reduce_vars[0]) for r in block.reads)
    out = _shape(block.writes[0].source)
    if left_k != len(left) - 1 or left[-1] != k or right_k is None or right[right_k] != k:
        raise GemmShapeUnread(f"operands {left} and {right} not reduced over K = {k}")
    if len(right) < 2 or right_k < len(right) - 2:
        raise GemmShapeUnread(f"the right operand {right} has no N beside K")
    n = right[-1] if right_k == len(right) - 2 else right[-2]
    if len(right) == 2:  # a Linear: its weight
        m = math.prod(left[:-1])
        if list(out) != [*left[:-1], n]:
            raise GemmShapeUnread(f"output {out} is not {left[:-1]} x {n}")
        batch = None
    else:
        batch_dims = left[:-2]
        if len(left) < 3 or right[:-2] != batch_dims or list(out) != [*batch_dims, left[-2], n]:
            raise GemmShapeUnread(f"operands {left} and {right} are not a batched matmul to {out}")
        m, batch = left[-2], math.prod(batch_dims)
    return GemmShape(m, n, k, batch, _adds_bias(blocks, block.writes[0].source, n))


def _reduced(iter_var) -> bool:
    return iter_var.iter_type == tirx.IterVar.CommReduce


def _shape(buffer: tirx.Buffer) -> list[int]:
    shape = _constant(buffer.shape)
    if shape is None:
        raise GemmShapeUnread(f"{buffer.name} has a shape not constant")
    return shape


def _operand(region, reduce_var) -> tuple[list[int], int | None]:
    """The operand's shape and the axis it is read along the reduction (None if none is)."""
    axes = [i for i, r in enumerate(region.region) if _is(r.min, reduce_var)]
    return _shape(region.source), axes[0] if len(axes) == 1 else None


def _is(expr, var) -> bool:
    return isinstance(expr, tirx.Var) and expr.same_as(var)


def _adds_bias(blocks: list, product: tirx.Buffer, n: int) -> bool:
    """Whether a block adds a 1-D vector of `n` elements, indexed by the output's last axis, to
    the reduction's output `product`."""
    for block in blocks:
        store = block.body
        if not isinstance(store, tirx.BufferStore) or not isinstance(store.value, tirx.Add):
            continue
        loads = [store.value.a, store.value.b]
        if not all(isinstance(load, ir.TensorLoad) for load in loads):
            continue
        for vector, other in (loads, loads[::-1]):
            if (
                other.source.same_as(product)
                and len(vector.indices) == 1
                and _constant(vector.source.shape) == [n]
                and _is(vector.indices[0], other.indices[-1])
            ):
                return True
    return False


def _constant(shape) -> list[int] | None:
    return [int(e) for e in shape] if all(isinstance(e, tirx.IntImm) for e in shape) else None
