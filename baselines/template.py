"""A schedule template for the fused pool kernel (MaxPool + elementwise epilogue).

Reads like a dlight rule: one small class, one `apply`. It is the window rule's schedule
(`window_reduction.py`) with the knobs the tuners turn: outputs per thread along W and H or the
flattened output (`flat_outputs.py`), which end of the split the threads take, where the pooled
value lives, and a CPU schedule. Every point parallelizes over outputs and reduces the window in one
thread, which the issue says the default rule does not. The issue's SERIAL kernel is one point
(`SERIAL`).

It also takes the whole graph as one kernel (`whole_graph.py`), as `rules.WholeGraphWindowReduction`
does: a concatenation's branches inlined into the window's loads, and every output written by the
thread that computes its pooled value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import tvm
from tvm import s_tir

from .branch_loads import select_branch_loads, stage_scalars
from .flat_outputs import flatten_outputs
from .masked_loads import mask_loads_for
from .output_registers import keep_read_outputs_local
from .window_reduction import _aligned_vector, _inline_window, _unroll_inside, _vector_loads

POOL_BLOCK = "pool_max"
# Knobs added after runs were stored, at the values that give the older schedules: a point records
# them only at other values, so a stored point keeps its record and key.
ADDED_KNOBS = {"outputs_flat": 1, "outputs_strided": 1, "masked_loads": False}


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
    outputs_flat  consecutive flattened-output elements per thread, outputs_w and outputs_h 1;
                  with `vector`, stores vectorized and no input rows staged
    outputs_strided  outputs per thread a block's threads apart (CUDA): thread t takes t,
                  t + threads, ... (with outputs_flat, those groups), as Triton lays out a
                  block, so every warp load and store is coalesced
    masked_loads  (CUDA) a guarded block that writes a register loads at clamped indices
                  instead of behind its guard, as Triton masks loads (`masked_loads.py`);
                  applied in `apply`, so MetaSchedule, which replays traces, has no such choice
    """

    threads: int = 256
    outputs_w: int = 1
    outputs_h: int = 1
    thread_axis: str = "inner"
    unroll: bool = False
    vector: bool = False
    pooled_scope: str = "local"
    outputs_flat: int = 1
    outputs_strided: int = 1
    masked_loads: bool = False

    def to_dict(self) -> dict:
        return recorded(dataclasses.asdict(self))

    def apply(self, func: tvm.tirx.PrimFunc, target: tvm.target.Target) -> tvm.tirx.PrimFunc:
        sch = s_tir.Schedule(func)
        self.schedule(sch, target.kind.name)
        func = sch.mod["main"]
        if self.masked_loads:
            func = mask_loads_for(func, target)
        return func.with_attr("tirx.is_scheduled", True)

    def schedule(self, sch: s_tir.Schedule, target_kind: str) -> None:
        """Apply to a schedule in place. Tile sizes and threads may be sampled decisions
        (`sch.sample_categorical`), which is how MetaSchedule searches this template."""
        if target_kind == "cuda":
            _schedule_gpu(sch, self)
        else:
            _schedule_cpu(sch, self)


# The SERIAL kernel: 256 threads per block, one output per thread, window in a register.
SERIAL = PoolSchedule()


def recorded(params: dict) -> dict:
    """A point's knobs as runs record it: the ADDED_KNOBS at their old values left out."""
    return {k: v for k, v in params.items() if k not in ADDED_KNOBS or v != ADDED_KNOBS[k]}


def _flat(cfg: PoolSchedule) -> bool:
    """Whether the point tiles the flattened output (a sampled value: one of the flat domain's
    above 1)."""
    return not isinstance(cfg.outputs_flat, int) or cfg.outputs_flat > 1


def _strided(cfg: PoolSchedule) -> bool:
    """Whether a thread's outputs lie a block apart (a sampled value: one above 1)."""
    return not isinstance(cfg.outputs_strided, int) or cfg.outputs_strided > 1


