"""An independent NumPy reference for any Case: no TVM in it."""

from __future__ import annotations

import numpy as np

from .case import Case

# The tolerance for "matches the reference".
RTOL, ATOL = 2e-4, 2e-5


def matches(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=RTOL, atol=ATOL))


def random_input(case: Case, seed: int) -> np.ndarray:
    """The issue's input draw: uniform in [-0.5, 0.5], float32."""
    return np.random.default_rng(seed).uniform(-0.5, 0.5, case.input_shape).astype("float32")


def max_pool(case: Case, y: np.ndarray) -> np.ndarray:
    """MaxPool with a square window, no padding, over the last two axes of NCHW."""
    _, channels, out_h, out_w = case.pool_shape
    k, s = case.window, case.stride
    pooled = np.full((y.shape[0], channels, out_h, out_w), np.finfo(np.float32).min, "float32")
    for rh in range(k):
        for rw in range(k):
            pooled = np.maximum(pooled, y[:, :, rh : rh + out_h * s : s, rw : rw + out_w * s : s])
    return pooled


def reference(case: Case, x: np.ndarray) -> list[np.ndarray]:
    """The graph's outputs as a list (one or two arrays, as the Relax function returns them)."""
    one = np.float32(1)
    y = x
    if case.prelude:
        groups = []
        for _ in range(case.branches):
            leaves = [x + one for _ in range(case.branches)]
            groups.append(np.concatenate(leaves, axis=1) + one)
        y = np.concatenate(groups, axis=1)
    outputs, value = [], max_pool(case, y)
    for _ in range(case.tail):
        value = value + one
        outputs.append(value)
    return [outputs[0], outputs[-1]] if case.shared_output else [outputs[-1]]


def fused_pool_reference(case: Case, pool_input: np.ndarray) -> np.ndarray:
    """What the fused pool kernel FuseOps makes computes: MaxPool, then the tail's Adds up to
    the first value the graph returns (with a shared output the first Add is returned, which
    closes FuseOps' group; otherwise only the last is), each adding 1."""
    value = max_pool(case, pool_input)
    for _ in range(1 if case.shared_output else case.tail):
        value = value + np.float32(1)
    return value


def distinct_outputs(case: Case, x: np.ndarray) -> list[np.ndarray]:
    """The graph's outputs as one kernel for the whole graph writes them: each value once (with
    tail 1 and a shared output, the function returns one value twice)."""
    outputs = reference(case, x)
    return outputs[:1] if case.shared_output and case.tail == 1 else outputs
