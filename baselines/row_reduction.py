"""A GPU rule for short rows: softmax and layer norm over at most MAX_ROW elements.

GeneralReduction gives every row a block of 256 threads: a Swin window's softmax over 49 elements
leaves 207 idle in each reduction, a 64-channel layer norm 192 (the idle-lane pattern of
apache/tvm#20401 in rows that do not slide, which the window rule declines). Here a row gets `lanes`
threads, a warp or fewer, and a block several rows: each reduction is shared among the row's lanes
(warp shuffles, no barrier) and broadcast to each lane, which then writes its elements. With
`registers`, each lane loads its elements once for every pass (softmax reads its row three times).

It takes GeneralReduction's form where the reductions run over the trailing axes of one iteration
space and one block then writes the rows, reading each reduced value at its row. It declines rows
over MAX_ROW elements, symbolic extents, reductions between spatial axes and every other form. The
launch depends on the target alone.
"""

import math
from dataclasses import dataclass

from tvm import s_tir, tirx
from tvm.s_tir.dlight.analysis import (
    SBlockInfo,
    collect_vars_used_in_prim_expr,
    normalize_prim_func,
)
from tvm.s_tir.dlight.base import try_inline_contiguous_spatial
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.target import Target

from .window_reduction import MAX_WINDOW, _block_threads

# Elements in a row, at most: the window rule's bound. Longer rows keep a block each.
MAX_ROW = MAX_WINDOW
# GeneralReduction's explicit unrolling of each thread's share of a row.
UNROLL = 256


class RowReduction(GPUScheduleRule):
    """`lanes` threads per short row (None: `choose_lanes`), several rows per block; with
    `registers`, each lane loads its elements into registers once for every pass over the row
    (else each pass reads them again, from L1)."""

    def __init__(self, lanes: int | None = None, registers: bool = False):
        self.lanes, self.registers = lanes, registers

    def apply(self, func: tirx.PrimFunc, target: Target, _: bool) -> s_tir.Schedule | None:
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        try:  # a form the analysis let through and a primitive refuses: the next rule's
            rows = analyze_rows(sch)
            if rows is None or not 1 < rows.length <= MAX_ROW:
                return None
            lanes = self.lanes or choose_lanes(rows.length, target)
            row_loop = schedule_rows(sch, rows, lanes, target)
            if self.registers:
                rows_in_registers(sch, rows, lanes, row_loop)
        except Exception:  # pylint: disable=broad-exception-caught
            return None
        return sch


@dataclass(frozen=True)
class Rows:
    """Short rows as the rule reads them, dlight's contiguous spatial blocks inlined."""

    reductions: tuple  # the reduction blocks, in order, each over the same rows
    output: s_tir.schedule.SBlockRV  # the block writing the rows' elements
    spatial: int  # the leading axes, one row for each of their points
    extents: tuple  # of the leading axes and the row's
    count: int  # rows
    length: int  # elements in a row


def analyze_rows(sch: s_tir.Schedule) -> Rows | None:
    """The reductions over short rows and the block writing them; None for another form."""
    blocks = try_inline_contiguous_spatial(sch, normalize_prim_func(sch))
    if blocks is None or len(blocks) < 2:
        return None
    *reductions, output = blocks
    kinds = reductions[0].dom_kind()
    spatial = len(kinds.rstrip("R"))
    extents = reductions[0].dom()
    if spatial == 0 or kinds != "S" * spatial + "R" * (len(kinds) - spatial):
        return None
    if not all(isinstance(e, int) for e in extents) or spatial == len(kinds):
        return None
    if any(r.dom_kind() != kinds or r.dom() != extents for r in reductions):
        return None
    if not (output.is_injective() and output.dom() == extents):
        return None
    if not _reads_at_rows(sch, reductions, output, spatial):
        return None
    return Rows(
        tuple(r.block_rv for r in reductions),
        output.block_rv,
        spatial,
        tuple(extents),
        math.prod(extents[:spatial]),
        math.prod(extents[spatial:]),
    )


def _reads_at_rows(
    sch: s_tir.Schedule, reductions: list[SBlockInfo], output: SBlockInfo, spatial: int
) -> bool:
    """Whether the output block writes at its own iterators (in order) and reads each reduced
    value at one point that does not move along the row, so the row's lanes find it in their row."""
    block = sch.get(output.block_rv)
    axes = [v.var for v in block.iter_vars]
    along = axes[len(axes) - (len(output.dom()) - spatial) :]
    reduced = [w.source for r in reductions for w in sch.get(r.block_rv).writes]
    write = block.writes[0].region if len(block.writes) == 1 else []
    indices = [r.min for r in write if not isinstance(r.min, tirx.IntImm)]  # unit axes: 0
    if len(indices) != len(axes) or not all(i.same_as(v) for i, v in zip(indices, axes)):
        return False
    return all(
        all(_unit(r.extent) and not _uses(r.min, along) for r in read.region)
        for read in block.reads
        if any(read.source.same_as(buffer) for buffer in reduced)
    )


