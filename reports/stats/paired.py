"""Ratios of two arms from samples paired within blocks, with Student-t intervals over trials.

Two arms timed in one block share that moment's host, so what moves the block mostly cancels in
their ratio. Per block the estimator takes the log ratio of the arms' block medians, per trial the
mean over its blocks, and over trials a Student-t interval on those means (df = trials - 1). A
process-level shift moves a trial's mean as a whole; the t interval stays exact under normal shifts
of any size, where a percentile bootstrap over three trials covers about 75 %, not 95 %.
`reports/stats/coverage.py` checks the coverage by simulation.

Every function takes arrays shaped (..., trials, blocks, samples), so a simulation can pass
thousands of studies at once; `paired_ratio` is the report's entry, for one study's ragged lists.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

CONFIDENCE = 0.95
METHOD = (
    "paired within blocks: per block the log of the ratio of the two arms' block medians, "
    "per trial the mean over its blocks, then a Student-t interval over the per-trial "
    "means (df = trials - 1)"
)
# With one trial there is nothing between processes to go on: the interval is over blocks, and
# it cannot cover a process-level shift.
ONE_TRIAL_METHOD = (
    "one trial: a Student-t interval over that trial's per-block log-ratios "
    "(df = blocks - 1); it does not cover differences between processes"
)


def as_blocks(per_trial: list, trials: int | None = None, blocks: int | None = None) -> np.ndarray:
    """Ragged samples (a list per trial of a list per block of samples) as one float array
    (trials, blocks, samples); missing blocks and samples are NaN."""
    trials = max(trials or 0, len(per_trial))
    blocks = max([blocks or 0] + [len(t) for t in per_trial])
    samples = max([1] + [len(b) for t in per_trial for b in t])
    array = np.full((trials, blocks, samples), np.nan)
    for i, trial in enumerate(per_trial):
        for j, block in enumerate(trial):
            array[i, j, : len(block)] = block
    return array


def nan_quiet(function: Callable[..., np.ndarray], *args: Any, **kwargs: Any) -> np.ndarray:
    """numpy's nan-functions warn on an all-NaN slice (an arm missing from a block); the NaN is
    meant."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return function(*args, **kwargs)


def block_log_ratios(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """(..., trials, blocks): log(median of the numerator's block / median of the denominator's)."""
    top = nan_quiet(np.nanmedian, numerator, axis=-1)
    bottom = nan_quiet(np.nanmedian, denominator, axis=-1)
    return np.log(top) - np.log(bottom)


def t_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple:
    """Mean, low and high of the Student-t interval of the last axis (NaN entries left out)."""
    from scipy import stats

    count = np.sum(np.isfinite(values), axis=-1)
    mean = nan_quiet(np.nanmean, values, axis=-1)
    spread = nan_quiet(np.nanstd, values, axis=-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        quantile = stats.t.ppf(0.5 + confidence / 2, np.maximum(count - 1, 1))
        half = np.where(count >= 2, quantile * spread / np.sqrt(count), np.nan)
    return mean, mean - half, mean + half, count


def paired_log_interval(
    numerator: np.ndarray, denominator: np.ndarray, confidence: float = CONFIDENCE
) -> dict:
    """The estimator, vectorised over leading axes: log-ratio, its interval, the per-trial means."""
    logs = block_log_ratios(numerator, denominator)
    per_trial = nan_quiet(np.nanmean, logs, axis=-1)
    trials = np.sum(np.isfinite(per_trial), axis=-1)
    one_trial = np.all(trials <= 1)
    units = per_trial
    if one_trial:  # the blocks of the one trial that has both arms are the units
        first = np.argmax(np.isfinite(per_trial), axis=-1)[..., None, None]
        units = np.take_along_axis(logs, first, axis=-2)[..., 0, :]
    mean, low, high, count = t_interval(units, confidence)
    return {
        "log_ratio": mean,
        "log_low": low,
        "log_high": high,
        "units": count,
        "per_trial": per_trial,
        "unit": "blocks" if one_trial else "trials",
    }


def paired_ratio(numerator: list, denominator: list, confidence: float = CONFIDENCE) -> dict | None:
    """The report's ratio of two arms: per-trial lists of per-block sample lists for each.
    None where no block holds both arms."""
    trials = max(len(numerator), len(denominator))
    blocks = max([len(t) for t in numerator + denominator] or [0])
    found = paired_log_interval(
        as_blocks(numerator, trials, blocks), as_blocks(denominator, trials, blocks), confidence
    )
    if not np.isfinite(found["log_ratio"]):
        return None
    ratio = float(np.exp(found["log_ratio"]))
    low, high = (
        float(np.exp(found[key])) if np.isfinite(found[key]) else None
        for key in ("log_low", "log_high")
    )
    return {
        "ratio": ratio,
        "low": low,
        "high": high,
        "confidence": confidence,
        "unit": found["unit"],
        "units": int(found["units"]),
        "method": ONE_TRIAL_METHOD if found["unit"] == "blocks" else METHOD,
        "per_trial": [float(np.exp(v)) if np.isfinite(v) else None for v in found["per_trial"]],
        "half_width": None
        if low is None or high is None
        else max(high / ratio - 1, 1 - low / ratio),
        "distinguishable": low is not None and high is not None and (low > 1 or high < 1),
    }
