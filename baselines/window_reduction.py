"""A GPU rule for reductions over a small constant window followed by elementwise work.

Pooling (1-D to 3-D, padded, dilated, ceil mode) and depthwise or grouped convolutions reduce a
few elements into each output, usually fused with an elementwise epilogue. GeneralReduction gives
each output a block of 256 threads, Reduction a 2x2 average pool a block of 4: most threads idle,
and barriers for a few elements (apache/tvm#20401). Here each thread computes one output (two
along the second-to-last axis where windows overlap much), reduces its window serially in a
register, unrolled, and applies the epilogue in place. A window's rows load as vectors only
where their alignment is provable (the buffer's offset a multiple of the lanes, 16 bytes).

The launch depends on the target alone, not on the machine that compiles: threads per block from
its `max_threads_per_block` and `thread_warp_size`. TVM's targets record no multiprocessor count,
so the number of blocks is a heuristic: enough for MULTIPROCESSORS; a GPU with fewer runs a few
more waves of small blocks, one with more idles some.

The rule declines, leaving the function to the rules after it:
- what is no sliding window: an index not affine in the window's variables with constant
  coefficients, or one read from memory (a gather, `table[idx[i, k], j]`); sums, softmax, global
  pooling and matmul, whose reduction does not slide along the outputs;
- windows of one element (nothing is reduced) or of more than MAX_WINDOW;
- a lone reduction of padded values: Fallback gives it a thread per output already;
- layouts but the window along the innermost axis (NCHW-like) or an output axis there (NHWC);
- symbolic extents, more than one reduction, blocks that cannot be inlined, and epilogues not
  elementwise over the reduced values.
"""

import math
from dataclasses import dataclass

import tvm_ffi

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad
from tvm.s_tir.dlight import analysis
from tvm.s_tir.dlight.base import max_threads_per_block
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.s_tir.schedule import ScheduleError
from tvm.target import Target

# Elements one thread reduces serially, at most: 7x7 depthwise convolutions (49), 8x8 and 4x4x4
# pools (64). Longer windows are left to GeneralReduction, which shares each among threads.
MAX_WINDOW = 64
# Reads of each input element (outputs x window / inputs) from which a thread computes two rows
# of outputs: between stride-1 pools (2x2, 3x3: 4, 9 reads) and stride-2 ones (1, 2.25 reads).
ROW_REUSE = 3
# Largest window of two rows per thread: two larger windows hold too many registers.
ROW_WINDOW = 9
# Threads per block where the outputs fill the GPU.
BLOCK_THREADS = 256
# Multiprocessors the launch is sized for (a heuristic: TVM's targets do not record the count):
# an H100's or H200's, more than most GPUs have.
MULTIPROCESSORS = 132
# The widest vector load a thread issues: 4 float32 lanes, 8 float16 ones.
VECTOR_BYTES = 16


class WindowReduction(GPUScheduleRule):
    """One thread per output of a small-window reduction, the window unrolled in registers."""

    def apply(self, func: tirx.PrimFunc, target: Target, _: bool) -> s_tir.Schedule | None:
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        window = _inline_window(sch)
        if window is None or not 1 < window.size <= MAX_WINDOW:
            return None
        _schedule_window(sch, window, _choose_launch(window, target))
        return sch


@dataclass(frozen=True)
class Window:
    """A small-window reduction as the rule reads it, its other blocks inlined.

    Attributes
    ----------
    reduction : SBlockRV
        The reduction block.
    outputs : tuple
        The output blocks in order, the rest of the epilogue inlined into them.
    shape : tuple
        The extents of the reduced values, and of every output.
    size : int
        The elements reduced into each value.
    shares_rows : bool
        Whether the window slides along the last two axes, overlapping ROW_REUSE times or more.
    vector : bool
        Whether a thread's window columns load as vectors of provable alignment.
    inlined_input : bool
        Whether the reduced tensor is computed in the kernel (padding, a prologue).
    """

    reduction: s_tir.schedule.SBlockRV
    outputs: tuple
    shape: tuple
    size: int
    shares_rows: bool
    vector: bool
    inlined_input: bool


@dataclass(frozen=True)
class Launch:
    """How the outputs map to threads.

    Attributes
    ----------
    threads : int
        Threads per block.
    rows : int
        Outputs per thread along the second-to-last axis, 1 or 2.
    """

    threads: int
    rows: int


