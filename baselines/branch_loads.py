"""One load at a selected offset where an inlined concatenation chose between loads.

Inlining a prologue of Adds and Concats into the pool leaves, for every window element, a tree
of `if_then_else(c >= 96, x[c - 128, ...] + 1, if_then_else(...))`. CUDA code walks that tree
of branches before each load, so the loads of a window wait on one another. Where the branches
load one buffer at indices that differ by constants, the tree is one load,
`x[c - 16 + select(c >= 32, -16, 0) + ..., ...]`: an integer offset chosen by select
instructions (no branch), loads that depend on no branch and on one another not at all. Values
added on the branches are selected the same way where both are constants or 0-d loads (always in
bounds); branches of other shapes stay as they were.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.ir.expr import Call, TensorLoad
from tvm.ir.prim.expr import Add, FloatImm, IntImm, Max, Select, Sub

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
    new = tvm.s_tir.SBlock(old.iter_vars, old.reads, old.writes, old.name_hint, body, old.init,
                           old.alloc_buffers, old.match_buffers, old.annotations)
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
        return tirx.BufferLoad(then.source, [_select_index(condition, a, b)
                                             for a, b in zip(then.indices, other.indices)])
    if _scalar(then) and _scalar(other):  # both in bounds whatever the condition
        return tirx.Select(condition, then, other)
    return tirx.if_then_else(condition, then, other)


def _select_index(condition, then, other):
    """Where two indices differ by a constant (channels of a concatenation), select the
    offset: a few integer selects the compiler keeps free of branches."""
    if tvm_ffi.structural_equal(then, other):
        return then
    offset = tvm.sym.Analyzer().simplify(then - other)
    if _constant_valued(offset):
        return other + tirx.Select(condition, offset, tirx.const(0, offset.ty.dtype))
    return tirx.Select(condition, then, other)


def _constant_valued(expr) -> bool:
    """No variable but in a select's condition."""
    if isinstance(expr, IntImm):
        return True
    if isinstance(expr, Select):
        return _constant_valued(expr.true_value) and _constant_valued(expr.false_value)
    if isinstance(expr, (Add, Sub)):
        return _constant_valued(expr.a) and _constant_valued(expr.b)
    return False


def _same_buffer(a, b) -> bool:
    return isinstance(a, TensorLoad) and isinstance(b, TensorLoad) and a.source.same_as(b.source)


def _scalar(expr) -> bool:
    """A constant, or a load of a 0-d buffer (a bias FuseOps lifted into a parameter)."""
    if isinstance(expr, (FloatImm, IntImm)):
        return True
    return isinstance(expr, TensorLoad) and not expr.indices
