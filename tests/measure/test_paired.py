"""Paired ratios: the estimator on data with a known ratio, and its coverage on simulated studies
with the H200's noise structure, at the default number of trials (CPU, a few seconds)."""

import numpy as np
import pytest

from pool_fusion_tuning.reports.report_data import ratio_method
from pool_fusion_tuning.reports.stats import coverage
from pool_fusion_tuning.reports.stats.paired import paired_log_interval, paired_ratio
from pool_fusion_tuning.tuning.measure.design import auto_blocks
from pool_fusion_tuning.tuning.measure.harness import Protocol

TRUE = 0.15


def _study(rng, trial_shifts, blocks=6, samples=5, ratio=TRUE, noise=0.02):
    """One study's lists: a host-bound denominator, the numerator `ratio` times it, both moved
    by the same per-trial shift, with noise of their own per sample."""
    den, num = [], []
    for shift in trial_shifts:
        den.append(
            [list(10 * shift * np.exp(rng.normal(0, noise, samples))) for _ in range(blocks)]
        )
        num.append(
            [
                list(10 * shift * ratio * np.exp(rng.normal(0, noise, samples)))
                for _ in range(blocks)
            ]
        )
    return num, den


def test_an_exact_ratio_has_a_zero_width_interval():
    den = [[[10.0, 10.0, 10.0]] * 4] * 3
    num = [[[25.0, 25.0, 25.0]] * 4] * 3
    found = paired_ratio(num, den)
    assert found["ratio"] == pytest.approx(2.5) and found["low"] == pytest.approx(2.5)
    assert found["high"] == pytest.approx(2.5) and found["distinguishable"]
    assert found["unit"] == "trials" and found["units"] == 3


def test_a_shift_shared_by_both_arms_cancels_in_the_pairs():
    num, den = _study(np.random.default_rng(1), trial_shifts=[1.0, 1.6, 0.7])
    found = paired_ratio(num, den)
    assert found["low"] < TRUE < found["high"]
    assert found["half_width"] < 0.03  # the 60 % shift between processes is gone
    assert found["per_trial"] == pytest.approx([TRUE] * 3, rel=0.03)


def test_one_trial_falls_back_to_its_blocks_and_says_so():
    num, den = _study(np.random.default_rng(2), trial_shifts=[1.0])
    found = paired_ratio(num, den)
    assert found["unit"] == "blocks" and found["units"] == 6
    assert "does not cover differences between processes" in found["method"]
    assert found["low"] < TRUE < found["high"]
    # and the report's method line says what the intervals are (`tune models` runs one trial)
    said = ratio_method([{"design": {"blocks": 6}}], {"blocks": 6, "repeat": 5})
    assert said["method"] == found["method"] and said["trials"] == 1


def test_blocks_and_trials_without_both_arms_are_left_out():
    num, den = _study(np.random.default_rng(3), trial_shifts=[1.0, 1.1, 0.9])
    den[0][2] = []  # not timed in one block
    num[2] = []  # not timed at all in the last trial
    found = paired_ratio(num, den)
    assert found["units"] == 2 and found["per_trial"][2] is None
    assert found["low"] < TRUE < found["high"]
    assert paired_ratio(num, [[[]] * 6] * 3) is None


def test_the_report_uses_this_estimator():
    from pool_fusion_tuning.reports import report_data

    assert report_data.paired_ratio is paired_ratio
    rng = np.random.default_rng(4)
    numerator, denominator = coverage.simulate(rng, (5, 3, 6, 5), np.log(TRUE), "gpu")
    vectorised = paired_log_interval(numerator, denominator)
    for study in range(5):
        one = paired_ratio(numerator[study].tolist(), denominator[study].tolist())
        assert np.log(one["low"]) == pytest.approx(vectorised["log_low"][study])
        assert np.log(one["high"]) == pytest.approx(vectorised["log_high"][study])


DEFAULT_SHAPE = (coverage.STUDIES, Protocol().trials, auto_blocks(6), Protocol().repeat)


@pytest.mark.parametrize("denominator", ["host", "gpu", "gpu-time"])
def test_95_percent_intervals_cover_the_true_ratio_at_the_default_trials(denominator):
    assert Protocol().trials == 3 and coverage.STUDIES >= 1000
    covered = coverage.covered(DEFAULT_SHAPE, denominator, np.log(TRUE), seed=11)
    assert 0.93 <= covered.mean() <= 0.97, covered.mean()


def test_gpu_time_ratios_are_within_one_percent_with_the_h200_noise():
    numerator, denominator = coverage.simulate(
        np.random.default_rng(5), DEFAULT_SHAPE, np.log(0.87), "gpu-time"
    )
    found = paired_log_interval(numerator, denominator)
    half = np.expm1(
        np.maximum(found["log_high"] - found["log_ratio"], found["log_ratio"] - found["log_low"])
    )
    assert np.quantile(half, 0.99) < 0.01


def test_one_trial_cannot_cover_a_process_level_shift():
    # Why the report states the one-trial fallback's limit: blocks alone miss the shift.
    shape = (coverage.STUDIES, 1, 6, 5)
    assert coverage.covered(shape, "gpu", seed=12).mean() < 0.8


def test_verify_reports_each_kind():
    checked = coverage.verify(3, 6, 5, studies=1000)
    assert set(checked["coverage"]) == {"host", "gpu", "gpu-time"}
    assert all(0.93 <= value <= 0.97 for value in checked["coverage"].values())