def _tile_outputs(sch: s_tir.Schedule, cfg: PoolSchedule):
    """The window rule's analysis (prologue inlined into the pool, a concatenation's branches as
    one load, epilogue inlined into the outputs, an output read by a later one handed over in a
    register), then the first output's H and W tiled by outputs per thread (or its flat index);
    the window, the blocks to place after the first output, the fused outer loop, and the two
    tile loops (H's None where the output is flat)."""
    window = _inline_window(sch)
    if window is None:
        raise ValueError("the function is not a sliding-window reduction with elementwise outputs")
    window = keep_read_outputs_local(sch, window)
    if window.inlined_input:
        select_branch_loads(sch, window.reduction)
    if _flat(cfg):
        first, later = flatten_outputs(sch, window)
        outer, inner = sch.split(sch.get_loops(first)[0], [None, cfg.outputs_flat])
        return window, later, outer, None, inner
    *outer, h, w = sch.get_loops(window.outputs[0])
    h_outer, h_inner = sch.split(h, [None, cfg.outputs_h])
    w_outer, w_inner = sch.split(w, [None, cfg.outputs_w])
    sch.reorder(*outer, h_outer, w_outer, h_inner, w_inner)
    return window, window.outputs[1:], sch.fuse(*outer, h_outer, w_outer), h_inner, w_inner


def _place_later_outputs(
    sch: s_tir.Schedule, later: tuple, loop, cfg: PoolSchedule, vector: bool
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
        if cfg.unroll and not _flat(cfg):  # flat: one loop inside the thread's
            sch.unroll(h_inner)


def _schedule_gpu(sch: s_tir.Schedule, cfg: PoolSchedule) -> None:
    window, later, outer, h_inner, w_inner = _tile_outputs(sch, cfg)
    if _strided(cfg):  # [blocks, strided, threads]: a thread's outputs a block apart
        block_loop, strided, thread_loop = sch.split(
            outer, [None, cfg.outputs_strided, cfg.threads]
        )
        if cfg.unroll:
            sch.unroll(strided)
    elif cfg.thread_axis == "inner":
        block_loop, thread_loop = sch.split(outer, [None, cfg.threads])
    else:
        thread_loop, block_loop = sch.split(outer, [cfg.threads, None])
        sch.reorder(block_loop, thread_loop)
    sch.bind(block_loop, "blockIdx.x")
    sch.bind(thread_loop, "threadIdx.x")
    sch.compute_at(window.reduction, thread_loop, preserve_unit_loops=True)
    sch.set_scope(window.reduction, 0, cfg.pooled_scope)
    stage_scalars(sch, window.reduction, thread_loop)
    vector_stores = cfg.vector and (_flat(cfg) or cfg.outputs_w in (2, 4))
    _place_later_outputs(sch, later, thread_loop, cfg, vector_stores)
    if cfg.vector:
        if not _flat(cfg):
            if window.inlined_input:
                raise ValueError("vector loads need the pool's input in memory, not a prologue")
            _vector_loads(sch, window.reduction, thread_loop)
        if vector_stores:
            sch.vectorize(w_inner)
    if cfg.unroll:
        _unroll_inside(sch, window.reduction, thread_loop)
        if not vector_stores:
            sch.unroll(w_inner)
        if h_inner is not None:
            sch.unroll(h_inner)


def _schedule_cpu(sch: s_tir.Schedule, cfg: PoolSchedule) -> None:
    window, later, outer, _, w_inner = _tile_outputs(sch, cfg)
    sch.parallel(outer)
    sch.compute_at(window.reduction, outer, preserve_unit_loops=True)
    _place_later_outputs(sch, later, outer, cfg, cfg.vector)
    if cfg.unroll:
        _unroll_inside(sch, window.reduction, outer)
    if cfg.vector:
        sch.vectorize(w_inner)


def vector_fits(
    outputs_w: int, window: int, stride: int, input_width: int, output_width: int
) -> bool:
    """Whether `vector` can load each thread's input rows with aligned vector instructions.

    A thread loads input columns [w*ow*s, w*ow*s + (ow-1)*s + k): every such start and row start
    must be aligned to the vector width, and the output tile must divide W so its store stays in
    the row."""
    columns = (outputs_w - 1) * stride + window
    return _aligned_vector(columns, outputs_w * stride, input_width) and (
        output_width % outputs_w == 0
    )
