"""A model's kernels, one PrimFunc each, as the backend's pipeline makes them: unscheduled (what a
tuner takes) or scheduled by a rule list, with arguments and a reference for timing one alone.

The reference is the unscheduled kernel compiled for the host: a scheduled kernel must compute what
it computed before any rule touched it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, s_tir, tirx

from pool_fusion_tuning.baselines import rules
from pool_fusion_tuning.baselines.pipeline import HOST, unscheduled
from pool_fusion_tuning.baselines.rules import rule_name

from .failures import RuleFailure, rule_failure


@dataclass(frozen=True)
class ScheduledKernel:
    """`func` as the rule list leaves it, marked scheduled as `ApplyDefaultSchedule` marks it;
    `rule` is the rule's class name, None if no rule takes it (a GPU build then rejects it).
    `failure`: an earlier rule raised on the kernel (dlight's pass would have ended the build);
    `rule` is the next."""

    rule: str | None
    func: tirx.PrimFunc
    failure: RuleFailure | None = None


def rule_lists(target: tvm.target.Target, names=("default", "fixed")) -> dict[str, list]:
    """The rule lists `names` of `rules.RULE_LISTS` for the CUDA `target` (dlight's GPU rules)."""
    return {name: rules.RULE_LISTS[name](target) for name in names}


def unscheduled_kernels(mod: tvm.IRModule, target: tvm.target.Target) -> dict[str, tirx.PrimFunc]:
    """Every PrimFunc of the Relax module `mod` after the backend's passes up to default
    scheduling (FuseOps and FuseTIR included), by name."""
    return prim_funcs(unscheduled(mod, target))


def prim_funcs(lowered: tvm.IRModule) -> dict[str, tirx.PrimFunc]:
    """Every PrimFunc of `lowered`, by name."""
    return {
        gv.name_hint: func
        for gv, func in lowered.functions.items()
        if isinstance(func, tirx.PrimFunc)
    }


def kernel_calls(lowered: tvm.IRModule) -> dict[str, int]:
    """How many times `main` of an `unscheduled` module launches each PrimFunc: identical layers
    share one kernel, called once per layer."""
    calls: dict[str, int] = {}

    def visit(call: relax.Call) -> None:
        callee = call.op
        if isinstance(callee, tvm.ir.Op) and callee.name.startswith("relax.call_tir"):
            callee = call.args[0]
        if isinstance(callee, tvm.ir.GlobalVar) and isinstance(lowered[callee], tirx.PrimFunc):
            calls[callee.name_hint] = calls.get(callee.name_hint, 0) + 1

    tvm_ffi.structural_walk(lowered["main"], [(relax.Call, visit)])
    return calls


def schedule_kernel(
    func: tirx.PrimFunc, target: tvm.target.Target, rules: list, tried: dict | None = None
) -> ScheduledKernel:
    """The first rule of `rules` that schedules `func`, as `dlight.ApplyDefaultSchedule` picks
    it; a function already marked scheduled is left as it is. A rule that raises is recorded (the
    first) and the kernel left to the next rule, where dlight would end the build
    (`failures.py`). `tried`, shared for one `func` across rule lists, keeps each rule's result
    so shared rules run once."""
    if func.attrs is not None and func.attrs.get("tirx.is_scheduled", False):
        return ScheduledKernel(None, func)
    failure = None
    tried = {} if tried is None else tried
    with target:
        for rule in rules:
            key = _rule_key(rule)
            if key not in tried:
                tried[key] = _apply(rule, func, target)
            found = tried[key]
            if isinstance(found, RuleFailure):
                failure = failure or found
            elif found is not None:
                name = rule_name(rule)
                return ScheduledKernel(name, found, _taken(failure, name))
    return ScheduledKernel(None, func, failure)


def _apply(rule, func: tirx.PrimFunc, target) -> tirx.PrimFunc | RuleFailure | None:
    """What `rule` makes of `func` under `target`: the scheduled function, None where the rule
    does not take it, or its failure."""
    try:
        space = rule.apply(func, target, False)
    except Exception as error:  # TVM's InternalError among them: a finding, not a crash
        return rule_failure(rule_name(rule), error)
    if space is None:
        return None
    first = space if isinstance(space, s_tir.Schedule) else space[0]
    return first.mod["main"].with_attr("tirx.is_scheduled", True)


def _rule_key(rule) -> tuple:
    """One key for rules that schedule alike (dlight's rules are stateless and deterministic: one
    class and settings, one result; one without __dict__ is its own)."""
    state = getattr(rule, "__dict__", None)
    if state is None:
        return (id(rule),)
    return (type(rule), repr(sorted(state.items())))


def _taken(failure: RuleFailure | None, rule: str) -> RuleFailure | None:
    return None if failure is None else dataclasses.replace(failure, next_rule=rule)


def scheduled_kernels(
    mod: tvm.IRModule, target: tvm.target.Target, rules: list
) -> dict[str, ScheduledKernel]:
    """Every kernel of `mod` scheduled by `rules`, by name."""
    return {
        name: schedule_kernel(func, target, rules)
        for name, func in unscheduled_kernels(mod, target).items()
    }


def output_positions(func: tirx.PrimFunc) -> list[int]:
    """Positions of the parameters `func` writes (its outputs, last for FuseTIR's kernels)."""
    written: list[tirx.Buffer] = []

    def visit(block: s_tir.SBlock) -> None:
        written.extend(region.source for region in block.writes)

    tvm_ffi.structural_walk(func.body, [(s_tir.SBlock, visit)])
    return [i for i, param in enumerate(func.params) if any(param.same_as(w) for w in written)]


def kernel_arguments(func: tirx.PrimFunc, seed: int) -> list[np.ndarray]:
    """One call's arguments: floating inputs drawn from N(0, 1) by `seed`, other inputs zero (no
    draw is known valid for indices), outputs NaN (or zero) so an element never written shows."""
    rng, outputs, arguments = np.random.default_rng(seed), output_positions(func), []
    for position, param in enumerate(func.params):  # in TIRx, parameters are the buffers
        shape, dtype = [int(extent) for extent in param.shape], str(param.dtype)
        floating = np.issubdtype(np.dtype(dtype), np.floating)
        if position in outputs:
            arguments.append(np.full(shape, np.nan if floating else 0, dtype=dtype))
        elif floating:
            arguments.append(rng.standard_normal(shape).astype(dtype))
        else:
            arguments.append(np.zeros(shape, dtype=dtype))
    return arguments


def kernel_module(func: tirx.PrimFunc) -> tvm.IRModule:
    """`func` alone as the public `main` of a module (fused kernels are private), for
    `tvm.compile`."""
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def kernel_reference(func: tirx.PrimFunc, arguments: list[np.ndarray]) -> list[np.ndarray]:
    """What the unscheduled `func` writes for `arguments`, computed on the host (llvm); one array
    per output."""
    return kernel_references(func, [arguments])[0]


def kernel_references(func: tirx.PrimFunc, draws: list[list[np.ndarray]]) -> list[list]:
    """`kernel_reference` for each argument list of `draws`, compiling the kernel once."""
    executable = tvm.compile(kernel_module(func), target=tvm.target.Target(HOST))
    device, found = tvm.cpu(0), []
    for arguments in draws:
        tensors = [tvm.runtime.tensor(a, device=device) for a in arguments]
        executable["main"](*tensors)
        found.append([tensors[i].numpy() for i in output_positions(func)])
    return found
