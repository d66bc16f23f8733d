"""Bind 0-d constant arguments into the PrimFunc that reads them.

FuseOps lifts every constant of a fused group into a parameter, so the issue's biases reach the
kernel as fifteen 0-d buffers, each loaded by every thread. Bound as immediates, `x + 1 + 1` is
plain arithmetic: an inlined concatenation's branches then differ only in their index
(`branch_loads`), and the kernel takes the graph's input alone. A PrimFunc this module cannot fully
rewrite is left as it was (None).

`BindScalarConstants`, run right after FuseTIR, does it for the kernels it is given (the fused pool
kernel), whose Adds then add an immediate, as inductor's do.
"""

from __future__ import annotations

import tvm
from tvm import relax, s_tir, tirx
from tvm.ir.expr import Call, Constant, TensorLoad
from tvm.ir.prim.expr import BinaryOpExpr, Cast, Select

_IF_THEN_ELSE = tvm.ir.Op.get("prim.if_then_else")
_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def scalar_arguments(args) -> dict[int, tuple[str, float]]:
    """The 0-d constants among a kernel call's arguments: position -> (dtype, value)."""
    return {
        i: (str(a.value.dtype), a.value.numpy().item())
        for i, a in enumerate(args)
        if isinstance(a, Constant) and not a.value.shape
    }


@tvm.transform.module_pass(opt_level=0, name="BindScalarConstants")
class BindScalarConstants:
    """Each PrimFunc in `functions` that every call gives the same 0-d constants, with them bound
    (same name) and the calls without them; any other left as it is."""

    def __init__(self, functions: list[str]):
        self.functions = set(functions)

    def transform_module(self, mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        found: dict = {}  # PrimFunc's GlobalVar -> the scalars of each of its calls
        for func in mod.functions.values():
            if isinstance(func, relax.Function):
                relax.analysis.post_order_visit(func, lambda e: _note_call(e, found))
        bound = {}
        for gv, calls in found.items():
            if gv.name_hint in self.functions and calls[0] and all(c == calls[0] for c in calls):
                func = bind_scalars(mod[gv], calls[0])
                if func is not None:
                    bound[gv] = (func, calls[0])
        if not bound:
            return mod
        # A new GlobalVar of the same name: the old one's type still has the bound parameters.
        kept = {gv: f for gv, f in mod.functions.items() if gv not in bound}
        bb = relax.BlockBuilder(tvm.IRModule(kept, attrs=mod.attrs))
        renamed = {gv: (bb.add_func(func, gv.name_hint), set(s)) for gv, (func, s) in bound.items()}
        mod = bb.get()
        rewriter = _DropScalars(renamed)
        for gv, func in list(mod.functions.items()):
            if isinstance(func, relax.Function):
                mod[gv] = rewriter.visit_expr(func)
        return mod


def _note_call(expr, found: dict) -> None:
    if isinstance(expr, relax.Call) and expr.op.same_as(_CALL_TIR):
        found.setdefault(expr.args[0], []).append(scalar_arguments(expr.args[1].fields))


@relax.expr_functor.mutator
class _DropScalars(relax.PyExprMutator):
    """Calls of the bound PrimFuncs (old GlobalVar -> (new, positions bound)) without the
    arguments bound into them."""

    def __init__(self, renamed: dict):
        super().__init__()
        self.renamed = renamed

    def visit_call_(self, call):  # pylint: disable=arguments-renamed
        call = super().visit_call_(call)
        if not call.op.same_as(_CALL_TIR) or call.args[0] not in self.renamed:
            return call
        gv, drop = self.renamed[call.args[0]]
        kept = [a for i, a in enumerate(call.args[1].fields) if i not in drop]
        args = [gv, relax.Tuple(kept), *call.args[2:]]
        return relax.Call(call.op, args, call.attrs, call.ty_args)


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
    """`expr` with loads of the bound 0-d buffers replaced, other nodes left (the caller checks
    no load of a bound buffer is left)."""
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
