"""FuseAroundReduction: one kernel for a reduction, its injective prologue and its elementwise tail.

FuseOps leaves the issue's graph in three kernels, by two of its rules. The legalized pool has
`op_pattern` 4 (kOutEWiseFusable): elementwise consumers are fused into it, injective producers (the
prelude's Adds and Concats) only along paths that stay injective, so the prelude never joins. And a
value leaving the dataflow block (a graph output) closes its group, so the second Add stays apart.
This pass, right after FuseOps, merges the reduction's kernel, every injective kernel it reads back
to the inputs, and every elementwise kernel after it into one Primitive function returning every
value the rest uses; FuseTIR then makes one PrimFunc of it.

A block that does not fit is left unchanged: not exactly one out-elementwise-fusable kernel, a
producer not injective or used outside the group, a consumer not elementwise over the reduction's
output or reading another computed value, or nothing to merge.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax
from tvm.ir.expr import Constant

from .group_function import CALL_TIR, add_group_function, kernel_callee

# TVM's OpPatternKind values, as AnnotateTIROpPattern writes them on each PrimFunc.
BROADCAST, INJECTIVE, OUT_ELEMWISE_FUSABLE, OPAQUE = 1, 2, 4, 8


@tvm.transform.module_pass(opt_level=0, name="FuseAroundReduction")
class FuseAroundReduction:
    """Merge a reduction's kernel with its injective producers and elementwise consumers."""

    def transform_module(self, mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        for gv, func in list(mod.functions.items()):
            if isinstance(func, relax.Function) and "Primitive" not in (func.attrs or {}):
                mod = _fuse_in(mod, gv, func)
        return mod


def find_group(mod: tvm.IRModule, func: relax.Function) -> dict | None:
    """The bindings to merge (var -> binding, in block order), or None where the function does
    not fit the pattern or FuseOps left nothing to merge."""
    blocks = func.body.blocks
    if len(blocks) != 1 or not isinstance(blocks[0], relax.DataflowBlock):
        return None
    bindings = {binding.var: binding for binding in blocks[0].bindings}
    kernels = {
        var: _pattern(mod, b.value)
        for var, b in bindings.items()
        if kernel_callee(mod, b.value) is not None
    }
    # The pool's pattern. A plain reduction (kCommReduce) is another FuseOps rule: left alone.
    anchors = [var for var, kind in kernels.items() if kind == OUT_ELEMWISE_FUSABLE]
    if len(anchors) != 1:
        return None
    anchor, users = anchors[0], _users(blocks[0])
    free = _free_inputs(func.params)
    producers = _producers(bindings, kernels, free, anchor)
    consumers = _consumers(bindings, kernels, users, free, anchor)
    if producers is None or consumers is None:
        return None
    members = producers | {anchor} | consumers
    if len(members) < 2 or any(_escapes(var, users, members) for var in producers):
        return None  # nothing to merge, or a prologue value used elsewhere (it is inlined)
    return {var: binding for var, binding in bindings.items() if var in members}


def _free_inputs(params):
    """Whether a value needs no kernel of the block: a parameter or a constant."""
    return lambda value: isinstance(value, Constant) or any(value.same_as(p) for p in params)


def _producers(bindings, kernels, free, anchor) -> set | None:
    """Every kernel the anchor reads, back to the inputs; None if one is not injective or a value
    comes from other than a kernel, parameter or constant."""
    found, pending = set(), [anchor]
    while pending:
        for arg in _arguments(bindings[pending.pop()].value):
            if free(arg):
                continue
            if kernels.get(arg, OPAQUE) > INJECTIVE:
                return None
            if arg not in found:
                found.add(arg)
                pending.append(arg)
    return found


def _consumers(bindings, kernels, users, free, anchor) -> set | None:
    """Every kernel using the anchor's result, transitively; None if one is not elementwise over
    the anchor's shape or reads a computed value from outside the group."""
    shape = bindings[anchor].var.ty
    found, pending = set(), [anchor]
    while pending:
        for user in users.get(pending.pop(), []):
            if user not in kernels:
                continue  # a tuple of outputs or the like: the value becomes a group output
            if kernels[user] > BROADCAST or not tvm_ffi.structural_equal(user.ty, shape):
                return None
            if any(
                not free(a) and a not in found and not a.same_as(anchor)
                for a in _arguments(bindings[user].value)
            ):
                return None
            if user not in found:
                found.add(user)
                pending.append(user)
    return found


def _escapes(var, users, members) -> bool:
    """Whether the value is used after the group: outside the block, or by a non-member."""
    return not isinstance(var, relax.DataflowVar) or any(
        user not in members for user in users.get(var, [])
    )


def _users(block) -> dict:
    """var -> the vars whose bindings use it."""
    users: dict = {}
    for binding in block.bindings:
        for used in relax.analysis.free_vars(binding.value):
            users.setdefault(used, []).append(binding.var)
    return users


def _pattern(mod, value) -> int:
    """The op pattern of a kernel call: its PrimFunc's, or the loosest of a fused group's."""
    callee = mod[kernel_callee(mod, value)]
    if isinstance(callee, tvm.tirx.PrimFunc):
        return int((callee.attrs or {}).get("op_pattern", OPAQUE))
    return max(
        (
            _pattern(mod, b.value)
            for b in callee.body.blocks[0].bindings
            if kernel_callee(mod, b.value) is not None
        ),
        default=OPAQUE,
    )


def _arguments(call) -> list:
    """The tensors a kernel call reads."""
    return list(call.args[1].fields) if call.op.same_as(CALL_TIR) else list(call.args)


def _fuse_in(mod: tvm.IRModule, gv, func) -> tvm.IRModule:
    group = find_group(mod, func)
    if group is None:
        return mod
    block = func.body.blocks[0]
    outside = {
        used
        for binding in block.bindings
        if binding.var not in group
        for used in relax.analysis.free_vars(binding.value)
    }
    outputs = [var for var in group if var in outside or not isinstance(var, relax.DataflowVar)]
    # FuseOps' functions now inside the group go (unless called elsewhere), freeing their names.
    merged = {kernel_callee(mod, b.value) for b in group.values()}
    elsewhere = {
        g
        for other, f in mod.functions.items()
        if isinstance(f, relax.Function) and not other.same_as(gv)
        for g in relax.analysis.all_global_vars(f)
    }
    kept = {
        g: f
        for g, f in mod.functions.items()
        if not (g in merged and isinstance(f, relax.Function) and g not in elsewhere)
    }
    bb = relax.BlockBuilder(tvm.IRModule(kept, attrs=mod.attrs))
    fused, inputs = add_group_function(bb, mod, group, outputs)
    call = bb.normalize(relax.Call(fused, inputs))
    if len(outputs) == 1:
        rebound = [relax.VarBinding(outputs[0], call)]
    else:
        whole = relax.DataflowVar("whole", call.ty)
        rebound = [relax.VarBinding(whole, call)] + [
            relax.VarBinding(var, bb.normalize(relax.TupleGetItem(whole, index)))
            for index, var in enumerate(outputs)
        ]
    # The group's inputs are parameters and constants, so it can come first.
    bindings = rebound + [b for b in block.bindings if b.var not in group]
    body = relax.SeqExpr([relax.DataflowBlock(bindings)], func.body.body)
    mod = bb.get()
    mod[gv] = relax.Function(func.params, body, func.ret_ty, func.is_pure, func.attrs)
    return mod
