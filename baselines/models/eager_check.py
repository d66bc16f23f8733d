"""Whether a TVM build computes what PyTorch eager computes, with TF32 off in PyTorch.

The tolerance is relative to the output's magnitude, not elementwise (networks mix large values and
values near zero). Each output is correct when

max |got - want|  <=  RTOL[dtype] * max |want|  +  ATOL[dtype]

and holds no NaN where PyTorch's has none. ATOL is the dtype's smallest normal number, only to keep
an all-zero output checkable: random-weight networks give outputs of any scale, and an absolute
floor above it would pass anything. `scale` (max |want|) is recorded beside the error. A wrong
schedule misses by the output's own size; another accumulation order by rounding, orders of
magnitude below. TF32 (on by default for PyTorch's CUDA convolutions) is a difference of precision,
not schedule: the reference runs with it off (`tf32(False)`), and `tf32_state()` is recorded with
any figure of PyTorch's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np

RTOL = {"float32": 1e-3, "float16": 2e-2}
ATOL = {dtype: float(np.finfo(dtype).tiny) for dtype in RTOL}


@dataclass(frozen=True)
class OutputCheck:
    """The check of all outputs: the worst error against its bound, and that output's scale."""

    correct: bool
    max_abs_err: float | None
    bound: float | None
    scale: float | None
    reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def check_outputs(got: list[np.ndarray], want: list[np.ndarray], dtype: str) -> OutputCheck:
    """`got` against PyTorch's `want`, output by output: wrong where a shape differs, a NaN
    appears or an error exceeds its bound; else the worst error relative to its bound."""
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        shapes = [g.shape for g in got], [w.shape for w in want]
        return OutputCheck(
            False, None, None, None, f"output shapes differ: {shapes[0]} vs {shapes[1]}"
        )
    errors = []
    for g, w in zip(got, want):
        g, w = g.astype(np.float64), w.astype(np.float64)
        if np.isnan(g).any() and not np.isnan(w).any():
            return OutputCheck(False, None, None, None, "NaN in the output")
        error = float(np.nanmax(np.abs(g - w), initial=0.0))
        scale = float(np.nanmax(np.abs(w), initial=0.0))
        bound = RTOL[dtype] * scale + ATOL[dtype]
        errors.append((error / bound, error, bound, scale))
    ratio, error, bound, scale = max(errors, default=(0.0, 0.0, 0.0, 0.0))
    correct = ratio <= 1
    reason = None if correct else "outside the tolerance"
    return OutputCheck(correct, error, bound, scale, reason)


def tf32_state() -> dict:
    """PyTorch's TF32 switches: cuDNN convolutions and CUDA matmuls."""
    import torch

    return {
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


@contextlib.contextmanager
def tf32(enabled: bool) -> Iterator[None]:
    """PyTorch's TF32 switches set to `enabled` inside, restored after; through the `allow_tf32`
    flags, since setting torch 2.9's `fp32_precision` for only some backends makes later
    `allow_tf32` reads raise."""
    before = tf32_state()
    set_tf32(enabled)
    try:
        yield
    finally:
        _set_flags(before["cudnn_allow_tf32"], before["matmul_allow_tf32"])


def set_tf32(enabled: bool) -> None:
    """Both TF32 switches set to `enabled` for the rest of the process (a model's trial process
    turns them off before its peers compile, so PyTorch runs fp32 as TVM does)."""
    _set_flags(enabled, enabled)


def _set_flags(cudnn: bool, matmul: bool) -> None:
    import torch

    torch.backends.cudnn.allow_tf32 = cudnn
    torch.backends.cuda.matmul.allow_tf32 = matmul


def torch_outputs(module, inputs: list[np.ndarray], device: str = "cpu") -> list[np.ndarray]:
    """PyTorch eager's outputs of `module` (moved to `device`) for `inputs`, TF32 off, flattened
    by PyTorch's pytree as `torch.export` does."""
    import torch
    from torch.utils import _pytree

    module.to(device)
    tensors = [torch.from_numpy(x).to(device) for x in inputs]
    with torch.no_grad(), tf32(False):
        result = module(*tensors)
    return [leaf.cpu().numpy() for leaf in _pytree.tree_leaves(result)]
