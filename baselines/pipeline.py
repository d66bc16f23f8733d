"""One Relax pipeline for every arm: the backend's own passes, with the arm's hooks applied."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import tvm
from tvm import relax, s_tir

from .backend import backend_pipeline, pass_name
from .bind_scalars import BindScalarConstants
from .case import Case
from .graph import build_graph
from .masked_loads import masked_module
from .protocols import Schedule
from .rules import schedule_pass
from .template import POOL_BLOCK
from .whole_graph import FuseAroundReduction

FUSION_PASSES = ("FuseOps", "FuseTIR")
DUMPED_PASSES = ("FuseOps", "FuseAroundReduction", "FuseTIR", "ApplyDefaultSchedule")
HOST = {"kind": "llvm", "mcpu": "generic"}
# Writes one IR file of an arm's lowering, (file name, text): the caller decides where and how
# (a run folder writes atomically, never through a planted link).
Dump = Callable[[str, str], None]
# MetaSchedule needs the CUDA target fully described (AutoBind fails without these limits), so
# every arm uses this one.
CUDA_LIMITS = {
    "max_threads_per_block": 1024,
    "max_shared_memory_per_block": 49152,
    "thread_warp_size": 32,
    "registers_per_block": 65536,
}


def make_target(kind: str, arch: str = "sm_90") -> tvm.target.Target:
    """The target of every build; `(kind, arch)` is what runs store to rebuild it."""
    if kind == "cuda":
        return tvm.target.Target({"kind": "cuda", "arch": arch, **CUDA_LIMITS}, host=HOST)
    if kind == "llvm":
        return tvm.target.Target({"kind": "llvm"})
    raise ValueError(f"unknown target {kind!r}: use cuda or llvm")


def legalize(
    case: Case,
    arm,
    target: tvm.target.Target,
    dump: Dump | None = None,
    stop_after: str | None = None,
) -> tvm.IRModule:
    """The backend's dispatch and legalization passes with the arm's hooks (call under target).

    `stop_after` names a pass after which to stop (e.g. "FuseTIR", for the unscheduled kernel).
    """
    mod = build_graph(case, split_after_pool=arm.split_after_pool)
    backend = backend_pipeline(target)
    passes = backend.library_dispatch_passes(target) + backend.legalize_passes(target)
    for index, transform in enumerate(passes):
        name = pass_name(transform)
        if name == "ApplyDefaultSchedule" and arm.rules != "default":
            transform = schedule_pass(arm.rules, target)
        if not (name in FUSION_PASSES and not arm.fuse):
            mod = transform(mod)
        if name == "ApplyDefaultSchedule" and arm.masked_loads:
            mod = masked_module(mod)
        if name == "FuseOps" and arm.whole_graph:
            if dump is not None:  # FuseOps' own groups; the merged module is dumped below
                dump(f"{index:02d}_{name}.py", mod.script())
            # module_pass makes the class a Pass; mypy does not apply class decorators.
            fuse = FuseAroundReduction()
            mod, name = fuse(mod), "FuseAroundReduction"  # type: ignore[operator]
        if name == "FuseTIR" and arm.bind_constants:
            pool = fused_pool_function(mod)[0].name_hint
            mod = BindScalarConstants([pool])(mod)  # type: ignore[operator]
        if name == "FuseTIR" and arm.schedule is not None:
            # Before default scheduling: the rule list skips functions marked scheduled.
            mod, record = replace_fused_pool(mod, arm.schedule, target)
            if dump is not None:
                dump("intervention.json", json.dumps(record, indent=2))
        if dump is not None and name in DUMPED_PASSES:
            dump(f"{index:02d}_{name}.py", mod.script())
        if name == stop_after:
            break
    return mod


def lower(case: Case, arm, target: tvm.target.Target, dump: Dump | None = None) -> tvm.IRModule:
    """Run the backend pipeline on the Case's graph with the arm's hooks; return the IRModule."""
    backend = backend_pipeline(target)
    config = {"relax.backend.use_cuda_graph": arm.cuda_graph}
    with target, tvm.transform.PassContext(opt_level=3, config=config):
        mod = legalize(case, arm, target, dump)
        for transform in backend.dataflow_lower_passes(target) + backend.finalize_passes(target):
            mod = transform(mod)
    return mod


def fused_stage(case: Case, arm, target: tvm.target.Target) -> tvm.IRModule:
    """The module right after FuseTIR: what tuners take their kernel from."""
    with target, tvm.transform.PassContext(opt_level=3):
        return legalize(case, arm, target, stop_after="FuseTIR")


def backend_passes(target: tvm.target.Target) -> list:
    """Every pass of the backend's pipeline, in order."""
    backend = backend_pipeline(target)
    return (
        backend.library_dispatch_passes(target)
        + backend.legalize_passes(target)
        + backend.dataflow_lower_passes(target)
        + backend.finalize_passes(target)
    )


def unscheduled(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """Any Relax module through the backend's passes up to default scheduling (excluded)."""
    with target, tvm.transform.PassContext(opt_level=3):
        for transform in backend_passes(target):
            if pass_name(transform) == "ApplyDefaultSchedule":
                break
            mod = transform(mod)
    return mod


def build(
    case: Case, arm, target: tvm.target.Target, dump: Dump | None = None
) -> tvm.runtime.Executable:
    """Lower and compile one arm; returns the `tvm.compile` Executable."""
    mod = lower(case, arm, target, dump)
    return relax.build(mod, target=target, relax_pipeline=None, tir_pipeline="default")


def fused_pool_function(mod: tvm.IRModule) -> tuple[tvm.ir.GlobalVar, tvm.tirx.PrimFunc]:
    """The one PrimFunc that holds the pool and at least one fused epilogue block."""
    found = [
        (gv, func)
        for gv, func in mod.functions.items()
        if isinstance(func, tvm.tirx.PrimFunc) and _has_fused_pool(func)
    ]
    if len(found) != 1:
        raise ValueError(f"expected one fused pool function, found {len(found)}")
    return found[0]


def _has_fused_pool(func: tvm.tirx.PrimFunc) -> bool:
    sch = s_tir.Schedule(func)
    names = [sch.get(block).name_hint for block in sch.get_child_blocks(sch.get_sblock("root"))]
    return POOL_BLOCK in names and len(names) > 1


def _digest(func) -> str:
    return hashlib.sha256(func.script().encode()).hexdigest()


def replace_fused_pool(
    mod: tvm.IRModule, schedule: Schedule, target: tvm.target.Target
) -> tuple[tvm.IRModule, dict]:
    """Schedule the fused pool function with `schedule`; other functions must stay unchanged."""
    gv, func = fused_pool_function(mod)
    others = {key.name_hint: _digest(value) for key, value in mod.functions.items() if key != gv}
    mod = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    mod.update_func(gv, schedule.apply(func, target))
    record = {
        "replaced_function": gv.name_hint,
        "schedule": schedule.to_dict(),
        "before_sha256": _digest(func),
        "after_sha256": _digest(mod[gv]),
        "unchanged_functions": others,
        "other_functions_unchanged": all(
            _digest(mod[key]) == digest for key, digest in others.items()
        ),
    }
    if not record["other_functions_unchanged"]:
        raise RuntimeError("replacing the fused pool function changed another function")
    return mod, record
