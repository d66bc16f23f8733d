"""The fused pool function as the tuners take it: extracted after FuseTIR, and compiled alone.

Every tuning candidate (Optuna or MetaSchedule) goes through `compile_kernel` in a builder process
(`evaluator.py`) and is checked and timed by one measuring process (`runner.py`,
`kernel_check.py`), so their figures are comparable.
"""

from __future__ import annotations

import threading
from pathlib import Path

import tvm

from pool_fusion_tuning.baselines.arms import tuned_task_arm
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.pipeline import fused_pool_function, fused_stage
from pool_fusion_tuning.baselines.target import TargetSpec

_FUSED_CACHE: dict = {}
# Relax's BlockBuilder keeps its scopes on one stack shared by every thread: tuners running in
# threads (study._tune) build their graphs one at a time.
_BUILDING = threading.Lock()


def fused_function(
    case: Case, target: TargetSpec, whole: bool = False
) -> tuple[str, tvm.tirx.PrimFunc]:
    """(name, PrimFunc) of the fused pool function, after FuseTIR, before default scheduling;
    with `whole`, the one kernel of the whole graph (arm `one-kernel`)."""
    key = (case, target.kind, target.arch, whole)  # not the device: the same kernel
    with _BUILDING:
        if key not in _FUSED_CACHE:
            arm = tuned_task_arm(whole)
            gv, func = fused_pool_function(fused_stage(case, arm, target.tvm()))
            _FUSED_CACHE[key] = (gv.name_hint, func)
        return _FUSED_CACHE[key]


def bias_count(func) -> int:
    """The kernel's 0-d inputs: the biases FuseOps lifted into parameters (each one 1.0)."""
    return sum(1 for param in func.params if len(param.ty.shape) == 0)


def kernel_module(func: tvm.tirx.PrimFunc) -> tvm.IRModule:
    """The fused function alone, public as `main` (fused functions are private): how it is
    compiled, tuned, and looked up in a MetaSchedule database."""
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def compile_kernel(
    func: tvm.tirx.PrimFunc, target: tvm.target.Target, path: Path
) -> tvm.runtime.Executable:
    """Compile one scheduled PrimFunc into a shared library the runner can load; returns the
    executable (its device code keys the kernel's measurement)."""
    executable = tvm.compile(kernel_module(func), target=target)
    executable.export_library(str(path))
    return executable
