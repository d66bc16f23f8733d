"""A GPU rule for reductions over a small constant window followed by elementwise work.

Pooling (max and average; 1-D, 2-D and 3-D; padded, dilated, ceil mode) and depthwise or grouped
convolutions with small kernels reduce a few elements into each output, and are usually fused
with an elementwise epilogue (a residual add, a bias, a decomposed BatchNorm, an activation).
GeneralReduction gives each output a block of 256 threads and reduces across them, Reduction
gives a 2x2 average pool a block of 4 and a lone 5x5 depthwise convolution a block of 16: most
threads idle, and barriers for a few elements (apache/tvm#20401). Here each thread computes one
output (two along the second-to-last axis where windows overlap much), reduces its window
serially in a register, unrolled, and applies the epilogue in place (a lone reduction's is the
copy of its value out). dlight's Adreno rule `Pool2D` (adreno/pool.py) maps pools the same way,
one output (a vector of four channels) per thread, but finds them by block name ("pool_max",
"adaptive_pool_sum") and takes only Adreno's blocked NCHW4c layout.

The rule declines, leaving the function to the rules after it:
- a lone reduction (nothing after it) of padded values, which dlight's Reduction declines:
  Fallback gives it a thread per output already, and on an H200 was no slower than this rule
  (a ResNet stem's lone 3x3 MaxPool);
- windows of one element (1x1 pools, adaptive pools as large as their input): nothing is
  reduced, and Fallback maps outputs to threads as this rule would (in TVM 0.27 it computes a
  1x1 average pool + add as x + 2: normalize_prim_func drops the unit reduction axes and the add
  is then inlined into the reduction's init and update both, a bug to fix there);
- windows of more than MAX_WINDOW elements, and reductions that do not slide along the outputs
  (sums, softmax, global pooling, matmul): their reduction is long, or shared by every output;
- layouts other than the window sliding along the innermost axis (NCHW and its 1-D and 3-D
  kin) or an output axis innermost (NHWC);
- symbolic extents, more than one reduction, and epilogues that are not elementwise over the
  reduced values (transposes, broadcasts back over the window).
"""

import functools
import math
from dataclasses import dataclass

import tvm
from tvm import s_tir, tirx
from tvm.s_tir.dlight.analysis import collect_vars_used_in_prim_expr
from tvm.s_tir.dlight.base import max_threads_per_block
from tvm.s_tir.dlight.gpu.base import GPUScheduleRule
from tvm.target import Target

# Elements one thread reduces serially, at most. The class needs up to 64: 7x7 depthwise
# convolutions (49), 8x8 and 4x4x4 pools (64). Longer windows are left to GeneralReduction, which
# shares each window among threads; where serial reduction stops paying was not measured.
MAX_WINDOW = 64
# Reads of each input element by the windows (outputs x window / input elements) from which a
# thread computes two outputs along the second-to-last axis, loading the input rows their windows
# share once. 3 lies between the stride-1 pools (2x2 and 3x3: about 4 and 9 reads) of the H200
# sweep that chose two rows per thread and its stride-2 pools (1 and 2.25 reads).
ROW_REUSE = 3
# Largest window for which a thread takes two rows of outputs. On the H200 (baselines/
# window_bench.py, 2026-12-01), two rows per thread against one output per thread (the
# `reduction-fix` list) gained on 3x3 windows (ResNeXt's grouped 3x3 conv: 6.35 against 7.32 us)
# and lost on ConvNeXt's 7x7 depthwise conv (9.01 against 7.15 us).
ROW_WINDOW = 9
# Threads per block where the outputs fill the GPU: the block of every pool kernel of that sweep,
# each within 6 % of the best of 20 tuned schedules or faster; at most the target's limit.
BLOCK_THREADS = 256
# Multiprocessors of the largest part of each CUDA architecture (NVIDIA's data sheets), for a
# target whose GPU is not present: TVM's cuda target records no count. Sized for more
# multiprocessors than a smaller part has, a launch costs it a few more waves of small blocks;
# sized for fewer, it would leave multiprocessors idle on the largest.
MULTIPROCESSORS = {
    "sm_70": 80,  # V100
    "sm_75": 72,  # TITAN RTX, Quadro RTX 8000
    "sm_80": 108,  # A100
    "sm_86": 84,  # RTX 3090 Ti, A40
    "sm_87": 16,  # Jetson AGX Orin
    "sm_89": 142,  # L40S, RTX 6000 Ada
    "sm_90": 132,  # H100 SXM, H200
    "sm_100": 148,  # B200
    "sm_120": 170,  # RTX 5090
}


