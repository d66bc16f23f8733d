"""The backend's default rules (or the fixed ones) as a tuning candidate, timed like the rest."""

from __future__ import annotations

from dataclasses import dataclass

import tvm

from pool_fusion_tuning.baselines.backend import default_schedule_pass
from pool_fusion_tuning.baselines.masked_loads import mask_loads_for
from pool_fusion_tuning.baselines.rules import fixed_schedule_pass

# The rule lists a candidate names: the backend's own, and that list with `WindowReduction`.
SCHEDULE_PASSES = {"default": default_schedule_pass, "fixed": fixed_schedule_pass}


def default_schedule(
    func: tvm.tirx.PrimFunc, target: tvm.target.Target, rules: str = "default"
) -> tvm.tirx.PrimFunc:
    """The fused function as the backend's default rules schedule it (unscheduled on llvm);
    `rules="fixed"` adds the candidate `WindowReduction` rule."""
    if target.kind.name != "cuda":
        return func
    with target:
        mod = SCHEDULE_PASSES[rules](target)(tvm.IRModule({"main": func}))
    return mod["main"]


@dataclass(frozen=True)
class DefaultSchedule:
    """The backend's default rules (or the fixed ones) as a candidate, timed like the rest;
    `masked_loads`: then its guarded loads masked, as the arm that compiles it does
    (`one-kernel`)."""

    rules: str = "default"
    masked_loads: bool = False

    def apply(self, func: tvm.tirx.PrimFunc, target: tvm.target.Target) -> tvm.tirx.PrimFunc:
        scheduled = default_schedule(func, target, self.rules)
        return mask_loads_for(scheduled, target) if self.masked_loads else scheduled

    def to_dict(self) -> dict:
        masked = {"masked_loads": True} if self.masked_loads else {}
        return {"default": True, "rules": self.rules, **masked}
