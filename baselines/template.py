"""A schedule template for the fused pool kernel (MaxPool + elementwise epilogue).

Reads like a dlight rule: one small class, one `apply`. Every point parallelizes over outputs and
reduces the window inside one thread, which is what the issue says the default rule does not do.
The issue's SERIAL kernel is one point of it (`SERIAL`).

It also takes the whole graph as one kernel (`baselines/whole_graph.py`): the injective prologue
is inlined into the window's loads, and every output is written by the thread that computes its
pooled value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import tvm
from tvm import s_tir

from .branch_loads import select_branch_loads

POOL_BLOCK = "pool_max"


@dataclass(frozen=True)
class PoolSchedule:
    """One point of the template; the fields are the knobs the Optuna search turns.

    threads       threads per block (CUDA only)
    outputs_w     outputs per thread along W (consecutive)
    outputs_h     outputs per thread along H
    thread_axis   "inner": consecutive threads take consecutive outputs (coalesced);
                  "outer": threadIdx.x takes the outer part of the split (strided)
    unroll        unroll the window and the per-thread output loops
    vector        vectorize the per-thread input rows (loads) and outputs along W (stores);
                  on CUDA only where the pool reads its input from memory (no prologue)
    pooled_scope  where the pooled value lives between the reduction and the epilogue
    """

    threads: int = 256
    outputs_w: int = 1
    outputs_h: int = 1
    thread_axis: str = "inner"
    unroll: bool = False
    vector: bool = False
    pooled_scope: str = "local"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def apply(self, func: tvm.tirx.PrimFunc, target: tvm.target.Target) -> tvm.tirx.PrimFunc:
        sch = s_tir.Schedule(func)
        self.schedule(sch, target.kind.name)
        return sch.mod["main"].with_attr("tirx.is_scheduled", True)

    def schedule(self, sch: s_tir.Schedule, target_kind: str) -> None:
        """Apply to a schedule in place. Tile sizes and threads may be sampled decisions
        (`sch.sample_categorical`), which is how MetaSchedule searches this template."""
        if target_kind == "cuda":
            _schedule_gpu(sch, self)
        else:
            _schedule_cpu(sch, self)


# The SERIAL kernel: 256 threads per block, one output per thread, window in a register.
SERIAL = PoolSchedule()


def _tile_outputs(sch: s_tir.Schedule, cfg: PoolSchedule):
    """Inline the prologue into the pool and the epilogue into the outputs, tile the first
    output's H and W by outputs per thread. Also returns the later outputs: the thread that
    computes a pooled value writes them too (`_place_later_outputs`)."""
    pool = reduction_block(sch)
    inline_prologue(sch, pool)
    output, *later = epilogue_outputs(sch, pool)
    n, c, h, w = sch.get_loops(output)
    h_outer, h_inner = sch.split(h, [None, cfg.outputs_h])
    w_outer, w_inner = sch.split(w, [None, cfg.outputs_w])
    sch.reorder(n, c, h_outer, w_outer, h_inner, w_inner)
    return pool, later, sch.fuse(n, c, h_outer, w_outer), h_inner, w_inner


def reduction_block(sch: s_tir.Schedule):
    """The one block of the function that reduces (the pool, whatever its name)."""
    found = [
        block
        for block in sch.get_child_blocks(sch.get_sblock("root"))
        if any(v.iter_type == tvm.tirx.IterVar.CommReduce for v in sch.get(block).iter_vars)
    ]
    if len(found) != 1:
        raise ValueError(f"expected one reduction block, found {len(found)}")
    return found[0]


def inline_prologue(sch: s_tir.Schedule, pool) -> bool:
    """Inline every block before the pool (the injective prologue) into the pool's loads, a
    concatenation's branches made one load at a selected index; whether there was one."""
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    names = [sch.get(block).name_hint for block in blocks]
    prologue = blocks[: names.index(sch.get(pool).name_hint)]
    for block in prologue:
        sch.compute_inline(block)
    if prologue:
        select_branch_loads(sch, pool)
    return bool(prologue)


def elementwise_chain(sch: s_tir.Schedule, pool) -> list:
    """The blocks after the pool, in order, if they form one chain (ending in an output)."""
    chain, block = [], pool
    while consumers := sch.get_consumers(block):
        if len(consumers) != 1:
            raise ValueError("the fused pool function is not a single elementwise chain")
        block = consumers[0]
        chain.append(block)
    if not chain:
        raise ValueError("the pool has no elementwise consumer")
    return chain


def epilogue_outputs(sch: s_tir.Schedule, pool) -> list:
    """Inline the chain after the pool into the output blocks; returns those, in chain order
    (several where the graph returns values along the chain)."""
    outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(sch.get_sblock("root"))}
    chain = [(block, sch.get(block).name_hint in outputs) for block in elementwise_chain(sch, pool)]
    for block, is_output in chain:
        if not is_output:
            sch.compute_inline(block)
    return [block for block, is_output in chain if is_output]