def _unit(extent) -> bool:
    return isinstance(extent, tirx.IntImm) and extent.value == 1


def _uses(expr, variables: list) -> bool:
    used = collect_vars_used_in_prim_expr(expr)
    return any(v in used for v in variables)


def choose_lanes(length: int, target: Target) -> int:
    """A warp per row: each lane reduces at most two elements of a row of up to MAX_ROW (shorter
    rows get the fewest lanes that keep that, down to 4)."""
    warp = max(4, int(target.attrs.get("thread_warp_size", 32)))
    lanes = 4
    while lanes < warp and 2 * lanes < length:
        lanes *= 2
    return lanes


def schedule_rows(
    sch: s_tir.Schedule, rows: Rows, lanes: int, target: Target
) -> s_tir.schedule.LoopRV:
    """`lanes` threads (threadIdx.x) per row, rows side by side in a block (threadIdx.y) of the
    window rule's size, each reduction shared among the row's lanes; returns the row loop."""
    for block in rows.reductions:  # a value per row, indexed by the row: a register each
        for index, write in enumerate(sch.get(block).writes):
            sch.transform_layout(block, ("write", index), _index_map(write.source.shape, 0))
    for block in (*rows.reductions, rows.output):  # one row axis: the bindings stay affine
        sch.transform_block_layout(block, _index_map(rows.extents, rows.spatial))
    threads = max(_block_threads(rows.count * lanes, target), lanes)
    row, *along = sch.get_loops(rows.output)
    block_loop, row_loop = sch.split(row, [None, threads // lanes])
    _lanes(sch, along, lanes)
    sch.bind(block_loop, "blockIdx.x")
    sch.bind(row_loop, "threadIdx.y")
    for block in reversed(rows.reductions):
        for index, _ in enumerate(sch.get(block).writes):
            sch.set_scope(block, index, "local")  # each lane gets the row's value (allreduce)
        sch.compute_at(block, row_loop, preserve_unit_loops=True)
        _lanes(sch, sch.get_loops(block)[-len(along) :], lanes)
    return row_loop


def rows_in_registers(sch: s_tir.Schedule, rows: Rows, lanes: int, row_loop) -> None:
    """The row the first reduction reads, loaded once by its lanes into registers (lane `l`
    holding elements `l`, `l + lanes`, ..., the last padded) and read from there by every pass.
    Nothing where the row spans several axes."""
    if len(rows.extents) - rows.spatial != 1:
        return
    readers = [*rows.reductions, rows.output]
    cache = sch.cache_read(rows.reductions[0], 0, "local", consumer_blocks=readers)
    shape = sch.get(cache).writes[0].source.shape
    by_lane = _index_map(shape, len(shape) - 1, lanes)
    sch.transform_layout(cache, ("write", 0), by_lane, pad_value=0.0)
    sch.compute_at(cache, row_loop, preserve_unit_loops=True)
    *_, lane, serial = sch.get_loops(cache)  # a padded layout's loops: lane, then element
    if int(sch.get(serial).extent) == rows.length:  # unpadded, the row's own loop: split it
        serial, lane = sch.split(serial, [None, lanes])
        sch.reorder(lane, serial)
    sch.bind(lane, "threadIdx.x")
    sch.unroll(serial)


def _index_map(extents, rows: int, lanes: int = 0) -> tirx.IndexMap:
    """The leading `rows` of `extents` fused into one row index (all where `rows` is 0), the rest
    kept; with `lanes`, the last index split as (lane, element of the lane)."""

    def mapped(*indices):
        count = rows or len(indices)
        row = indices[0]
        for index, extent in zip(indices[1:count], extents[1:count]):
            row = row * extent + index
        rest = list(indices[count:])
        return [row, rest[0] % lanes, rest[0] // lanes] if lanes else [row, *rest]

    return tirx.IndexMap.from_func(mapped, ndim=len(extents))


def _lanes(sch: s_tir.Schedule, loops: list, lanes: int) -> None:
    """A row's loops shared among `lanes` threads, consecutive lanes on consecutive elements,
    each lane's share unrolled."""
    serial, lane = sch.split(sch.fuse(*loops), [None, lanes])
    sch.reorder(lane, serial)
    sch.bind(lane, "threadIdx.x")
    sch.annotate(serial, ann_key="pragma_auto_unroll_max_step", ann_val=UNROLL)
    sch.annotate(serial, ann_key="pragma_unroll_explicit", ann_val=1)


def with_row_reduction(rules: list) -> list:
    """`rules` with RowReduction right before GeneralReduction, the rule it takes short rows
    from; unchanged where it lacks GeneralReduction or has the rule already. The `fixed` list
    takes it, as `row_bench`'s H200 figures decided (reports/h200/rows/)."""
    names = [type(rule).__name__ for rule in rules]
    if "GeneralReduction" not in names or "RowReduction" in names:
        return list(rules)
    position = names.index("GeneralReduction")
    return [*rules[:position], RowReduction(), *rules[position:]]
