"""The backend's Relax pipeline for a target, and its default schedule pass (dlight's rules)."""

from __future__ import annotations

from types import ModuleType

import tvm


def backend_pipeline(target: tvm.target.Target) -> ModuleType:
    if target.kind.name == "cuda":
        from tvm.relax.backend.cuda import pipeline
    else:  # relax.pipeline has no llvm lowering passes in 0.27; take the CPU backend directly
        from tvm.relax.backend.cpu_generic import pipeline
    return pipeline


def pass_name(transform) -> str:
    return str(transform.info.name).split(".")[-1]


def default_schedule_pass(target: tvm.target.Target) -> tvm.transform.Pass:
    """The backend's ApplyDefaultSchedule (dlight rules), as the ON arm runs it."""
    for transform in backend_pipeline(target).legalize_passes(target):
        if pass_name(transform) == "ApplyDefaultSchedule":
            return transform
    raise ValueError(f"the {target.kind.name} pipeline has no default schedule pass")
