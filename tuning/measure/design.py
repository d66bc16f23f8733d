"""The order of the arms in each timing block: a Williams design.

Across the design's rows every arm takes every position equally often (a slow start of the block
or a drift within it falls on every arm alike), and every arm comes right after every other arm
equally often (what one arm leaves behind, a warm cache or a busy host, follows every arm alike).
For an even number of arms one Latin square does both; for an odd number it takes two, the second
the mirror of the first (Williams, 1949).
"""

from __future__ import annotations

# With --blocks auto, at least this many blocks per trial (whole cycles of the design's rows).
MIN_AUTO_BLOCKS = 6


def williams_rows(count: int) -> list[list[int]]:
    """The design's rows: orders of 0..count-1 (count rows if count is even, else 2 * count)."""
    if count < 1:
        return []
    # First row 0, 1, n-1, 2, n-2, ...; row i adds i to every entry (mod n).
    first = [0] + [(j + 1) // 2 if j % 2 else count - j // 2 for j in range(1, count)]
    rows = [[(entry + shift) % count for entry in first] for shift in range(count)]
    if count % 2 and count > 1:
        rows += [row[::-1] for row in rows]
    return rows


def auto_blocks(count: int) -> int:
    """The fewest blocks that hold whole cycles of the design and at least MIN_AUTO_BLOCKS."""
    rows = len(williams_rows(count)) or 1
    return rows * -(-MIN_AUTO_BLOCKS // rows)


def block_orders(names: list[str], blocks: int, start_row: int) -> list[list[str]]:
    """The arms' order in each of `blocks` blocks: the design's rows in turn from `start_row`."""
    rows = williams_rows(len(names))
    if not rows:
        return [[] for _ in range(blocks)]
    return [[names[i] for i in rows[(start_row + block) % len(rows)]] for block in range(blocks)]


def start_row(trial: int, count: int) -> int:
    """Trials start at different rows, so a partial cycle does not favour the same arms."""
    return trial % max(1, len(williams_rows(count)))


def counts(orders: list[list[str]]) -> tuple[dict, dict]:
    """How often each arm is in each position, and how often each arm comes right after each
    other arm, over `orders`."""
    names = sorted(orders[0])
    positions = {(name, p): 0 for name in names for p in range(len(names))}
    follows = {(a, b): 0 for a in names for b in names if a != b}
    for order in orders:
        for position, name in enumerate(order):
            positions[name, position] += 1
        for before, after in zip(order, order[1:]):
            follows[before, after] += 1
    return positions, follows


def balance(orders: list[list[str]]) -> dict:
    """Whether `orders` put each arm in each position, and right after each other arm, equally
    often (True for whole cycles of the design)."""
    if not orders or not orders[0]:
        return {"positions": True, "carryover": True}
    positions, follows = counts(orders)
    return {
        "positions": len(set(positions.values())) == 1,
        "carryover": len(set(follows.values())) <= 1,
    }