def _inline_window(sch: s_tir.Schedule) -> Window | None:
    """Inline every block but the one reduction and the outputs, and read the window off the
    reduction; None where it is no sliding window (the schedule may then be partly changed).

    Not `normalize_prim_func`, as Reduction and GeneralReduction start: it fuses each block's
    iterators into one spatial and one reduction group, and the window is read off the indices
    as written (an output axis times the stride plus a window variable, per axis)."""
    blocks = sch.get_child_blocks(analysis.get_root_block(sch))
    found = [b for b in blocks if analysis.get_sblock_info(sch, b).dom_kind().endswith("R")]
    if len(found) != 1:
        return None
    (reduction,) = found
    block = sch.get(reduction)
    kinds = analysis.get_sblock_info(sch, reduction).dom_kind()
    count = len(kinds.rstrip("R"))
    extents = _ints([v.dom.extent for v in block.iter_vars])
    if extents is None or count == 0 or kinds != "S" * count + "R" * (len(extents) - count):
        return None  # interleaved or opaque iterators (or one without its loop), symbolic extents
    axes = [v.var for v in block.iter_vars[:count]]
    reduce = {v.var for v in block.iter_vars[count:]}
    sliding = {v for v, extent in zip(axes, extents) if extent > 1}
    windowed = [r for r in block.reads if any(_mixes(d.min, sliding, reduce) for d in r.region)]
    if len(block.writes) != 1 or not _at(block.writes[0], axes) or not windowed:
        return None  # no window slides along the outputs: a row reduction
    read = windowed[0]
    layouts = {_layout(r.region[-1].min, axes[-1], reduce) for r in windowed}
    input_shape = _ints(_buffer(read).shape)
    if layouts not in ({"window"}, {"outputs"}) or input_shape is None:
        return None
    shape, size = tuple(extents[:count]), math.prod(extents[count:])
    in_memory = any(_buffer(read).same_as(p) for p in sch.mod["main"].params)
    nchw = layouts == {"window"}
    shares_rows = (
        nchw
        and count >= 2
        and _mixes(read.region[-2].min, {axes[-2]}, reduce)
        and size <= ROW_WINDOW
        and math.prod(shape) * size >= ROW_REUSE * math.prod(input_shape)
    )
    vector = (
        nchw
        and in_memory
        and len(block.reads) == 1
        and _aligned_columns(read, axes, block.iter_vars[count:])
    )
    if (outputs := _inline_around(sch, reduction, shape)) is None:
        return None
    if not _slides(sch.get(reduction)):
        return None  # a gather, or an index not affine in the window (inlined reads included)
    return Window(reduction, outputs, shape, size, shares_rows, vector, not in_memory)


def _buffer(region: tirx.BufferRegion):
    return region.source


def _ints(exprs) -> list[int] | None:
    """The values of constant expressions; None where one is symbolic."""
    values = [int(e) for e in exprs if isinstance(e, tirx.IntImm | int)]
    return values if len(values) == len(exprs) else None


def _mixes(index, spatial: set, reduce: set) -> bool:
    """Whether an index moves with both an output axis and the window."""
    used = analysis.collect_vars_used_in_prim_expr(index)
    return bool(used & spatial) and bool(used & reduce)


def _slides(block) -> bool:
    """Whether every index `block` reads is affine in its reduction variables, with constant
    coefficients, and reads no memory (a gather's index is data)."""
    reduce = [v.var for v in block.iter_vars if v.iter_type == tirx.IterVar.CommReduce]
    for region in block.reads:
        for index in (r.min for r in region.region):
            coefficients = tvm.sym.detect_linear_equation(index, reduce)
            if not coefficients or _ints(coefficients[:-1]) is None or _loads(index):
                return False
    return True


def _loads(expr) -> bool:
    """Whether `expr` reads memory."""
    found = False

    def _visit(_: TensorLoad) -> None:
        nonlocal found
        found = True

    tvm_ffi.structural_walk(expr, (TensorLoad, _visit), order="post")
    return found


def _layout(index, innermost, reduce: set) -> str | None:
    """The innermost index moves with the output axis and window ("window", NCHW), the axis alone
    ("outputs", NHWC), or otherwise (None)."""
    used = analysis.collect_vars_used_in_prim_expr(index)
    if innermost in used and used & reduce:
        return "window"
    return "outputs" if used == {innermost} else None


