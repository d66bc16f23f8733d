"""The alternative to a new rule: Reduction and GeneralReduction with their thread mapping fixed for
small reductions, the root cause of apache/tvm#20401, in place.

Both rules spread a reduction over a block's threads per output, which pays for long rows, not a
pool's few elements. These subclasses schedule as their rule does, except where the reduction has a
constant extent of 2 to MAX_WINDOW and the block after it (if any) is elementwise over its values:
there each thread computes one output serially in a register, unrolled, with the window rule's
threads per block. Unlike `WindowReduction` they have no two rows per thread or vector loads, and
they act on what their rule takes, which includes small non-sliding reductions (ResNet's 7x7 global
average pool). As a patch, this would be one early branch in each rule.
"""

from __future__ import annotations

import math

from tvm import s_tir, tirx
from tvm.s_tir.dlight.analysis import normalize_prim_func
from tvm.s_tir.dlight.base import try_inline_contiguous_spatial
from tvm.s_tir.dlight.gpu import GeneralReduction, Reduction

from .window_reduction import MAX_WINDOW, _block_threads


def _small_serial(taken, func: tirx.PrimFunc, target):
    """What a rule took (`taken`), given one thread per output where the reduction is small."""
    if taken is None:
        return None
    return _serial(func, target) or taken


class SerialReduction(Reduction):
    """Reduction, with one thread per output for small reductions."""

    def apply(self, func, target, tunable):
        return _small_serial(super().apply(func, target, tunable), func, target)


class SerialGeneralReduction(GeneralReduction):
    """GeneralReduction, with one thread per output for small reductions."""

    def apply(self, func, target, tunable):
        return _small_serial(super().apply(func, target, tunable), func, target)


def _serial(func: tirx.PrimFunc, target) -> s_tir.Schedule | None:
    """One thread per reduced value, on the rules' own normal form of the function; None unless
    the reduction is small, or where scheduling fails (the rule's own schedule is then used)."""
    try:
        return _schedule_serial(s_tir.Schedule(func), target)
    except Exception:  # pylint: disable=broad-exception-caught
        return None


def _schedule_serial(sch: s_tir.Schedule, target) -> s_tir.Schedule | None:
    blocks = try_inline_contiguous_spatial(sch, normalize_prim_func(sch))
    if blocks is None or len(blocks) not in (1, 2) or not blocks[0].is_reduction():
        return None
    reduction, epilogue = blocks[0], blocks[1:]
    kinds, extents = reduction.dom_kind(), reduction.dom()
    spatial = len(kinds.rstrip("R"))
    if "R" in kinds[:spatial] or not all(isinstance(e, int) for e in extents):
        return None
    if not 1 < math.prod(extents[spatial:]) <= MAX_WINDOW:
        return None
    if epilogue and not (epilogue[0].is_injective() and epilogue[0].dom() == extents[:spatial]):
        return None
    outputs = epilogue[0].block_rv if epilogue else reduction.block_rv
    loops = sch.get_loops(outputs)[:spatial]
    threads = _block_threads(math.prod(extents[:spatial]), target)
    block_loop, thread_loop = sch.split(sch.fuse(*loops), [None, threads])
    sch.bind(block_loop, "blockIdx.x")
    sch.bind(thread_loop, "threadIdx.x")
    if epilogue:
        sch.compute_at(reduction.block_rv, thread_loop, preserve_unit_loops=True)
        sch.set_scope(reduction.block_rv, 0, "local")
    for loop in sch.get_loops(reduction.block_rv)[2:]:
        sch.unroll(loop)
    return sch
