"""A candidate default rule for apache/tvm#20401, written like a dlight rule, and where it goes.

`WindowReduction` takes a reduction over a small constant window followed by an elementwise
chain (MaxPool + Add): outputs are spread over threads, each thread reduces its window in
registers and applies the chain in place; block size, outputs per thread and vector loads follow
the shape. It runs right before `GeneralReduction`, which would spread the window over 256
threads; everything else keeps the default rule. It also takes the whole graph as one kernel
(`whole_graph.py`): an injective prologue is inlined into the window's loads, and the thread
that pools a value writes every output along the chain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import tvm
from tvm import s_tir, tirx
from tvm.s_tir import dlight
from tvm.s_tir.dlight.analysis import normalize_prim_func
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule

from .backend import default_schedule_pass
from .template import PoolSchedule, epilogue_outputs, inline_prologue, reduction_block, vector_fits

# Window elements one thread reduces serially. Past this, spreading the reduction over threads
# (GeneralReduction) can pay for its barriers; global pooling and long sums stay there.
MAX_WINDOW = 64
# Window reads per input element: from this on (stride 1), windows overlap so much that a
# thread taking two rows of outputs loads each input row once instead of twice.
ROW_REUSE = 3


class WindowReduction(GPUScheduleRule):
    """A small-window reduction whose consumers are elementwise: one thread per output (per
    two rows of outputs where windows overlap), the window unrolled in registers and loaded
    with vector instructions where its columns are aligned."""

    def apply(self, func: tirx.PrimFunc, target: tvm.target.Target, _: bool):
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        shape = small_window_shape(func)
        if shape is None:
            return None
        sch = s_tir.Schedule(func)
        choose_schedule(shape).schedule(sch, "cuda")
        return sch


@dataclass(frozen=True)
class WindowShape:
    """What the rule reads off a small-window reduction to choose its schedule."""

    outputs: int  # reduced values
    window: int  # elements reduced into each
    inputs: int  # elements of the reduced tensor
    columns: int  # the window's extent along the innermost (W) axis
    stride: int | None  # input columns between neighbouring outputs; None if not affine
    input_width: int
    output_width: int
    prologue: bool = False  # the pooled tensor is computed in the kernel, not read from memory


def small_window_shape(func: tirx.PrimFunc) -> WindowShape | None:
    """The shape of `func` if it is a small-window reduction of NCHW values followed by a chain
    of elementwise blocks over its outputs (and, in one kernel for the whole graph, preceded
    by an injective prologue), else None."""
    sch = s_tir.Schedule(func)
    try:
        pool = reduction_block(sch)
        pooled = sch.get(pool)  # as it reads its input before the prologue is inlined
        prologue = inline_prologue(sch, pool)
        output, *_ = epilogue_outputs(sch, pool)
    except (ValueError, s_tir.ScheduleError):
        return None
    # normalize_prim_func rewrites the loops it analyses, so it gets its own schedule.
    blocks = normalize_prim_func(s_tir.Schedule(sch.mod["main"]))
    if blocks is None or len(blocks) < 2 or not blocks[0].is_reduction():
        return None
    reduction, rest = blocks[0], blocks[1:]
    kinds, dom = reduction.dom_kind(), reduction.dom()
    spatial = len(kinds.rstrip("R"))
    if "R" in kinds[:spatial] or not all(isinstance(extent, int) for extent in dom):
        return None  # interleaved or symbolic reduction axes: leave to the default rules
    if math.prod(dom[spatial:]) > MAX_WINDOW:
        return None
    if not all(block.is_injective() and block.dom() == dom[:spatial] for block in rest):
        return None  # something other than elementwise work over the reduced values
    if len(sch.get_loops(output)) != 4 or len(pooled.reads) != 1:
        return None  # the template tiles NCHW outputs of one pooled tensor
    source = [int(d) for d in pooled.reads[0].source.shape]
    return WindowShape(
        outputs=math.prod(dom[:spatial]),
        window=math.prod(dom[spatial:]),
        inputs=math.prod(source),
        columns=dom[-1],
        stride=_column_stride(pooled),
        input_width=source[-1],
        output_width=dom[spatial - 1],
        prologue=prologue,
    )


def _column_stride(block) -> int | None:
    """s in `input[..., w * s + r]`, the read's W index, with w the last spatial and r the last
    reduction iterator; None when the index has another form (padding offsets, dilation)."""
    spatial = [v.var for v in block.iter_vars if v.iter_type == tirx.IterVar.DataPar]
    reduce = [v.var for v in block.iter_vars if v.iter_type == tirx.IterVar.CommReduce]
    coefficients = tvm.sym.detect_linear_equation(
        block.reads[0].region[-1].min, [spatial[-1], reduce[-1]]
    )
    if len(coefficients) != 3:
        return None
    stride, step, offset = (c.value if isinstance(c, tirx.IntImm) else None for c in coefficients)
    return stride if (step, offset) == (1, 0) else None


def choose_schedule(shape: WindowShape) -> PoolSchedule:
    """256 threads (fewer when there are fewer outputs), the window unrolled, two rows of
    outputs per thread where overlapping windows read each input row several times, and vector
    loads where each thread's window columns are aligned in memory (not where a prologue
    computes them). (Chosen from the H200 sweeps: every stride-1 and window-3 optimum unrolls;
    every 2x2 stride-2 optimum with aligned rows loads vectors.)"""
    threads = max(32, min(256, 1 << (shape.outputs - 1).bit_length()))
    rows = 2 if shape.outputs * shape.window >= ROW_REUSE * shape.inputs else 1
    vector = (
        shape.stride is not None
        and not shape.prologue
        and vector_fits(1, shape.columns, shape.stride, shape.input_width, shape.output_width)
    )
    return PoolSchedule(threads=threads, outputs_h=rows, unroll=True, vector=vector)


def default_rules(target: tvm.target.Target) -> list:
    """The backend's own rule list, as the ON arm runs it."""
    return list(default_schedule_pass(target).rules)


def fixed_rules(target: tvm.target.Target) -> list:
    """The default list with `WindowReduction` right before `GeneralReduction`."""
    rules = default_rules(target)
    position = [type(rule).__name__ for rule in rules].index("GeneralReduction")
    return rules[:position] + [WindowReduction()] + rules[position:]


def fixed_schedule_pass(target: tvm.target.Target):
    return dlight.ApplyDefaultSchedule(*fixed_rules(target))


def rule_assignment(mod: tvm.IRModule, target: tvm.target.Target, rules: list) -> dict:
    """Which rule schedules each PrimFunc, first match wins as in ApplyDefaultSchedule."""
    assigned = {}
    with target:
        for gv, func in mod.functions.items():
            if isinstance(func, tirx.PrimFunc):
                assigned[gv.name_hint] = next(
                    (
                        type(rule).__name__
                        for rule in rules
                        if rule.apply(func, target, False) is not None
                    ),
                    None,
                )
    return assigned
