"""Statistics that report their own noise: medians, IQR, CV, bootstrap intervals for ratios."""

from __future__ import annotations

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000


def summarize(samples_us) -> dict:
    """Median, quartiles, IQR and CV of one arm's samples (microseconds)."""
    values = np.asarray(samples_us, dtype=float)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    cv = float(values.std(ddof=1) / values.mean()) if len(values) > 1 else 0.0
    return {"median_us": float(median), "q1_us": float(q1), "q3_us": float(q3),
            "iqr_us": float(q3 - q1), "cv": cv, "samples": int(len(values))}


def combined_median(trials: list) -> float:
    """The issue's combination of independent trials: the median of per-trial medians."""
    return float(np.median([np.median(samples) for samples in trials]))


def ratio_interval(numerator: list, denominator: list, seed: int = 0) -> dict:
    """Ratio of combined medians with a hierarchical bootstrap interval.

    `numerator` and `denominator` are lists of per-trial sample lists. Each resample draws trials
    with replacement, then samples within each drawn trial, so both the trial-to-trial and the
    within-trial spread widen the interval.
    """
    rng = np.random.default_rng(seed)
    num = [np.asarray(t, dtype=float) for t in numerator]
    den = [np.asarray(t, dtype=float) for t in denominator]
    ratios = np.empty(RESAMPLES)
    for i in range(RESAMPLES):
        picks = rng.integers(0, len(num), len(num))
        top = np.median([np.median(rng.choice(num[p], len(num[p]))) for p in picks])
        bottom = np.median([np.median(rng.choice(den[p], len(den[p]))) for p in picks])
        ratios[i] = top / bottom
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    ratio = combined_median(num) / combined_median(den)
    return {"ratio": float(ratio), "low": float(low), "high": float(high),
            "confidence": CONFIDENCE, "distinguishable": bool(low > 1 or high < 1)}
