"""Noise by level: the spreads recover the simulated levels, and host-bound arms that share a
process-level shift show it side by side."""

import numpy as np
import pytest

from pool_fusion_tuning.reports.stats.coverage import H200, simulate
from pool_fusion_tuning.reports.stats.noise import noise_levels


def test_each_level_recovers_its_noise():
    host, gpu = simulate(np.random.default_rng(0), (1, 40, 12, 5), np.log(0.15), "gpu")
    levels = noise_levels(host[0].tolist())
    assert levels["within_call"] == pytest.approx(H200.sample, rel=0.1)
    block = np.hypot(H200.shared_block, H200.own_block)
    assert levels["between_blocks"] == pytest.approx(block, rel=0.15)
    process = np.hypot(H200.shared_process, H200.own_process)
    assert levels["between_processes"] == pytest.approx(process, rel=0.3)
    assert noise_levels(gpu[0].tolist())["between_processes"] < 0.002


def test_host_bound_arms_move_together_between_processes():
    top, bottom = simulate(np.random.default_rng(1), (1, 8, 6, 5), np.log(0.5), "host")
    centres = [np.log(noise_levels(arm[0].tolist())["trial_centres_us"]) for arm in (top, bottom)]
    assert np.corrcoef(*centres)[0, 1] > 0.8


def test_one_trial_or_one_sample_has_no_spread_at_that_level():
    levels = noise_levels([[[10.0], [11.0]]])
    assert levels["within_call"] is None and levels["between_processes"] is None
    assert levels["between_blocks"] > 0
