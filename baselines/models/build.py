"""A model's Relax module compiled for a target with a rule list, and run on NumPy inputs.

The build is the backend's own pipeline with its default schedule pass given the rule list, as the
study's arms are (`baselines/pipeline.py`). The host (llvm) pipeline has no such pass: there `rules`
must be None. A tuned build is a rule list's build with some kernels tuner-scheduled.

The schedule pass is dlight's, kernel by kernel (`ScheduleEach`), but a rule that raises is recorded
and the kernel left to the next rule, where dlight's pass ends the build (`failures.py`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tvm
from tvm import relax, tirx

from pool_fusion_tuning.baselines.backend import pass_name
from pool_fusion_tuning.baselines.pipeline import backend_passes

from .failures import RuleFailure
from .kernels import schedule_kernel


def lower_model(
    mod: tvm.IRModule,
    target: tvm.target.Target,
    rules: list | None = None,
    replaced: dict[str, tirx.PrimFunc] | None = None,
    failures: dict[str, RuleFailure] | None = None,
) -> tvm.IRModule:
    """`mod` through the backend's passes, the default schedule pass replaced by `ScheduleEach`
    with `rules` (None: the backend's list). `replaced`: already scheduled kernels by name (a
    tuner's), put in right after FuseTIR and marked scheduled so default scheduling skips them.
    `failures` (a dict) receives the kernels a rule raised on, by name."""
    passes = backend_passes(target)
    names = [pass_name(transform) for transform in passes]
    if rules is not None and "ApplyDefaultSchedule" not in names:
        raise ValueError(f"the {target.kind.name} pipeline schedules with no rule list")
    if "ApplyDefaultSchedule" in names:
        position = names.index("ApplyDefaultSchedule")
        own = passes[position]
        found = {} if failures is None else failures
        passes[position] = ScheduleEach(list(own.rules) if rules is None else rules, found)
    with target, tvm.transform.PassContext(opt_level=3):
        for name, transform in zip(names, passes):
            mod = transform(mod)
            if name == "FuseTIR" and replaced:
                mod = _replace_kernels(mod, replaced)
    return mod


@tvm.transform.module_pass(opt_level=0, name="ApplyDefaultSchedule")
class ScheduleEach:
    """dlight's `ApplyDefaultSchedule` kernel by kernel (`kernels.schedule_kernel`): a rule that
    raises is recorded in `failures` (kernel name -> RuleFailure) and the kernel left to the next
    rule."""

    def __init__(self, rules: list, failures: dict[str, RuleFailure]):
        self.rules, self.failures = rules, failures

    def transform_module(self, mod: tvm.IRModule, _context) -> tvm.IRModule:
        updated = {}
        for var, func in mod.functions_items():
            if not isinstance(func, tirx.PrimFunc):
                continue
            target = func.attrs.get("target") if func.attrs is not None else None
            target = target or tvm.target.Target.current(allow_none=False)
            scheduled = schedule_kernel(func, target, self.rules)
            if scheduled.failure is not None:
                self.failures[var.name_hint] = scheduled.failure
            if scheduled.rule is not None:
                updated[var] = scheduled.func
        for var, func in updated.items():
            mod[var] = func
        return mod


def _replace_kernels(mod: tvm.IRModule, replaced: dict[str, tirx.PrimFunc]) -> tvm.IRModule:
    mod = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    for name, func in replaced.items():
        # A tuner's kernel is public as "main" (kernel_module); here it is the kernel `name`.
        func = func.with_attr("global_symbol", name).with_attr("tirx.is_scheduled", True)
        mod.update_func(mod.get_global_var(name), func)
    return mod


def build_model(
    mod: tvm.IRModule,
    target: tvm.target.Target,
    rules: list | None = None,
    replaced: dict[str, tirx.PrimFunc] | None = None,
    failures: dict[str, RuleFailure] | None = None,
) -> tvm.runtime.Executable:
    """The VM executable of `mod` (`tvm.compile`'s Executable; `export_library` writes it);
    `failures` as `lower_model` gives them."""
    lowered = lower_model(mod, target, rules, replaced, failures)
    return relax.build(lowered, target=target, relax_pipeline=None, tir_pipeline="default")


def tuned_kernels(path: Path) -> dict[str, tirx.PrimFunc]:
    """Scheduled kernels by name, from one IRModule's JSON (`tvm.ir.save_json`, as
    `--tune-top` writes them)."""
    mod = tvm.ir.load_json(Path(path).read_text())
    return {gv.name_hint: func for gv, func in mod.functions.items()}


def run_model(executable, inputs: list[np.ndarray], device) -> list[np.ndarray]:
    """`main` called on `inputs` in a fresh VM on `device`; every output, flattened in order as
    PyTorch's outputs flatten."""
    vm = relax.VirtualMachine(executable, device)
    result = vm["main"](*[tvm.runtime.tensor(x, device=device) for x in inputs])
    device.sync()
    return flatten_outputs(result)


def flatten_outputs(result) -> list[np.ndarray]:
    """A VM result (a tensor, or nested tuples of tensors) as a list of arrays."""
    if hasattr(result, "numpy"):
        return [result.numpy()]
    return [array for item in result for array in flatten_outputs(item)]
