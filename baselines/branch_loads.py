"""One load at a computed channel where an inlined concatenation chose between loads.

Inlining a prologue of Adds and Concats into the pool leaves, for every window element, a tree of
`if_then_else(c >= 96, x[c - 128, ...] + 1, if_then_else(...))`, which CUDA code walks before each
load, serializing the window's loads. Where the branches load one buffer at one base plus constants,
the tree becomes one load at `x[c + k + select(16 <= c, -16, 0) + ..., ...]`: branch-free one-level
selects, computed once for all the window's loads. Values added on the branches are selected the
same way where both are constants or 0-d loads; other branches stay. Those 0-d inputs are then
loaded once per thread (`stage_scalars`).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.ir.expr import Call, TensorLoad
from tvm.ir.prim.expr import LE, Add, FloatImm, IntImm, Max, Select, Sub

_IF_THEN_ELSE = tvm.ir.Op.get("prim.if_then_else")


def select_branch_loads(sch, block) -> None:
    """Rewrite the value `block` stores, in place in the schedule."""
    old = sch.get(block)
    store = old.body
    if not isinstance(store, tirx.BufferStore):
        return
    value = _merged(store.value)
    if value.same_as(store.value):
        return
    body = tirx.BufferStore(store.buffer, value, store.indices)
    new = tvm.s_tir.SBlock(
        old.iter_vars,
        old.reads,
        old.writes,
        old.name_hint,
        body,
        old.init,
        old.alloc_buffers,
        old.match_buffers,
        old.annotations,
    )
    sch.state.replace(sch.get_sref(block), new, {old: new})


def _merged(expr):
    """`expr` with every if_then_else over like-shaped branches pushed into their indices."""
    if isinstance(expr, Call) and expr.op.same_as(_IF_THEN_ELSE):
        condition, then, other = expr.args
        return _select(condition, _merged(then), _merged(other))
    if isinstance(expr, (Add, Max)):
        a, b = _merged(expr.a), _merged(expr.b)
        if a.same_as(expr.a) and b.same_as(expr.b):
            return expr
        return a + b if isinstance(expr, Add) else tvm.tirx.max(a, b)
    return expr


def _select(condition, then, other):
    """The value of `if_then_else(condition, then, other)`, loading no more than it does."""
    if tvm_ffi.structural_equal(then, other):
        return then
    if isinstance(then, Add) and isinstance(other, Add):
        return _select(condition, then.a, other.a) + _select(condition, then.b, other.b)
    if _same_buffer(then, other):
        return tirx.BufferLoad(
            then.source,
            [_select_index(condition, a, b) for a, b in zip(then.indices, other.indices)],
        )
    if _scalar(then) and _scalar(other):  # both in bounds whatever the condition
        return tirx.Select(condition, then, other)
    return tirx.if_then_else(condition, then, other)


def _select_index(condition, then, other):
    """Where two indices are one base plus constants (a concatenation's channels), the base plus
    an offset chosen by the channel's thresholds (`_staircase`)."""
    if tvm_ffi.structural_equal(then, other):
        return then
    (base, then_offset), (other_base, other_offset) = _split(then), _split(other)
    if base is None or not tvm_ffi.structural_equal(base, other_base):
        return tirx.Select(condition, then, other)
    return base + _staircase(tirx.Select(condition, then_offset, other_offset))


def _split(index):
    """(base, offset) with index == base + offset, the offset constant but for selects; base None
    where the whole index is such an offset."""
    if _constant_valued(index):
        return None, index
    if isinstance(index, (Add, Sub)):
        (base, offset), (tail_base, tail) = _split(index.a), _split(index.b)
        if tail_base is None and base is not None:
            return base, offset - tail if isinstance(index, Sub) else offset + tail
    return index, tirx.const(0, index.ty.dtype)


def _constant_valued(expr) -> bool:
    if isinstance(expr, IntImm):
        return True
    if isinstance(expr, Select):
        return _constant_valued(expr.true_value) and _constant_valued(expr.false_value)
    return isinstance(expr, (Add, Sub)) and _constant_valued(expr.a) and _constant_valued(expr.b)


def _staircase(offset):
    """A constant-valued offset whose selects all test `t <= e` for one `e`, as `k + select(t1 <=
    e, d1, 0) + select(t2 <= e, d2, 0) + ...` (branch-free); any other offset is returned as it
    is."""
    found: list[tuple[int, tvm.ir.expr.Expr]] = []  # (t, e) of each `t <= e`
    if not _thresholds(offset, found) or not found:
        return offset
    subject = found[0][1]
    if not all(tvm_ffi.structural_equal(e, subject) for _, e in found):
        return offset
    steps = sorted({t for t, _ in found})
    before = _value_at(offset, steps[0] - 1)
    result = tirx.const(before, offset.ty.dtype)
    for step in steps:
        value = _value_at(offset, step)
        if value != before:
            result = result + tirx.Select(
                tirx.const(step, subject.ty.dtype) <= subject,
                tirx.const(value - before, offset.ty.dtype),
                tirx.const(0, offset.ty.dtype),
            )
        before = value
    return result


def _thresholds(expr, found: list) -> bool:
    """Collect (t, e) for every select condition `t <= e` in `expr`; False if one is not."""
    if isinstance(expr, IntImm):
        return True
    if isinstance(expr, (Add, Sub)):
        return _thresholds(expr.a, found) and _thresholds(expr.b, found)
    condition = tvm.sym.Analyzer().simplify(expr.condition)
    if not (isinstance(condition, LE) and isinstance(condition.a, IntImm)):
        return False
    found.append((condition.a.value, condition.b))
    return _thresholds(expr.true_value, found) and _thresholds(expr.false_value, found)


def _value_at(expr, point: int) -> int:
    """The offset's value where its subject `e` equals `point`."""
    if isinstance(expr, IntImm):
        return expr.value
    if isinstance(expr, (Add, Sub)):
        a, b = _value_at(expr.a, point), _value_at(expr.b, point)
        return a - b if isinstance(expr, Sub) else a + b
    threshold = tvm.sym.Analyzer().simplify(expr.condition).a.value
    return _value_at(expr.true_value if threshold <= point else expr.false_value, point)


def _same_buffer(a, b) -> bool:
    return isinstance(a, TensorLoad) and isinstance(b, TensorLoad) and a.source.same_as(b.source)


def _scalar(expr) -> bool:
    """A constant, or a load of a 0-d buffer (a bias FuseOps lifted into a parameter)."""
    if isinstance(expr, (FloatImm, IntImm)):
        return True
    return isinstance(expr, TensorLoad) and not expr.indices


def stage_scalars(sch, block, loop) -> None:
    """Load each 0-d input of `block` once per iteration of `loop` (per thread) into a register,
    so the window's elements select between registers, not loads."""
    names = [r.source.name for r in sch.get(block).reads if not r.source.shape]
    for name in names:
        index = [r.source.name for r in sch.get(block).reads].index(name)
        staged = sch.cache_read(block, index, "local")
        sch.compute_at(staged, loop, preserve_unit_loops=True)