class WindowReduction(GPUScheduleRule):
    """A reduction over a small constant window followed by elementwise work: one thread per
    output, the window unrolled in registers, blocks sized so that small outputs fill the GPU."""

    def apply(self, func: tirx.PrimFunc, target: Target, _: bool) -> s_tir.Schedule | None:
        if not isinstance(func, tirx.PrimFunc) or not self.is_target_available(target):
            return None
        sch = s_tir.Schedule(func)
        try:
            window = analyze_window(sch)
            if window is None or not 1 < window.size <= MAX_WINDOW:
                return None
            schedule_window(sch, window, choose_launch(window, target))
        except Exception:  # pylint: disable=broad-exception-caught
            return None  # a function the analysis misjudged goes to the next rule
        return sch


@dataclass(frozen=True)
class Window:
    """A small-window reduction as the rule reads it, its other blocks inlined."""

    reduction: s_tir.schedule.SBlockRV
    outputs: tuple  # the output blocks in order, the rest of the epilogue inlined into them
    shape: tuple  # extents of the reduced values, and of every output
    size: int  # elements reduced into each value
    shares_rows: bool  # the window slides along the last two axes, overlapping ROW_REUSE times
    vector: bool  # a thread's window columns load as aligned vectors (read from memory, NCHW)
    inlined_input: bool  # the reduced tensor is computed in the kernel (padding, a prologue)


@dataclass(frozen=True)
class Launch:
    """Threads per block, and outputs per thread along the second-to-last axis (1 or 2)."""

    threads: int
    rows: int


def analyze_window(sch: s_tir.Schedule) -> Window | None:
    """The function's one reduction whose window slides along its outputs, every other block
    inlined into it (a prologue such as padding) or into the output blocks (the epilogue); None
    if the function has another form (the schedule may then be partly changed: discard it)."""
    root = sch.get_sblock("root")
    blocks = sch.get_child_blocks(root)
    found = [b for b in blocks if _kinds(sch.get(b)).endswith("R")]
    if len(found) != 1:
        return None
    (reduction,) = found
    block = sch.get(reduction)
    kinds = _kinds(block)
    count = len(kinds.rstrip("R"))
    extents = [_int(v.dom.extent) for v in block.iter_vars]
    if count == 0 or kinds != "S" * count + "R" * (len(kinds) - count) or None in extents:
        return None  # interleaved or opaque iterators, or symbolic extents
    axes = [v.var for v in block.iter_vars[:count]]
    reduce = {v.var for v in block.iter_vars[count:]}
    sliding = {v for v, extent in zip(axes, extents) if extent > 1}
    windowed = [r for r in block.reads if any(_mixes(d.min, sliding, reduce) for d in r.region)]
    if len(block.writes) != 1 or not _at(block.writes[0], axes) or not windowed:
        return None  # no window slides along the outputs: a row reduction
    read = windowed[0]
    layouts = {_layout(r.region[-1].min, axes[-1], reduce) for r in windowed}
    input_shape = [_int(d) for d in read.source.shape]
    if layouts not in ({"window"}, {"outputs"}) or None in input_shape:
        return None
    shape, size = tuple(extents[:count]), math.prod(extents[count:])
    in_memory = any(read.source.same_as(p) for p in sch.mod["main"].params)
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
    outputs = _inline_around(sch, reduction, shape)
    if outputs is None:
        return None
    return Window(reduction, outputs, shape, size, shares_rows, vector, not in_memory)