def _place_later_outputs(
    sch: s_tir.Schedule, later: list, loop, cfg: PoolSchedule, vector: bool
) -> None:
    """Each later output under `loop`, tiled as the first, so one thread writes all of them
    (an output block cannot be computed at its consumer, hence reverse_compute_at)."""
    for block in later:
        sch.reverse_compute_at(block, loop, preserve_unit_loops=True)
        *_, h_inner, w_inner = sch.get_loops(block)
        if vector:
            sch.vectorize(w_inner)
        elif cfg.unroll:
            sch.unroll(w_inner)
        if cfg.unroll:
            sch.unroll(h_inner)


def _schedule_gpu(sch: s_tir.Schedule, cfg: PoolSchedule) -> None:
    pool, later, outer, h_inner, w_inner = _tile_outputs(sch, cfg)
    if cfg.thread_axis == "inner":
        block_loop, thread_loop = sch.split(outer, [None, cfg.threads])
    else:
        thread_loop, block_loop = sch.split(outer, [cfg.threads, None])
        sch.reorder(block_loop, thread_loop)
    sch.bind(block_loop, "blockIdx.x")
    sch.bind(thread_loop, "threadIdx.x")
    sch.compute_at(pool, thread_loop, preserve_unit_loops=True)
    sch.set_scope(pool, 0, cfg.pooled_scope)
    _stage_scalars(sch, pool, thread_loop)
    _place_later_outputs(sch, later, thread_loop, cfg, cfg.vector and cfg.outputs_w in (2, 4))
    if cfg.vector:
        _vector_loads(sch, pool, thread_loop)
        if cfg.outputs_w in (2, 4):
            sch.vectorize(w_inner)
    if cfg.unroll:
        _unroll_inner(sch, pool, thread_loop)
        if not cfg.vector or cfg.outputs_w not in (2, 4):
            sch.unroll(w_inner)
        sch.unroll(h_inner)


def _schedule_cpu(sch: s_tir.Schedule, cfg: PoolSchedule) -> None:
    pool, later, outer, h_inner, w_inner = _tile_outputs(sch, cfg)
    sch.parallel(outer)
    sch.compute_at(pool, outer, preserve_unit_loops=True)
    _place_later_outputs(sch, later, outer, cfg, cfg.vector)
    if cfg.unroll:
        _unroll_inner(sch, pool, outer)
    if cfg.vector:
        sch.vectorize(w_inner)


def _stage_scalars(sch: s_tir.Schedule, pool, thread_loop) -> None:
    """Load each 0-d input of the pool (an inlined prologue's biases) once per thread, into a
    register: the window's elements then select between registers, not between loads."""
    names = [r.source.name for r in sch.get(pool).reads if not r.source.shape]
    for name in names:
        index = [r.source.name for r in sch.get(pool).reads].index(name)
        staged = sch.cache_read(pool, index, "local")
        sch.compute_at(staged, thread_loop, preserve_unit_loops=True)


def _unroll_inner(sch: s_tir.Schedule, block, parent) -> None:
    """Unroll every loop of `block` nested below `parent` (the window and the output tile)."""
    loops = sch.get_loops(block)
    position = [i for i, loop in enumerate(loops) if sch.get(loop).same_as(sch.get(parent))][0]
    for loop in loops[position + 1 :]:
        sch.unroll(loop)


def _vector_loads(sch: s_tir.Schedule, pool, thread_loop) -> None:
    """Stage each thread's input rows in registers, loading them with vector instructions."""
    if len(sch.get(pool).reads) != 1:  # an inlined prologue reads the graph's input, and more
        raise ValueError("vector loads need the pool's input in memory, not an inlined prologue")
    staged = sch.cache_read(pool, 0, "local")
    sch.compute_at(staged, thread_loop, preserve_unit_loops=True)
    columns = sch.get_loops(staged)[-1]
    width = vector_width(sch.get(columns).extent)
    if width > 1:
        _, lanes = sch.split(columns, [None, width])
        sch.vectorize(lanes)


def vector_width(extent) -> int:
    """The widest float vector (4 or 2 lanes) that divides a loop extent, else 1."""
    extent = int(extent)
    return next((w for w in (4, 2) if extent % w == 0), 1)


def vector_fits(
    outputs_w: int, window: int, stride: int, input_width: int, output_width: int
) -> bool:
    """Whether `vector` can load each thread's input rows with aligned vector instructions.

    A thread loads input columns [w*ow*s, w*ow*s + (ow-1)*s + k): a vector load needs every such
    start and every row start aligned to its width, and the output tile to divide W so the store
    of the tile never runs past the row."""
    width = vector_width((outputs_w - 1) * stride + window)
    return (
        width > 1
        and (outputs_w * stride) % width == 0
        and input_width % width == 0
        and output_width % outputs_w == 0
    )
