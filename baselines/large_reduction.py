"""A GPU rule for reductions with few outputs and many terms: a whole-tensor sum, mean or max, and
long rows too few to fill the GPU with a block each.

TVM's rules give such a reduction one block or one thread: `Reduction` a block of 1024 threads per
output (one multiprocessor of an H200's 132 for a whole tensor), `Fallback` a thread per output for
a whole-tensor max; for a whole-tensor mean `Reduction` raises (apache/tvm#20061) and
`GeneralReduction` then launches grid 1 x block 1.

Here the reduction is shared across blocks and threads in two stages, as PyTorch's are. Stage 1:
`parts` blocks of `THREADS` threads per output, each thread reducing every (parts x THREADS)-th term
(consecutive threads, consecutive terms) into its own partial. Stage 2: a block per output reduces
the partials across `THREADS` threads and applies the epilogue (a mean's divide). With `parts` 1,
stage 1 alone reduces each output and applies the epilogue. The stages are two kernels of one
function, the partials in global memory between them.

The rule takes one reduction of one value (not argmax's pair) over constant extents, spatial axes
before reduced ones, followed by elementwise blocks over its outputs (no broadcast back: softmax and
layer norm are rows), where the outputs are one or too few to give every multiprocessor a block
(`choose_parts` > 1). It declines windows, rows that fill the GPU a block each, and matmuls. The
launch depends on the target alone: `THREADS` and the window rule's MULTIPROCESSORS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tvm import s_tir, tirx
from tvm.s_tir.dlight.analysis import normalize_prim_func
from tvm.s_tir.dlight.base import try_inline_contiguous_spatial
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.target import Target

from .window_reduction import MULTIPROCESSORS

# Threads a block in both stages: each thread reduces its share serially, then the block's
# threads reduce across (warp shuffles and one shared round).
THREADS = 256
# Terms a thread reduces serially in stage 1, at least: fewer and a block's slice is too small
# to pay for the second kernel.
MIN_SHARE = 16
# Blocks in stage 1, at most, over all outputs: two per multiprocessor.
MAX_BLOCKS = 2 * MULTIPROCESSORS


class LargeReduction(GPUScheduleRule):
    """A reduction with few outputs shared across blocks (stage 1) and threads, the partials
    reduced by a block per output (stage 2)."""

    def apply(self, func: tirx.PrimFunc, target: Target, _: bool) -> s_tir.Schedule | None:
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        try:  # a form the analysis let through and a primitive refuses: the next rule's
            found = analyze_large(sch)
            if found is None:
                return None
            parts = choose_parts(found.outputs, found.terms)
            if found.outputs > 1 and parts == 1:
                return None  # a block per output fills the GPU: Reduction's
            schedule_large(sch, found, parts)
        except Exception:  # pylint: disable=broad-exception-caught
            return None
        return sch


@dataclass(frozen=True)
class Large:
    """A reduction as the rule reads it, dlight's contiguous spatial blocks inlined."""

    reduction: s_tir.schedule.SBlockRV
    epilogues: tuple  # elementwise blocks over the outputs, in order
    spatial: int  # leading spatial axes of the reduction
    outputs: int  # points of those axes
    terms: int  # terms reduced into each output


def analyze_large(sch: s_tir.Schedule) -> Large | None:
    """The one reduction and its elementwise epilogue; None for another form."""
    blocks = try_inline_contiguous_spatial(sch, normalize_prim_func(sch))
    if not blocks:
        return None
    reduction, *epilogues = blocks
    kinds = reduction.dom_kind()
    spatial = len(kinds) - len(kinds.lstrip("S"))
    extents = reduction.dom()
    if spatial == len(kinds) or kinds != "S" * spatial + "R" * (len(kinds) - spatial):
        return None
    if not all(isinstance(e, int) for e in extents):
        return None
    if len(sch.get(reduction.block_rv).writes) != 1:  # argmax's (index, value): not this
        return None
    outputs = math.prod(extents[:spatial])
    for block in epilogues:  # elementwise over the outputs: no axis along the reduced ones
        if not block.is_injective() or math.prod(block.dom()) != outputs:
            return None
        if any(not isinstance(e, int) for e in block.dom()):
            return None
    return Large(
        reduction.block_rv,
        tuple(b.block_rv for b in epilogues),
        spatial,
        outputs,
        math.prod(extents[spatial:]),
    )


def choose_parts(outputs: int, terms: int) -> int:
    """Blocks per output in stage 1: enough for MAX_BLOCKS over all outputs, none with fewer
    than THREADS x MIN_SHARE terms, at most THREADS (stage 2's threads take one partial each)."""
    by_terms = terms // (THREADS * MIN_SHARE)
    return max(1, min(by_terms, MAX_BLOCKS // outputs, THREADS))


def schedule_large(sch: s_tir.Schedule, found: Large, parts: int) -> None:
    """Stage 1 (and with `parts` > 1 stage 2), the epilogue after the last stage."""
    for epilogue in found.epilogues:  # a block with no loop makes rfactor fail (#20061)
        if not sch.get_loops(epilogue):
            sch.add_unit_loop(epilogue)
    block = found.reduction
    loops = sch.get_loops(block)
    spatial = sch.fuse(*loops[: found.spatial]) if found.spatial else None
    reduced = sch.fuse(*loops[found.spatial :])
    if parts > 1:
        # stage 1: each of parts x THREADS threads an output's partial of its strided terms. A
        # partial per thread, not per block: a cross-thread stage-1 reduction under an uneven
        # split's guard was lowered to a race on the block's partial in global memory. parts > 1
        # leaves each thread at least MIN_SHARE terms, so every lane has one to start from.
        _, lane = sch.split(reduced, [None, parts * THREADS])
        partial = sch.rfactor(lane, factor_axis=0)
        *outer, serial, lane = sch.get_loops(partial)
        sch.reorder(lane, serial)
        part, thread = sch.split(lane, [parts, THREADS])
        # one output: the part alone (a unit int64 loop fused with an int32 one is no affine
        # binding)
        sch.bind(sch.fuse(*outer, part) if found.outputs > 1 else part, "blockIdx.x")
        sch.bind(thread, "threadIdx.x")
        *_, reduced = sch.get_loops(block)  # stage 2: the parts x THREADS partials
    if spatial is None:  # a whole tensor: one block
        spatial = sch.add_unit_loop(reduced)
    _across_threads(sch, spatial, reduced)
    if found.epilogues:  # each thread gets the output's value (allreduce), in a register
        sch.set_scope(block, 0, "local")
    for epilogue in found.epilogues:
        sch.reverse_compute_at(epilogue, spatial, preserve_unit_loops=True)
        _, thread = sch.split(sch.fuse(*sch.get_loops(epilogue)[1:]), [None, THREADS])
        sch.bind(thread, "threadIdx.x")


def _across_threads(sch: s_tir.Schedule, spatial, reduced) -> None:
    """An output a block, its terms THREADS-strided across the block's threads."""
    serial, thread = sch.split(reduced, [None, THREADS])
    sch.bind(spatial, "blockIdx.x")
    sch.bind(thread, "threadIdx.x")