def _kinds(block: s_tir.SBlock) -> str:
    names = {tirx.IterVar.DataPar: "S", tirx.IterVar.CommReduce: "R"}
    return "".join(names.get(v.iter_type, "O") for v in block.iter_vars)


def _int(expr) -> int | None:
    return int(expr) if isinstance(expr, tirx.IntImm | int) else None


def _mixes(index, spatial: set, reduce: set) -> bool:
    """Whether an index moves with both an output axis and the window."""
    used = collect_vars_used_in_prim_expr(index)
    return bool(used & spatial) and bool(used & reduce)


def _layout(index, innermost, reduce: set) -> str | None:
    """How the innermost index of a windowed read moves: with the innermost output axis and the
    window ("window", NCHW), with that output axis alone ("outputs", NHWC), or otherwise."""
    used = collect_vars_used_in_prim_expr(index)
    if innermost in used and used & reduce:
        return "window"
    return "outputs" if used == {innermost} else None


def _at(region: tirx.BufferRegion, axes: list) -> bool:
    """Whether a block accesses `region` at exactly its own iterators, in order."""
    return len(region.region) == len(axes) and all(
        r.min.same_as(v) and _int(r.extent) == 1 for r, v in zip(region.region, axes)
    )


def _aligned_columns(read: tirx.BufferRegion, axes: list, window: list) -> bool:
    """Whether the read's innermost index is `s * w + r` (w the innermost output axis, r one
    window axis) and every thread's window columns load as aligned vectors."""
    index = read.region[-1].min
    used = collect_vars_used_in_prim_expr(index)
    columns = [v for v in window if v.var in used]
    if len(columns) != 1:
        return False
    found = [_int(c) for c in tvm.sym.detect_linear_equation(index, [axes[-1], columns[0].var])]
    if len(found) != 3 or None in found:
        return False
    stride, step, offset = found
    return (step, offset) == (1, 0) and aligned_vector(
        _int(columns[0].dom.extent), stride, _int(read.source.shape[-1])
    )


def _inline_around(sch: s_tir.Schedule, reduction, shape: tuple) -> tuple | None:
    """Inline every block but the reduction and the outputs; the output blocks (for a lone
    reduction, the copy of its value out), if each is elementwise over the reduced values and
    the first has one loop per axis, else None."""
    root = sch.get_sblock("root")
    keep = {sch.get(b).name_hint for b in (reduction, *sch.get_output_blocks(root))}
    prologue = [b for b in sch.get_child_blocks(root) if sch.get(b).name_hint not in keep]
    unpadded = all(_pads_nothing(sch.get(block)) for block in prologue)
    for block in prologue:
        sch.compute_inline(block)
    first, *outputs = sch.get_child_blocks(root)
    if not sch.get(first).same_as(sch.get(reduction)):
        return None
    if not outputs and not unpadded:
        return None  # a lone reduction of padded values: Fallback's, as fast
    if not outputs:  # a lone reduction, Reduction's: its value in a register, then copied out
        outputs = [sch.cache_write(reduction, 0, "local")]
    written = [sch.get(reduction).writes[0].source]
    for block in outputs:
        if not _elementwise(sch.get(block), shape, written):
            return None
        written.append(sch.get(block).writes[0].source)
    loops = [_int(sch.get(loop).extent) for loop in sch.get_loops(outputs[0])]
    reads = [r.source for r in sch.get(outputs[0]).reads]
    if loops != list(shape) or not any(source.same_as(written[0]) for source in reads):
        return None
    return tuple(outputs)


def _pads_nothing(block: s_tir.SBlock) -> bool:
    """Whether `block` writes a buffer of the shape it reads (a pad of width 0 does)."""
    shapes = [[_int(d) for d in r.source.shape] for r in (*block.reads, *block.writes)]
    return len(shapes) == 2 and shapes[0] == shapes[1]


def _elementwise(block: s_tir.SBlock, shape: tuple, written: list) -> bool:
    """Whether `block` computes one value per reduced value, reading the values computed in the
    kernel (`written`) where it writes its own (no transposition, no broadcast)."""
    axes = [v.var for v in block.iter_vars]
    return (
        _kinds(block) == "S" * len(shape)
        and tuple(_int(v.dom.extent) for v in block.iter_vars) == shape
        and len(block.writes) == 1
        and _at(block.writes[0], axes)
        and all(_at(r, axes) for r in block.reads if any(r.source.same_as(b) for b in written))
    )


