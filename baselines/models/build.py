"""A model's Relax module compiled for a target with a rule list, and run on NumPy inputs.

The build is the backend's own pipeline with its default schedule pass given the rule list, as
the study's arms are (`baselines/pipeline.py`); only the rule list changes between "default"
and "fixed". The host (llvm) pipeline has no default schedule pass: there `rules` must be None.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.s_tir import dlight

from baselines.backend import pass_name
from baselines.pipeline import backend_passes


def lower_model(
    mod: tvm.IRModule, target: tvm.target.Target, rules: list | None = None
) -> tvm.IRModule:
    """`mod` through the backend's passes, its default schedule pass replaced by one with
    `rules` (None: the backend's own list)."""
    passes = backend_passes(target)
    if rules is not None:
        names = [pass_name(transform) for transform in passes]
        if "ApplyDefaultSchedule" not in names:
            raise ValueError(f"the {target.kind.name} pipeline schedules with no rule list")
        passes[names.index("ApplyDefaultSchedule")] = dlight.ApplyDefaultSchedule(*rules)
    with target, tvm.transform.PassContext(opt_level=3):
        for transform in passes:
            mod = transform(mod)
    return mod


def build_model(mod: tvm.IRModule, target: tvm.target.Target, rules: list | None = None):
    """The VM executable of `mod` (`tvm.compile`'s Executable; `export_library` writes it)."""
    lowered = lower_model(mod, target, rules)
    return relax.build(lowered, target=target, relax_pipeline=None, tir_pipeline="default")


def run_model(executable, inputs: list[np.ndarray], device) -> list[np.ndarray]:
    """`main` called on `inputs` in a fresh VM on `device`; every output, flattened in order
    (a tuple of outputs as PyTorch's outputs flatten)."""
    vm = relax.VirtualMachine(executable, device)
    result = vm["main"](*[tvm.runtime.tensor(x, device=device) for x in inputs])
    device.sync()
    return flatten_outputs(result)


def flatten_outputs(result) -> list[np.ndarray]:
    """A VM result (a tensor, or nested tuples of tensors) as a list of arrays."""
    if hasattr(result, "numpy"):
        return [result.numpy()]
    return [array for item in result for array in flatten_outputs(item)]