def _at(region: tirx.BufferRegion, axes: list) -> bool:
    """Whether a block accesses `region` at exactly its own iterators, in order."""
    return len(region.region) == len(axes) and all(
        r.min.same_as(v) and _ints([r.extent]) == [1] for r, v in zip(region.region, axes)
    )


def _aligned_columns(read: tirx.BufferRegion, axes: list, window: list) -> bool:
    """Whether the read's innermost index is `s * w + r` and its columns load as vectors at an
    alignment the buffer proves (its offset zero or a multiple of the lanes)."""
    index = read.region[-1].min
    used = analysis.collect_vars_used_in_prim_expr(index)
    columns = [v for v in window if v.var in used]
    if len(columns) != 1:
        return False
    found = _ints(tvm.sym.detect_linear_equation(index, [axes[-1], columns[0].var]))
    sizes = _ints([columns[0].dom.extent, _buffer(read).shape[-1]])
    if found is None or len(found) != 3 or sizes is None:
        return False
    stride, step, offset = found
    buffer = _buffer(read)
    lanes = _vector_width(sizes[0], buffer.dtype)
    return (
        (step, offset) == (1, 0)
        and _aligned_vector(sizes[0], stride, sizes[1], buffer.dtype)
        and _offset_aligned(buffer, lanes)
    )


def _offset_aligned(buffer: tirx.Buffer, lanes: int) -> bool:
    """Whether the buffer's first element is provably at a multiple of `lanes` elements: a
    constant offset that is, or a symbolic one whose `offset_factor` is."""
    offset = _ints([buffer.elem_offset])
    if offset is not None:
        return offset[0] % lanes == 0
    return int(buffer.offset_factor) % lanes == 0


def _inline_around(sch: s_tir.Schedule, reduction, shape: tuple) -> tuple | None:
    """Inline every block but the reduction and the outputs; the output blocks (for a lone
    reduction, a copy out) if each is elementwise over the reduced values, else None."""
    root = analysis.get_root_block(sch)
    keep = [sch.get(b) for b in (reduction, *sch.get_output_blocks(root))]
    prologue = [
        b for b in sch.get_child_blocks(root) if not any(sch.get(b).same_as(k) for k in keep)
    ]
    unpadded = all(_pads_nothing(sch.get(block)) for block in prologue)
    for block in prologue:
        try:
            sch.compute_inline(block)
        except ScheduleError:
            return None  # a block that cannot be inlined: not a prologue
    first, *outputs = sch.get_child_blocks(root)
    if not sch.get(first).same_as(sch.get(reduction)):
        return None
    if not outputs and not unpadded:
        return None  # a lone reduction of padded values: Fallback's thread per output already
    if not outputs:  # a lone reduction, Reduction's: its value in a register, then copied out
        outputs = [sch.cache_write(reduction, 0, "local")]
    written = [_buffer(sch.get(reduction).writes[0])]
    for block in outputs:
        if not _elementwise(sch.get(block), shape, written):
            return None
        written.append(_buffer(sch.get(block).writes[0]))
    loops = _ints([sch.get(loop).extent for loop in sch.get_loops(outputs[0])])
    reads = [_buffer(r) for r in sch.get(outputs[0]).reads]
    if loops != list(shape) or not any(source.same_as(written[0]) for source in reads):
        return None
    return tuple(outputs)


def _pads_nothing(block) -> bool:
    """Whether `block` writes a buffer of the shape of each same-rank buffer it reads: an
    elementwise prologue of any number of inputs (a scalar's aside), not a pad, which writes a
    larger one. Symbolic shapes count as padding."""
    written = [_ints(_buffer(w).shape) for w in block.writes]
    if len(written) != 1 or written[0] is None:
        return False
    read = [_ints(_buffer(r).shape) for r in block.reads]
    return all(
        shape == written[0] for shape in read if shape is None or len(shape) == len(written[0])
    )


def _elementwise(block, shape: tuple, written: list) -> bool:
    """Whether `block` computes one value per reduced value, reading `written` where it writes."""
    axes = [v.var for v in block.iter_vars]
    return (
        all(v.iter_type == tirx.IterVar.DataPar for v in block.iter_vars)
        and _ints([v.dom.extent for v in block.iter_vars]) == list(shape)
        and len(block.writes) == 1
        and _at(block.writes[0], axes)
        and all(_at(r, axes) for r in block.reads if any(_buffer(r).same_as(b) for b in written))
    )