def choose_launch(window: Window, target: Target) -> Launch:
    """Two rows of outputs per thread where windows share rows and the outputs fill the GPU
    even so (blocks of a warp on every multiprocessor); threads per block by block_threads."""
    count = math.prod(window.shape)
    filled = 2 * (multiprocessors(target) or 1) * _warp(target)
    if not window.shares_rows or count < filled:
        return Launch(block_threads(count, target), 1)
    rows = -(-window.shape[-2] // 2)
    return Launch(block_threads(count // window.shape[-2] * rows, target), 2)


def block_threads(units: int, target: Target) -> int:
    """Threads per block for `units` threads of work: BLOCK_THREADS (at most the target's
    limit), halved down to a warp while a multiprocessor would get no block, or while half the
    block would get no work."""
    threads = min(BLOCK_THREADS, max_threads_per_block(target))
    processors = multiprocessors(target) or 1
    while threads > _warp(target) and (-(-units // threads) < processors or threads >= 2 * units):
        threads //= 2
    return threads


def _warp(target: Target) -> int:
    """The fewest threads per block: a warp, and at least 32 (never more than BLOCK_THREADS)."""
    return min(BLOCK_THREADS, max(32, int(target.attrs.get("thread_warp_size", 32))))


def multiprocessors(target: Target) -> int | None:
    """Multiprocessors of the target's GPU: the device's own count where that GPU is present (for
    CUDA, one of the target's architecture), else MULTIPROCESSORS; None where neither says."""
    return _multiprocessors(target.kind.name, str(target.attrs.get("arch", "")).rstrip("af"))


@functools.cache
def _multiprocessors(kind: str, arch: str) -> int | None:
    device = tvm.runtime.device(kind, 0)
    if device.exist and (kind != "cuda" or arch == "sm_" + device.compute_version.replace(".", "")):
        return int(device.multi_processor_count)
    return MULTIPROCESSORS.get(arch)


def schedule_window(sch: s_tir.Schedule, window: Window, launch: Launch) -> s_tir.schedule.LoopRV:
    """One thread per output (per `launch.rows` outputs along the second-to-last axis), the
    reduced value in a register, every loop inside the thread unrolled; returns the thread loop.
    Consecutive threads take consecutive outputs along the innermost axis."""
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
        vector_loads(sch, window.reduction, thread_loop)
    for block in (window.reduction, *window.outputs):
        unroll_inside(sch, block, thread_loop)
    return thread_loop


def vector_loads(sch: s_tir.Schedule, block, loop) -> None:
    """Stage the window rows `block` reads in each iteration of `loop` in registers, each row
    loaded with vector instructions."""
    staged = sch.cache_read(block, 0, "local")
    sch.compute_at(staged, loop, preserve_unit_loops=True)
    columns = sch.get_loops(staged)[-1]
    _, lanes = sch.split(columns, [None, vector_width(sch.get(columns).extent)])
    sch.vectorize(lanes)


def unroll_inside(sch: s_tir.Schedule, block, loop) -> None:
    """Unroll every loop of `block` nested inside `loop`."""
    loops = sch.get_loops(block)
    position = [sch.get(outer).same_as(sch.get(loop)) for outer in loops].index(True)
    for inner in loops[position + 1 :]:
        sch.unroll(inner)


def vector_width(extent) -> int:
    """The widest float vector, 4 or 2 lanes, that divides a loop extent; 1 if neither does."""
    return next((lanes for lanes in (4, 2) if int(extent) % lanes == 0), 1)


def aligned_vector(columns: int, step: int, row: int) -> bool:
    """Whether `columns` consecutive input columns that start at multiples of `step` in rows of
    `row` elements load as aligned vectors of vector_width(columns) lanes."""
    lanes = vector_width(columns)
    return lanes > 1 and step % lanes == 0 and row % lanes == 0
