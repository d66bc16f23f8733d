"""Each arm's noise by level: within a call, between blocks, between processes (trials).

Spreads are standard deviations of log time (close to the CV for spreads of a few percent), so
arms of very different speeds compare. Each level's spread holds a share of the levels below it
(a block median averages a call's samples, a trial's centre its blocks). Where the host-bound
arms share a level's noise, their per-trial centres move together; `trial_centres_us` shows it.
"""

from __future__ import annotations

import numpy as np

from .paired import as_blocks, nan_quiet


def _pooled_sd(logs: np.ndarray) -> float | None:
    """Root of the mean within-group variance along the last axis (groups of >= 2 values)."""
    variances = nan_quiet(np.nanvar, logs, axis=-1, ddof=1)
    value = nan_quiet(np.nanmean, variances)
    return None if not np.isfinite(value) else float(np.sqrt(value))


def noise_levels(per_trial: list) -> dict:
    """Per-trial lists of per-block sample lists (us) -> spreads per level and trial centres."""
    logs = np.log(as_blocks(per_trial))
    block_medians = nan_quiet(np.nanmedian, logs, axis=-1)
    centres = nan_quiet(np.nanmean, block_medians, axis=-1)
    finite = centres[np.isfinite(centres)]
    return {
        "within_call": _pooled_sd(logs),
        "between_blocks": _pooled_sd(block_medians),
        "between_processes": float(np.std(finite, ddof=1)) if len(finite) >= 2 else None,
        # The geometric mean of a trial's block medians: the centre its paired ratios use.
        "trial_centres_us": [float(np.exp(c)) if np.isfinite(c) else None for c in centres],
    }
