"""Consecutive elements of the flattened output per thread, as inductor's kernels take them.

Tiling W (`outputs_w`) gives a thread outputs of one row, and where the width is odd a tile running
past the row guards each output. Splitting the flattened output axes instead gives each thread `k`
consecutive elements: only the tensor's end is guarded, and the `k` stores are one aligned vector
store where `k` divides the element count.

The reduction's value and every output a later output reads live in flat local buffers, so a
thread's region is exactly its `k` elements (over a 4-d buffer it would be the bounding box of their
rows) and stays in registers. Indices are divisions and remainders by the output's constant extents;
where `k` divides the width they fall in one row, and a thread's window loads share their addresses
but for constants.
"""

from __future__ import annotations

from tvm import s_tir
from tvm.tirx import IndexMap


def flatten_outputs(sch: s_tir.Schedule, window) -> tuple:
    """Make the reduction (a `window_reduction.Window`'s) and its output blocks iterate over the
    outputs' flat index, and every buffer they write but the function's outputs flat; returns
    (the first output's block, the blocks to place after it in order). A reduction whose value is
    itself a function output is refused (it and its copy out would each need to come first)."""
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
