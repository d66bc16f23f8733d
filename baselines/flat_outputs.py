"""Consecutive elements of the flattened output per thread, as inductor's kernels take them.

Tiling W (`outputs_w`) gives a thread outputs of one row, and where the output width is odd,
a tile that runs past the row guards its outputs one by one. Flattening the output axes into
one and splitting that instead gives each thread `k` consecutive elements of the whole tensor:
only the tensor's end is guarded, and the `k` stores are one vector store where `k` divides
the element count (each thread's first element is then a multiple of `k`, so aligned).

The reduction's value and every output that a later output reads (`output_registers`) live in
flat local buffers: the region a thread computes is then exactly its `k` elements (over a 4-d
buffer it would be the bounding box of the rows they span), so they stay in registers. Indices
are the flat index's divisions and remainders by the output's constant extents; where `k`
divides the output width they fall in one row, and the window loads of a thread's outputs
share their addresses but for constants.
"""

from __future__ import annotations

from tvm import s_tir
from tvm.tirx import IndexMap


def flatten_outputs(sch: s_tir.Schedule, window) -> tuple:
    """Make the reduction (a `window_reduction.Window`'s) and its output blocks iterate over
    the flat index of the outputs, and every buffer they write but the function's outputs flat
    (an output a later one reads is computed into such a buffer: `output_registers`); (the first
    output's block, the blocks to place after it in order). A reduction whose value is itself a
    function output is refused (its copy out and the first output would both have to be under
    the thread's loop before it, and it before them)."""
    if _writes_param(sch, window.reduction):
        raise ValueError("outputs_flat: the reduced value is a function output, read by others")
    # The function's index type (int64 from Relax, int32 from TE): the maps must use it.
    shape = (window.shape, str(sch.get(window.reduction).iter_vars[0].var.ty))
    blocks = [window.reduction, *window.outputs]
    for block in blocks:
        if not _writes_param(sch, block):
            sch.transform_layout(block, ("write", 0), _flat_map(shape, 0))
        extra = len(sch.get(block).iter_vars) - len(window.shape)  # the window's iterators stay
        sch.transform_block_layout(block, _flat_map(shape, extra))
    return window.outputs[0], list(window.outputs[1:])


def _writes_param(sch: s_tir.Schedule, block) -> bool:
    written = sch.get(block).writes[0].source
    return any(written.same_as(p) for p in sch.mod["main"].params)


def _flat_map(shape: tuple[tuple, str], extra: int) -> IndexMap:
    """The output axes (`shape`: their extents and index type) to their flat index, row-major;
    `extra` trailing axes kept."""
    extents, dtype = shape

    def flat(*axes):
        index = 0
        for axis, extent in zip(axes, extents):
            index = index * extent + axis
        return (index, *axes[len(extents) :])

    return IndexMap.from_func(flat, ndim=len(extents) + extra, index_dtype=dtype)
