"""Whether a TVM build computes what PyTorch eager computes, with TF32 off in PyTorch.

The tolerance is relative to the output's magnitude, not elementwise: a network's outputs mix
large values and values near zero, where elementwise relative error means nothing. Each output
is correct when

    max |got - want|  <=  RTOL[dtype] * max |want|  +  ATOL[dtype]

and holds no NaN where PyTorch's has none. A schedule that computes the wrong thing misses by
the output's own size; another order of accumulation misses by rounding errors, which grow with
depth but stay orders of magnitude below it. TF32 (on by default for PyTorch's CUDA
convolutions) rounds the operands to 10 mantissa bits, a difference of precision, not of
schedule: the reference runs with it off (`tf32(False)`), and `tf32_state()` is recorded with
any figure of PyTorch's.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

import numpy as np

RTOL = {"float32": 1e-3, "float16": 2e-2}
ATOL = {"float32": 1e-6, "float16": 1e-4}


@dataclass(frozen=True)
class OutputCheck:
    """The check of all outputs: the worst error, and the bound of the output that set it."""

    correct: bool
    max_abs_err: float | None
    bound: float | None
    reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def check_outputs(got: list[np.ndarray], want: list[np.ndarray], dtype: str) -> OutputCheck:
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        shapes = [g.shape for g in got], [w.shape for w in want]
        return OutputCheck(False, None, None, f"output shapes differ: {shapes[0]} vs {shapes[1]}")
    errors = []
    for g, w in zip(got, want):
        g, w = g.astype(np.float64), w.astype(np.float64)
        if np.isnan(g).any() and not np.isnan(w).any():
            return OutputCheck(False, None, None, "NaN in the output")
        error = float(np.nanmax(np.abs(g - w), initial=0.0))
        bound = RTOL[dtype] * float(np.nanmax(np.abs(w), initial=0.0)) + ATOL[dtype]
        errors.append((error / bound, error, bound))
    ratio, error, bound = max(errors, default=(0.0, 0.0, 0.0))
    correct = ratio <= 1
    return OutputCheck(correct, error, bound, None if correct else "outside the tolerance")


def tf32_state() -> dict:
    """PyTorch's TF32 switches: cuDNN convolutions and CUDA matmuls."""
    import torch

    return {
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


@contextlib.contextmanager
def tf32(enabled: bool):
    """PyTorch's TF32 switches set to `enabled` inside, restored after. Through the
    `allow_tf32` flags, not torch 2.9's `fp32_precision`: setting the new flags of only some
    backends makes later reads of `allow_tf32` (by torch.compile, among others) raise."""
    import torch

    before = tf32_state()
    torch.backends.cudnn.allow_tf32 = enabled
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = before["cudnn_allow_tf32"]
        torch.backends.cuda.matmul.allow_tf32 = before["matmul_allow_tf32"]


def torch_outputs(module, inputs: list[np.ndarray], device: str = "cpu") -> list[np.ndarray]:
    """PyTorch eager's outputs of `module` (moved to `device`) for `inputs`, TF32 off,
    flattened in order by PyTorch's pytree, as `torch.export` flattens them."""
    import torch
    from torch.utils import _pytree

    module.to(device)
    tensors = [torch.from_numpy(x).to(device) for x in inputs]
    with torch.no_grad(), tf32(False):
        result = module(*tensors)
    return [leaf.cpu().numpy() for leaf in _pytree.tree_leaves(result)]
