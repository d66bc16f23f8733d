"""Per kernel of a model, for CUDA without a GPU: the rule that takes it under each rule list, the
launch it gives, its reduction window, and whether it has the idle-lane pattern.

Nothing runs: the launch is read off the scheduled TIR. The result is plain data (`to_dict`), for a
report rendered without TVM.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import tvm
import tvm_ffi
from tvm import s_tir, tirx

from pool_fusion_tuning.baselines.anatomy import launch_configs
from pool_fusion_tuning.baselines.kernel_names import device_kernel
from pool_fusion_tuning.baselines.pipeline import make_target, unscheduled
from pool_fusion_tuning.baselines.rules import rule_name

from .declines import REASONS, decline_reason
from .failures import RuleFailure
from .kernels import kernel_calls, prim_funcs, schedule_kernel
from .kernels import rule_lists as named_rule_lists
from .pattern import CRITERION, PATTERN_LIST, has_pattern


@dataclass(frozen=True)
class KernelLaunch:
    grid: int  # thread blocks
    block: int  # threads per block


@dataclass(frozen=True)
class KernelAnalysis:
    """One kernel (PrimFunc) of the model.

    window        elements reduced into each output by its largest reduction; None without a
                  reduction or with a non-constant extent
    outputs       the values that reduction writes
    calls         launches of the kernel per call of the model (layers of one shape share one)
    rules         per rule list, the rule that takes the kernel (None: none does)
    launches      per rule list, its launch (None: no thread is bound)
    cross_thread  per rule list, whether a reduction loop is bound to threadIdx
    pattern       CRITERION (pattern.py), under the default list
    failures      per rule list where a rule raised: the rule, TVM's message, the upstream
                  issue, and the next rule, which `rules` then names (failures.py)
    declines      per rule list holding the window rule that leaves this kernel to another
                  rule: why (declines.py)
    """

    name: str
    window: int | None
    outputs: int | None
    calls: int
    rules: dict[str, str | None]
    launches: dict[str, KernelLaunch | None]
    cross_thread: dict[str, bool]
    pattern: bool
    failures: dict[str, RuleFailure] = field(default_factory=dict)
    declines: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ModelAnalysis:
    target: dict
    criterion: str
    kernels: tuple[KernelAnalysis, ...]
    declines: dict = field(default_factory=lambda: dict(REASONS))  # each reason, stated

    def pattern_kernels(self) -> list[KernelAnalysis]:
        return [kernel for kernel in self.kernels if kernel.pattern]

    def failing_lists(self) -> list[str]:
        """The rule lists that cannot build the model as TVM ships them: a rule raises."""
        return list(dict.fromkeys(name for k in self.kernels for name in k.failures))

    def rule_changes(self, before: str = "default", after: str = "fixed") -> list[KernelAnalysis]:
        """The kernels whose rule differs between two lists (none, for a control model)."""
        return [k for k in self.kernels if k.rules[before] != k.rules[after]]

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "criterion": self.criterion,
            "kernels": [kernel.to_dict() for kernel in self.kernels],
            "declines": self.declines,
        }


def analyze(
    mod: tvm.IRModule, rule_lists: dict[str, list] | None = None, arch: str = "sm_90"
) -> ModelAnalysis:
    """Every kernel of the Relax module `mod` for CUDA `arch` under each rule list (default:
    "default" and "fixed"; "default" is required, the pattern being a property of its schedule)."""
    target = make_target("cuda", arch)
    lists = named_rule_lists(target) if rule_lists is None else rule_lists
    return analyze_lowered(unscheduled(mod, target), target, lists)


def analyze_lowered(
    lowered: tvm.IRModule, target: tvm.target.Target, rule_lists: dict[str, list]
) -> ModelAnalysis:
    """`analyze` of a module already through the backend's passes for the CUDA `target`
    (`pipeline.unscheduled`)."""
    calls = kernel_calls(lowered)
    kernels = tuple(
        _analyze_kernel(name, func, calls.get(name, 0), target, rule_lists)
        for name, func in sorted(prim_funcs(lowered).items())
    )
    return ModelAnalysis(dict(target.export()), CRITERION, kernels)


def _analyze_kernel(
    name: str, func: tirx.PrimFunc, calls: int, target, lists: dict
) -> KernelAnalysis:
    window, outputs = reduction_window(func)
    rules, launches, cross, failures, declines = {}, {}, {}, {}, {}
    tried: dict = {}  # the lists share most rules: each applied once
    for list_name, rules_of_list in lists.items():
        scheduled = schedule_kernel(func, target, rules_of_list, tried)
        rules[list_name] = scheduled.rule
        if scheduled.failure is not None:
            failures[list_name] = scheduled.failure
        names = [rule_name(rule) for rule in rules_of_list]
        reason = decline_reason(func, window, names, scheduled.rule)
        if reason is not None:
            declines[list_name] = reason
        launches[list_name] = launch(name, scheduled.func)
        cross[list_name] = reduces_across_threads(scheduled.func)
    default = launches[PATTERN_LIST]
    pattern = default is not None and has_pattern(
        window, outputs, cross[PATTERN_LIST], default.grid, default.block
    )
    return KernelAnalysis(
        name, window, outputs, calls, rules, launches, cross, pattern, failures, declines
    )


def reduction_window(func: tirx.PrimFunc) -> tuple[int | None, int | None]:
    """(elements reduced into each output, outputs) of the largest reduction block of the
    unscheduled `func`; (None, None) without a reduction or with a non-constant extent."""
    found = []

    def visit(block: s_tir.SBlock) -> None:
        reduce = [v for v in block.iter_vars if v.iter_type == tirx.IterVar.CommReduce]
        if reduce:
            spatial = [v for v in block.iter_vars if v.iter_type == tirx.IterVar.DataPar]
            found.append((_extent(reduce), _extent(spatial)))

    tvm_ffi.structural_walk(func.body, [(s_tir.SBlock, visit)])
    if not found or any(window is None or outputs is None for window, outputs in found):
        return None, None
    return max(found)


def _extent(iter_vars) -> int | None:
    extents = [v.dom.extent for v in iter_vars]
    if not all(isinstance(e, tirx.IntImm) for e in extents):
        return None
    return math.prod(e.value for e in extents)


def reduces_across_threads(func: tirx.PrimFunc) -> bool:
    """Whether some block's reduction iterator is bound to threadIdx: the block's threads share
    one output's reduction."""
    thread_vars: list[tirx.Var] = []
    realizes: list[s_tir.SBlockRealize] = []

    def visit_loop(loop: tirx.For) -> None:
        if loop.kind == tirx.ForKind.THREAD_BINDING and loop.thread_binding.thread_tag.startswith(
            "threadIdx."
        ):
            thread_vars.append(loop.loop_var)

    tvm_ffi.structural_walk(
        func.body, [(tirx.For, visit_loop), (s_tir.SBlockRealize, realizes.append)]
    )
    return any(
        _uses_any(value, thread_vars)
        for realize in realizes
        for var, value in zip(realize.block.iter_vars, realize.iter_values)
        if var.iter_type == tirx.IterVar.CommReduce
    )


def _uses_any(expr, variables) -> bool:
    used: list[tirx.Var] = []
    tvm_ffi.structural_walk(expr, [(tirx.Var, used.append)])
    return any(u.same_as(v) for u in used for v in variables)


def launch(name: str, func: tirx.PrimFunc) -> KernelLaunch | None:
    """Grid and block of the scheduled `func`, from its thread bindings."""
    found = launch_configs(tvm.IRModule({name: func})).get(device_kernel(name))
    return None if found is None else KernelLaunch(found["grid"], found["block"])
