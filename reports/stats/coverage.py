"""Does the ratio interval keep its promise? Simulated studies with a known true ratio.

The noise has the H200's structure (reports/h200/README.md): host-bound arms (the VM's short arms,
PyTorch from Python) share a per-process shift and move together between blocks, each with some
noise of its own and a little within a call; a GPU-bound arm (ON) barely moves. Each simulated study
goes through the report's estimator (`paired.paired_log_interval`), and the share of intervals
holding the true ratio is its coverage. CI checks it; the report states it for the run's own numbers
of trials, blocks and samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .paired import CONFIDENCE, paired_log_interval

STUDIES = 2000


@dataclass(frozen=True)
class NoiseModel:
    """Standard deviations of log time per level, as measured on the H200: host-bound arms'
    per-trial medians 10 to 14 %, blocks 8 to 13 %, within a call 2 to 4 %; ON's CV 0.04 to 0.07
    % at every level."""

    shared_process: float = 0.10
    own_process: float = 0.03
    shared_block: float = 0.06
    own_block: float = 0.05
    sample: float = 0.03
    gpu_bound: float = 0.0005


H200 = NoiseModel()


def _levels(rng: np.random.Generator, shape: tuple, sds: Sequence[float]) -> np.ndarray:
    """Process, block and sample noise with standard deviations `sds`, summed, of `shape`
    (studies, trials, blocks, samples)."""
    studies, trials, blocks, samples = shape
    return (
        rng.normal(0, sds[0], (studies, trials, 1, 1))
        + rng.normal(0, sds[1], (studies, trials, blocks, 1))
        + rng.normal(0, sds[2], shape)
    )


def simulate(
    rng: np.random.Generator,
    shape: tuple,
    log_ratio: float,
    denominator: str,
    model: NoiseModel = H200,
) -> tuple[np.ndarray, np.ndarray]:
    """Samples (studies, trials, blocks, samples) of a host-bound numerator and a denominator
    that is "host"-bound too (sharing its process and block shifts) or "gpu"-bound, or of two
    GPU-bound arms ("gpu-time"); the true ratio is exp(log_ratio)."""
    studies, trials, blocks, _ = shape
    gpu = (model.gpu_bound,) * 3
    if denominator == "gpu-time":
        return np.exp(log_ratio + _levels(rng, shape, gpu)), np.exp(_levels(rng, shape, gpu))
    shared = rng.normal(0, model.shared_process, (studies, trials, 1, 1)) + rng.normal(
        0, model.shared_block, (studies, trials, blocks, 1)
    )
    own = (model.own_process, model.own_block, model.sample)
    numerator = np.exp(log_ratio + shared + _levels(rng, shape, own))
    bottom = (
        shared + _levels(rng, shape, own) if denominator == "host" else _levels(rng, shape, gpu)
    )
    return numerator, np.exp(bottom)


def covered(
    shape: tuple,
    denominator: str,
    log_ratio: float = np.log(0.15),
    seed: int = 0,
    model: NoiseModel = H200,
) -> np.ndarray:
    """Per simulated study: whether its interval holds the true ratio."""
    numerator, bottom = simulate(np.random.default_rng(seed), shape, log_ratio, denominator, model)
    found = paired_log_interval(numerator, bottom, CONFIDENCE)
    return (found["log_low"] <= log_ratio) & (log_ratio <= found["log_high"])


def verify(trials: int, blocks: int, samples: int, studies: int = STUDIES, seed: int = 0) -> dict:
    """Coverage of the 95 % interval at these numbers, for a ratio of two host-bound arms, of a
    host-bound arm to a GPU-bound one, and of two GPU times."""
    shape = (studies, trials, max(blocks, 1), max(samples, 1))
    return {
        "studies": studies,
        "trials": trials,
        "blocks": blocks,
        "samples": samples,
        "coverage": {
            kind: float(np.mean(covered(shape, kind, seed=seed)))
            for kind in ("host", "gpu", "gpu-time")
        },
    }