def _choose_launch(window: Window, target: Target) -> Launch:
    """Two rows per thread where windows share rows and the outputs still fill the GPU."""
    count = math.prod(window.shape)
    filled = 2 * MULTIPROCESSORS * _warp(target)
    if not window.shares_rows or count < filled:
        return Launch(_block_threads(count, target), 1)
    rows = -(-window.shape[-2] // 2)
    return Launch(_block_threads(count // window.shape[-2] * rows, target), 2)


def _block_threads(units: int, target: Target) -> int:
    """BLOCK_THREADS (at most the target's limit) for `units` threads of work, halved down to a
    warp while one of MULTIPROCESSORS would get no block or half the block no work."""
    threads, warp = min(BLOCK_THREADS, max_threads_per_block(target)), _warp(target)
    while threads > warp and (-(-units // threads) < MULTIPROCESSORS or threads >= 2 * units):
        threads //= 2
    return threads


def _warp(target: Target) -> int:
    """The fewest threads per block: a warp, and at least 32 (never more than BLOCK_THREADS)."""
    return min(BLOCK_THREADS, max(32, int(target.attrs.get("thread_warp_size", 32))))


def _schedule_window(sch: s_tir.Schedule, window: Window, launch: Launch) -> s_tir.schedule.LoopRV:
    """One thread per output (per `launch.rows` outputs along the second-to-last axis, consecutive
    threads along the innermost), the value in a register, loops unrolled; the thread loop."""
    first, *later = window.outputs
    loops = sch.get_loops(first)
    if launch.rows > 1:
        *outer, row, column = loops
        row, rows = sch.split(row, [None, launch.rows])
        sch.reorder(row, column, rows)
        loops = [*outer, row, column]
    block_loop, thread_loop = sch.split(sch.fuse(*loops), [None, launch.threads])
    sch.bind(block_loop, "blockIdx.x")
    sch.bind(thread_loop, "threadIdx.x")
    sch.compute_at(window.reduction, thread_loop, preserve_unit_loops=True)
    sch.set_scope(window.reduction, 0, "local")
    for block in later:  # every output written by the thread that reduced its value
        sch.reverse_compute_at(block, thread_loop, preserve_unit_loops=True)
    if window.vector:
        _vector_loads(sch, window.reduction, thread_loop)
    for block in (window.reduction, *window.outputs):
        _unroll_inside(sch, block, thread_loop)
    return thread_loop


def _vector_loads(sch: s_tir.Schedule, block, loop) -> None:
    """Stage the rows `block` reads in each iteration of `loop` in registers, as vectors."""
    staged = sch.cache_read(block, 0, "local")
    sch.compute_at(staged, loop, preserve_unit_loops=True)
    columns = sch.get_loops(staged)[-1]
    dtype = _buffer(sch.get(block).reads[0]).dtype
    _, lanes = sch.split(columns, [None, _vector_width(sch.get(columns).extent, dtype)])
    sch.vectorize(lanes)


def _unroll_inside(sch: s_tir.Schedule, block, loop) -> None:
    """Unroll every loop of `block` nested inside `loop`."""
    loops = sch.get_loops(block)
    position = [sch.get(outer).same_as(sch.get(loop)) for outer in loops].index(True)
    for inner in loops[position + 1 :]:
        sch.unroll(inner)


def _vector_width(extent, dtype: str = "float32") -> int:
    """The most lanes of `dtype`, at most VECTOR_BYTES and at least two, that divide a loop
    extent; 1 where none does."""
    widest = VECTOR_BYTES * 8 // tvm.runtime.DataType(dtype).bits
    widths = [lanes for lanes in (widest, widest // 2) if lanes >= 2]
    return next((lanes for lanes in widths if int(extent) % lanes == 0), 1)


def _aligned_vector(columns: int, step: int, row: int, dtype: str = "float32") -> bool:
    """Whether `columns` columns from multiples of `step` in rows of `row` load as vectors."""
    lanes = _vector_width(columns, dtype)
    return lanes > 1 and step % lanes == 0 and row % lanes == 0
