"""The idle-lane pattern on plain figures: what the criterion flags and what it leaves."""

import pytest

from pool_fusion_tuning.baselines.models.pattern import CRITERION, has_pattern, warp_lanes
from pool_fusion_tuning.baselines.rules import MAX_WINDOW


@pytest.mark.parametrize(
    "window, outputs, cross_thread, grid, block, flagged",
    [
        (4, 1000, True, 1000, 256, True),  # GeneralReduction on a 2x2 pool (the issue)
        (49, 1000, True, 1000, 256, True),  # GeneralReduction on a 7x7 depthwise conv
        (4, 1000, True, 1000, 4, True),  # Reduction: one block of 4 threads per output
        (25, 1000, True, 1000, 16, True),  # Reduction: 16 threads on a 5x5 window
        (49, 1000, True, 1000, 32, False),  # a warp's every lane has elements to reduce
        (64, 1000, True, 1000, 64, False),  # as many lanes as elements
        (MAX_WINDOW + 1, 1000, True, 1000, 256, False),  # past the window limit
        (None, None, True, 1000, 256, False),  # no constant reduction
        (9, 1000, False, 4, 256, False),  # one thread per output (WindowReduction, Fallback)
        (32, 8, True, 1, 512, False),  # GEMV: one block for many outputs
    ],
)
def test_the_criterion(window, outputs, cross_thread, grid, block, flagged):
    assert has_pattern(window, outputs, cross_thread, grid, block) == flagged


def test_blocks_occupy_whole_warps():
    assert [warp_lanes(t) for t in (1, 4, 32, 33, 256)] == [32, 32, 32, 64, 256]


def test_the_criterion_text_names_the_limit_and_both_default_schedules():
    assert f"at most {MAX_WINDOW}" in CRITERION
    assert "GeneralReduction" in CRITERION and "Reduction's one block of 4 threads" in CRITERION
