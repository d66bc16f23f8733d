"""Which dlight rule schedules which kernel: compiler facts a sweep records when it measures, so
that its report renders from the folder alone, without TVM.

Which rule takes a kernel is a CUDA question (the candidate rule is a GPU rule), so it is asked
of a CUDA target whatever the run's target.
"""

from __future__ import annotations

import tvm
from tvm.s_tir import dlight

from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.graph import REDUCTION_GRAPHS
from pool_fusion_tuning.baselines.pipeline import (
    fused_pool_function,
    fused_stage,
    make_target,
    unscheduled,
)
from pool_fusion_tuning.baselines.rules import default_rules, fixed_rules, rule_assignment

# The kernels whose rule a sweep records, by the arm whose pipeline makes them: the pool kernel
# FuseOps makes (as ON has it, before any rule), and the one kernel of the whole graph.
FUSED_KERNELS = {"pool": "on", "one-kernel": "one-kernel"}


def fused_kernel_rules(case: Case) -> dict:
    """Per fused kernel of `case`: the rule the fixed rule list schedules it with."""
    target = make_target("cuda")
    rules = fixed_rules(target)
    return {
        kernel: rule_assignment(_fused_only(case, target, arm), target, rules)
        for kernel, arm in FUSED_KERNELS.items()
    }


def _fused_only(case: Case, target, arm: str) -> tvm.IRModule:
    gv, func = fused_pool_function(fused_stage(case, ARMS[arm], target))
    return tvm.IRModule({gv: func})


def reduction_rules() -> dict:
    """Per graph with a reduction: the rule of each kernel under both rule lists, and whether
    the fixed list leaves every kernel exactly as the default list schedules it (same text)."""
    target = make_target("cuda")
    rows, default, fixed = {}, default_rules(target), fixed_rules(target)
    for name, graph in REDUCTION_GRAPHS.items():
        mod = unscheduled(graph(), target)
        with target:
            same = _schedule(mod, default).script() == _schedule(mod, fixed).script()
        rows[name] = {
            "default": rule_assignment(mod, target, default),
            "fixed": rule_assignment(mod, target, fixed),
            "unchanged": same,
        }
    return rows


def _schedule(mod, rules):
    # A copy: ApplyDefaultSchedule writes the scheduled functions into the module it is given.
    return dlight.ApplyDefaultSchedule(*rules)(tvm.IRModule(dict(mod.functions)))
