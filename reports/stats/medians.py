"""Statistics that report their own noise: medians, IQR, CV (ratios: `paired.py`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def summarize(samples_us: Sequence[float] | np.ndarray) -> dict:
    """Median, quartiles, IQR and CV of one arm's samples (microseconds)."""
    values = np.asarray(samples_us, dtype=float)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    cv = float(values.std(ddof=1) / values.mean()) if len(values) > 1 else 0.0
    return {
        "median_us": float(median),
        "q1_us": float(q1),
        "q3_us": float(q3),
        "iqr_us": float(q3 - q1),
        "cv": cv,
        "samples": int(len(values)),
    }


def combined_median(trials: list) -> float:
    """The issue's combination of independent trials: the median of per-trial medians."""
    return float(np.median([np.median(samples) for samples in trials]))
