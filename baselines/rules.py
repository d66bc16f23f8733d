"""The candidate default rules for apache/tvm#20401, and the rule lists the project measures.

`window_reduction.py` is the candidate rule as TVM would ship it: one file, needing only TVM.
`WholeGraphWindowReduction` here adds the project's one extra, the whole graph as one kernel
(`whole_graph.py`): a concatenation's branches become one load at a selected channel, 0-d inputs are
loaded once per thread (`branch_loads.py`), and an output a later output reads reaches it in a
register (`output_registers.py`). On every other kernel it is the shipped rule, and runs record it
by that rule's name, WindowReduction (`rule_name`).

The rule lists (`RULE_LISTS`), each the backend's default list changed where it matters:
    default        as the backend has it (the ON arm)
    fixed          WindowReduction and then LargeReduction (`large_reduction.py`: few-output
                   reductions in two stages across blocks and threads) right before Reduction,
                   and RowReduction (`row_reduction.py`: a warp per short softmax or layer-norm
                   row) right before GeneralReduction: the proposal (arm `fixed`)
    reduction-fix  Reduction and GeneralReduction given a serial path for small reductions
                   (`serial_reduction.py`): the root cause fixed in place (arm `reduction-fix`)

RowReduction is the project's (`tuning/row_bench.py`, reports/h200/rows/); the upstream patch
(tuning/upstream/) holds WindowReduction alone.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import tvm
from tvm import s_tir, tirx
from tvm.s_tir import dlight
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule

from . import window_reduction
from .backend import default_schedule_pass
from .branch_loads import select_branch_loads, stage_scalars
from .large_reduction import LargeReduction
from .output_registers import keep_read_outputs_local
from .row_reduction import with_row_reduction
from .serial_reduction import SerialGeneralReduction, SerialReduction
from .window_reduction import MAX_WINDOW, _choose_launch, _inline_window, _schedule_window


def rule_hash() -> str:
    """The first 16 hex digits of the SHA-256 of window_reduction.py, the file TVM would ship:
    every run measuring the rule records it, and PR.md cites only runs of the shipped one."""
    return hashlib.sha256(Path(window_reduction.__file__).read_bytes()).hexdigest()[:16]


class WholeGraphWindowReduction(GPUScheduleRule):
    """window_reduction.WindowReduction plus the whole graph's one kernel; runs record it by the
    shipped rule's name (`rule_name`), which it is on every other kernel."""

    def apply(
        self, func: tirx.PrimFunc, target: tvm.target.Target, _: bool
    ) -> s_tir.Schedule | None:
        """The window's schedule of `func`, or None where it is no window of up to MAX_WINDOW
        terms or scheduling fails (the list's next rule takes it, as in dlight)."""
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        try:
            window = _inline_window(sch)
            if window is None or not 1 < window.size <= MAX_WINDOW:
                return None
            window = keep_read_outputs_local(sch, window)
            thread_loop = _schedule_window(sch, window, _choose_launch(window, target))
            if window.inlined_input:
                select_branch_loads(sch, window.reduction)
                stage_scalars(sch, window.reduction, thread_loop)
        except Exception:  # pylint: disable=broad-exception-caught
            return None
        return sch


def default_rules(target: tvm.target.Target) -> list:
    """The backend's own rule list, as the ON arm runs it."""
    return list(default_schedule_pass(target).rules)


# `WindowReduction` goes right before this rule, which would give a 2x2 average pool one block of 4
# threads per output (earlier runs record `GeneralReduction` here).
FIXED_RULE_BEFORE = "Reduction"


def fixed_rules(target: tvm.target.Target) -> list:
    """The default list with `WindowReduction` and `LargeReduction` right before
    `FIXED_RULE_BEFORE` and `RowReduction` right before GeneralReduction."""
    rules = default_rules(target)
    position = [type(rule).__name__ for rule in rules].index(FIXED_RULE_BEFORE)
    ours = [WholeGraphWindowReduction(), LargeReduction()]
    return with_row_reduction(rules[:position] + ours + rules[position:])


def reduction_fix_rules(target: tvm.target.Target) -> list:
    """The default list with Reduction and GeneralReduction replaced by their serial variants."""
    serial = {"Reduction": SerialReduction(), "GeneralReduction": SerialGeneralReduction()}
    return [serial.get(type(rule).__name__, rule) for rule in default_rules(target)]


RULE_LISTS = {"default": default_rules, "fixed": fixed_rules, "reduction-fix": reduction_fix_rules}


def schedule_pass(rules: str, target: tvm.target.Target) -> tvm.transform.Pass:
    """ApplyDefaultSchedule with the rule list named `rules`."""
    return dlight.ApplyDefaultSchedule(*RULE_LISTS[rules](target))


def fixed_schedule_pass(target: tvm.target.Target) -> tvm.transform.Pass:
    return schedule_pass("fixed", target)


def rule_name(rule: GPUScheduleRule) -> str:
    """The name runs record `rule` by: its class's, the shipped rule's for ours."""
    if isinstance(rule, WholeGraphWindowReduction):
        return window_reduction.WindowReduction.__name__
    return type(rule).__name__


def first_rule(
    func: tirx.PrimFunc, target: tvm.target.Target, rules: list
) -> tuple[str | None, s_tir.Schedule | None]:
    """(name, schedule) of the first rule that schedules `func`, as ApplyDefaultSchedule picks
    it; (None, None) if none does."""
    with target:
        for rule in rules:
            sch = rule.apply(func, target, False)
            if sch is not None:
                return rule_name(rule), sch
    return None, None


def rule_assignment(mod: tvm.IRModule, target: tvm.target.Target, rules: list) -> dict:
    """Which rule schedules each PrimFunc, first match wins as in ApplyDefaultSchedule."""
    return {
        gv.name_hint: first_rule(func, target, rules)[0]
        for gv, func in mod.functions.items()
        if isinstance(func, tirx.PrimFunc)
    }
