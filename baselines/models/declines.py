"""Why the window rule leaves a kernel to the rules after it, as the census of a zoo (`tune models
--zoo`) says for every flagged kernel the candidate list does not take.

A kernel a candidate rule takes (the window rule, or RowReduction for a short row) is not declined;
the analysis names that rule. Otherwise `window_reduction.py` declines silently (a rule returns
None, as dlight's do), so the reason is read here off the unscheduled kernel, in order of what
matters most to a reader: an earlier rule took it; a window (or row) over MAX_WINDOW; no reduction
sliding along the outputs (rows, global pools, matmuls); more than one reduction; else another form
the rule does not take.
"""

from __future__ import annotations

import tvm_ffi
from tvm import s_tir, tirx

from pool_fusion_tuning.baselines.window_reduction import MAX_WINDOW

# The candidate rule's class name, in the lists that hold it (baselines/rules.py).
WINDOW_RULE = "WindowReduction"
# The candidate list's rule for short rows (baselines/row_reduction.py).
ROW_RULE = "RowReduction"
EARLIER = "earlier rule"
OVER = f"window over {MAX_WINDOW}"
ROWS = "not sliding"
SEVERAL = "several reductions"
OTHER = "other form"
# Each reason as a report states it (analysis.json carries it, as it carries the criterion).
REASONS = {
    EARLIER: "a rule before the window rule in the list takes the kernel (Matmul, GEMV)",
    OVER: f"its window is over {MAX_WINDOW} elements, more than one thread reduces serially",
    ROWS: "no reduction slides along the outputs: each output reduces a row of its own "
    "(softmax and layer-norm rows of a form RowReduction does not take, global pools, matmuls)",
    SEVERAL: "more than one reduction in the kernel",
    OTHER: "a layout, an epilogue or a lone reduction of padded values the rule does not take",
}


def decline_reason(
    func: tirx.PrimFunc, window: int | None, rule_names: list[str], rule: str | None
) -> str | None:
    """Why the rule list `rule_names` does not give `func` (largest reduction `window`) to the
    window rule, where it holds it and `rule` took the kernel; None where the list lacks it, the
    window rule or RowReduction takes the kernel, or there is no constant reduction (`window`
    None)."""
    if WINDOW_RULE not in rule_names or rule in (WINDOW_RULE, ROW_RULE) or window is None:
        return None
    if rule in rule_names and rule_names.index(rule) < rule_names.index(WINDOW_RULE):
        return EARLIER
    if window > MAX_WINDOW:
        return OVER
    reductions = _reductions(func)
    if not any(_slides(block) for block in reductions):
        return ROWS
    return SEVERAL if len(reductions) > 1 else OTHER


def _reductions(func: tirx.PrimFunc) -> list[s_tir.SBlock]:
    found: list[s_tir.SBlock] = []

    def visit(block: s_tir.SBlock) -> None:
        if any(v.iter_type == tirx.IterVar.CommReduce for v in block.iter_vars):
            found.append(block)

    tvm_ffi.structural_walk(func.body, [(s_tir.SBlock, visit)])
    return found


def _slides(block: s_tir.SBlock) -> bool:
    """Whether some read index of `block` moves with both an output axis (extent over 1) and a
    reduction axis: a window sliding along the outputs."""
    spatial, reduce = [], []
    for v in block.iter_vars:
        extent = v.dom.extent
        if v.iter_type == tirx.IterVar.CommReduce:
            reduce.append(v.var)
        elif not (isinstance(extent, tirx.IntImm) and extent.value == 1):
            spatial.append(v.var)
    return any(
        _uses(r.min, spatial) and _uses(r.min, reduce) for read in block.reads for r in read.region
    )


def _uses(expr, variables: list) -> bool:
    used: list[tirx.Var] = []
    tvm_ffi.structural_walk(expr, [(tirx.Var, used.append)])
    return any(u.same_as(v) for u in used for v in variables)
