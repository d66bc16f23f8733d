"""Loads at clamped indices instead of behind a guard, so that they issue as Triton's masked loads
do.

Where a thread's outputs do not divide the output (the flat index's end, an odd height under two
rows per thread), TVM guards each block of the last iterations with its predicate and CUDA branches
around it, so a thread's later loads wait on the earlier ones (the PTX of `s1-h6` and `s1-96`,
reports/h200/README.md). Triton masks each load instead (`@%p ld`). Here a guarded block that writes
a register loses its predicate, and its memory loads read at indices clamped into the buffer
(`min(i, extent - 1)`); blocks writing memory keep theirs. A thread past the end reduces some input
element into a register nothing stores.
"""

from __future__ import annotations

import tvm
from tvm import s_tir, tirx
from tvm.ir.expr import Call, TensorLoad
from tvm.ir.prim.expr import BinaryOpExpr, Cast, CmpExpr, FloatImm, IntImm, LogicalExpr, Not, Select
from tvm.tirx import BufferStore, Var


class _Unmaskable(Exception):
    """An expression the rewrite does not know: the block keeps its predicate."""


def masked_module(mod: tvm.IRModule) -> tvm.IRModule:
    """Every PrimFunc of `mod` through `mask_loads` (those without a guarded block as they were)."""
    return tvm.IRModule(
        {
            gv: mask_loads(f) if isinstance(f, tirx.PrimFunc) else f
            for gv, f in mod.functions.items()
        },
        attrs=mod.attrs,
    )


def mask_loads_for(func: tirx.PrimFunc, target: tvm.target.Target) -> tirx.PrimFunc:
    """`mask_loads(func)` for CUDA, where masking was measured to pay (reports/h200/stride1/);
    `func` as it is for other targets."""
    return mask_loads(func) if target.kind.name == "cuda" else func


def mask_loads(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` (scheduled) with every guarded block writing a local buffer unguarded, its memory
    loads at clamped indices."""
    sch = s_tir.Schedule(func)
    for block in _blocks(sch):
        _mask(sch, block)
    return sch.mod["main"]


def _blocks(sch: s_tir.Schedule) -> list:
    """Every block of the function but the root, by name (a block's RV survives replacements)."""
    names: list[str] = []

    def visit(stmt) -> None:
        if isinstance(stmt, s_tir.SBlockRealize):
            names.append(stmt.block.name_hint)
            visit(stmt.block.body)
        elif isinstance(stmt, tirx.For):
            visit(stmt.body)
        elif isinstance(stmt, tirx.SeqStmt):
            for child in stmt.seq:
                visit(child)

    visit(sch.mod["main"].body.block.body)
    return [sch.get_sblock(name) for name in names]


def _mask(sch: s_tir.Schedule, block) -> None:
    sref = sch.get_sref(block)
    loop = sref.parent
    old = sch.get(block)
    if loop is None or not isinstance(loop.stmt, tirx.For) or not _writes_local(old):
        return
    realize = _realize_of(loop.stmt.body, old)
    if realize is None or (isinstance(realize.predicate, IntImm) and realize.predicate.value):
        return
    if not isinstance(old.body, BufferStore):
        return
    try:
        value = _clamped(old.body.value)
    except _Unmaskable:
        return
    new = s_tir.SBlock(
        old.iter_vars,
        old.reads,
        old.writes,
        old.name_hint,
        BufferStore(old.body.buffer, value, old.body.indices),
        old.init,
        old.alloc_buffers,
        old.match_buffers,
        old.annotations,
    )
    unguarded = s_tir.SBlockRealize(realize.iter_values, True, new)
    body = _replaced(loop.stmt.body, realize, unguarded)
    stmt = loop.stmt
    new_loop = tirx.For(
        stmt.loop_var,
        stmt.min,
        stmt.extent,
        stmt.kind,
        body,
        stmt.thread_binding,
        stmt.annotations,
    )
    sch.state.replace(loop, new_loop, {old: new})


def _writes_local(block) -> bool:
    return all(w.source.scope() == "local" for w in block.writes)


def _realize_of(body, block):
    if isinstance(body, s_tir.SBlockRealize) and body.block.same_as(block):
        return body
    if isinstance(body, tirx.SeqStmt):
        return next((s for s in body.seq if _realize_of(s, block) is not None), None)
    return None


def _replaced(body, old, new):
    if body.same_as(old):
        return new
    return tirx.SeqStmt([new if s.same_as(old) else s for s in body.seq])


def _clamped(expr):
    """`expr` with each load from a buffer outside registers at indices clamped into it."""
    if isinstance(expr, TensorLoad):
        if expr.source.scope() == "local":
            return expr
        last = [extent - 1 for extent in expr.source.shape]
        return tirx.BufferLoad(expr.source, [tirx.min(i, e) for i, e in zip(expr.indices, last)])
    if isinstance(expr, IntImm | FloatImm | Var):
        return expr
    if isinstance(expr, Not):
        return Not(_clamped(expr.a))
    if isinstance(expr, BinaryOpExpr | CmpExpr | LogicalExpr):  # Add ... Max, LT ... GE, And, Or
        return type(expr)(_clamped(expr.a), _clamped(expr.b))
    if isinstance(expr, Cast):
        return Cast(expr.ty, _clamped(expr.value))
    if isinstance(expr, Select):
        condition = _clamped(expr.condition)
        return Select(condition, _clamped(expr.true_value), _clamped(expr.false_value))
    if isinstance(expr, Call):  # T.if_then_else: a padded or concatenated input
        return Call(expr.op, [_clamped(a) for a in expr.args], ret_ty=expr.ty)
    raise _Unmaskable(type(expr).__name__)
