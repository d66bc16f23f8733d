"""The order of the arms in the timing blocks: a Williams design, balanced in whole cycles."""

import pytest

from pool_fusion_tuning.tuning.measure.design import (
    MIN_AUTO_BLOCKS,
    auto_blocks,
    balance,
    block_orders,
    counts,
    start_row,
    williams_rows,
)


@pytest.mark.parametrize("count", range(2, 11))
def test_each_arm_in_each_position_and_after_each_other_arm_equally_often(count):
    rows = williams_rows(count)
    assert len(rows) == (count if count % 2 == 0 else 2 * count)
    assert all(sorted(row) == list(range(count)) for row in rows)
    names = [f"arm{i}" for i in range(count)]
    positions, follows = counts(block_orders(names, len(rows), start_row=0))
    assert set(positions.values()) == {len(rows) // count}
    assert set(follows.values()) == {1 if count % 2 == 0 else 2}
    assert balance(block_orders(names, 3 * len(rows), start_row=1)) == {
        "positions": True,
        "carryover": True,
    }


def test_lexicographic_permutations_are_not_balanced():
    # The old order: consecutive permutations put the same arm first in block after block.
    import itertools

    orders = [list(p) for p in itertools.permutations("abcd")][:6]
    assert balance(orders) == {"positions": False, "carryover": False}


def test_trials_start_at_different_rows():
    names = ["off", "partial", "on", "serial", "optuna", "metaschedule"]
    firsts = [block_orders(names, 6, start_row(trial, len(names)))[0] for trial in range(3)]
    assert len({tuple(order) for order in firsts}) == 3


@pytest.mark.parametrize(
    "count, blocks", [(1, 6), (2, 6), (3, 6), (4, 8), (5, 10), (6, 6), (8, 8), (9, 18)]
)
def test_auto_blocks_are_whole_cycles(count, blocks):
    assert auto_blocks(count) == blocks >= MIN_AUTO_BLOCKS
    assert blocks % len(williams_rows(count)) == 0


def test_a_partial_cycle_is_reported_unbalanced():
    names = ["a", "b", "c", "d", "e", "f"]
    assert balance(block_orders(names, 8, 0)) == {"positions": False, "carryover": False}
