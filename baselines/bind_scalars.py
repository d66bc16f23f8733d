"""Bind 0-d constant arguments into the PrimFunc that reads them.

FuseOps lifts every constant of a fused group into a parameter, so the issue's biases reach the
kernel as fifteen 0-d buffers, each loaded by every thread. Bound as immediates, `x + 1 + 1`
is plain arithmetic: the branches of an inlined concatenation then differ only in their index
(`branch_loads`), and the kernel takes the graph's input alone. Only what this module can
rewrite is bound: a PrimFunc it cannot fully rewrite is left as it was (None).
"""

from __future__ import annotations

import tvm
from tvm import s_tir, tirx
from tvm.ir.expr import Call, TensorLoad
from tvm.ir.prim.expr import BinaryOpExpr, Cast, Select

_IF_THEN_ELSE = tvm.ir.Op.get("prim.if_then_else")


def bind_scalars(func: tirx.PrimFunc, values: dict[int, tuple[str, float]]) -> tirx.PrimFunc | None:
    """`func` without the 0-d parameters at the positions of `values` (position -> (dtype,
    value)), each load of one replaced by its value; None where a use is left."""
    bound = {func.params[i]: tirx.const(value, dtype) for i, (dtype, value) in values.items()}
    sch = s_tir.Schedule(func)
    for block in sch.get_child_blocks(sch.get_sblock("root")):
        old = sch.get(block)
        body = _store(old.body, bound)
        init = None if old.init is None else _store(old.init, bound)
        if body is None or (old.init is not None and init is None):
            return None
        reads = [r for r in old.reads if not any(r.source.same_as(p) for p in bound)]
        new = s_tir.SBlock(
            old.iter_vars,
            reads,
            old.writes,
            old.name_hint,
            body,
            init,
            old.alloc_buffers,
            old.match_buffers,
            old.annotations,
        )
        sch.state.replace(sch.get_sref(block), new, {old: new})
    params = [p for p in func.params if not any(p.same_as(b) for b in bound)]
    result = tirx.PrimFunc(params, sch.mod["main"].body, func.ret_type, func.attrs)
    if any(v.same_as(b) for v in tirx.analysis.undefined_vars(result.body, params) for b in bound):
        return None  # a load this module does not rewrite still reads one
    return result


def _store(stmt, bound):
    if not isinstance(stmt, tirx.BufferStore):
        return None
    return tirx.BufferStore(stmt.buffer, _expr(stmt.value, bound), stmt.indices)


def _expr(expr, bound):
    """`expr` with loads of the bound 0-d buffers replaced; other nodes are left as they are
    (the caller checks that no load of a bound buffer is left)."""
    if isinstance(expr, TensorLoad):
        found = [value for param, value in bound.items() if expr.source.same_as(param)]
        return found[0] if found and not expr.indices else expr
    if isinstance(expr, BinaryOpExpr):
        return type(expr)(_expr(expr.a, bound), _expr(expr.b, bound))
    if isinstance(expr, Select):
        return tirx.Select(
            *(_expr(e, bound) for e in (expr.condition, expr.true_value, expr.false_value))
        )
    if isinstance(expr, Cast):
        return tirx.Cast(expr.dtype, _expr(expr.value, bound))
    if isinstance(expr, Call) and expr.op.same_as(_IF_THEN_ELSE):
        return tirx.if_then_else(*(_expr(e, bound) for e in expr.args))
    return expr
