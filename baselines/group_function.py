"""One Primitive Relax function out of a group of kernel calls, as FuseTIR takes it.

The group's members are call_tir's and FuseOps' own Primitive functions; their call_tir's are
inlined in order into one function. A 0-d constant argument is bound into the PrimFunc that
reads it (`bind_scalars`), where FuseOps would lift it into a parameter; every other input
becomes a parameter. The function is named as FuseOps names its groups.
"""

from __future__ import annotations

import tvm
from tvm import relax

from .bind_scalars import bind_scalars, scalar_arguments

CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def kernel_callee(mod: tvm.IRModule, value: relax.Expr) -> tvm.ir.GlobalVar | None:
    """The GlobalVar a kernel call calls: a PrimFunc through call_tir, or a Primitive function
    of call_tir's ending in one tensor (what FuseOps makes); else None."""
    if not isinstance(value, relax.Call):
        return None
    if value.op.same_as(CALL_TIR):
        return value.args[0]
    if not isinstance(value.op, relax.GlobalVar):
        return None
    callee = mod[value.op]
    if not isinstance(callee, relax.Function) or "Primitive" not in (callee.attrs or {}):
        return None
    blocks = callee.body.blocks
    if len(blocks) != 1 or not all(
        isinstance(b.value, relax.Call) and b.value.op.same_as(CALL_TIR) for b in blocks[0].bindings
    ):
        return None
    return value.op if blocks[0].bindings[-1].var.same_as(callee.body.body) else None


def add_group_function(
    bb: relax.BlockBuilder, mod: tvm.IRModule, group: dict, outputs: list
) -> tuple[tvm.ir.GlobalVar, list]:
    """Add the group's function to `bb`; returns its GlobalVar and the values to call it with.
    `group` maps each member's var to its binding, in order; `outputs` are the members' vars
    the function returns (a tuple where there are several)."""
    flat = _flatten(mod, group)
    name = "fused_" + "_".join(dict.fromkeys(prim.name_hint for _, prim, _, _ in flat))
    calls = [_bound(bb, mod, call) for call in flat]
    keys = {call[0] for call in calls}
    inputs = list(dict.fromkeys(a for _, _, args, _ in calls for a in args if a not in keys))
    params = [relax.Var(f"param_{i}", value.ty) for i, value in enumerate(inputs)]
    body = relax.BlockBuilder()  # its own builder: `bb.add_func` names it uniquely
    with body.function(name, params, {"Primitive": True}, private=True):
        with body.dataflow():
            values = dict(zip(inputs, params))
            for key, prim, args, call in calls:
                values[key] = body.emit(
                    relax.Call(
                        CALL_TIR,
                        [prim, relax.Tuple([values[a] for a in args]), *call.args[2:]],
                        call.attrs,
                        call.ty_args,
                    )
                )
            results = [values[var] for var in outputs]
            out = body.emit_output(results[0] if len(results) == 1 else relax.Tuple(results))
        body.emit_func_output(out)
    return bb.add_func(body.get()[name], name), inputs


def _flatten(mod, group: dict) -> list:
    """(key, PrimFunc's GlobalVar, arguments, call) per call_tir, in order. A member's last
    call_tir has the member's var as key, any other its own var; arguments are keys or the
    values the group reads from outside (parameters, constants)."""
    calls = []
    for var, binding in group.items():
        call = binding.value
        if call.op.same_as(CALL_TIR):
            calls.append((var, call.args[0], list(call.args[1].fields), call))
            continue
        callee = mod[call.op]
        inner = dict(zip(callee.params, call.args))
        for inner_binding in callee.body.blocks[0].bindings:
            key = var if inner_binding.var.same_as(callee.body.body) else inner_binding.var
            tir = inner_binding.value
            args = [inner.get(a, a) for a in tir.args[1].fields]
            calls.append((key, tir.args[0], args, tir))
            inner[inner_binding.var] = key
    return calls


def _bound(bb, mod, flat):
    """The call with its 0-d constants bound into a copy of its PrimFunc, where that works."""
    key, prim, args, call = flat
    scalars = scalar_arguments(args)
    func = bind_scalars(mod[prim], scalars) if scalars else None
    if func is None:
        return flat
    bound = bb.add_func(func, f"{prim.name_hint}_bound")  # one copy per distinct binding
    return key, bound, [a for i, a in enumerate(args) if i not in scalars], call
