"""A tuner's trials counted, as both tuners report them: the budget split into shares, the
failures by reason, what a summary starts with, and its one-line result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from .outcome import Status

# A tuner's trial row: a candidate's Outcome with where it came from (trial, point, launch).
Row = TypeVar("Row", bound=Mapping)


def budget_shares(budget: int, parts: int) -> list[int]:
    """`budget` split into `parts` shares that add up to it, the later ones larger by one (the
    two MetaSchedule runs, the Optuna workers)."""
    return [budget // parts + (index >= parts - budget % parts) for index in range(parts)]


def failures_by_reason(records: Sequence[Mapping]) -> dict[str, int]:
    """How many candidates failed, by reason (both tuners report this)."""
    counts: dict[str, int] = {}
    for record in records:
        if record["status"] != Status.OK:
            reason = str(record.get("reason", record["status"]))
            counts[reason] = counts.get(reason, 0) + 1
    return counts


def summary_counts(rows: list[Row], wall_s: float) -> tuple[dict, list[Row]]:
    """What both tuners' summaries start with (trials, valid ones, failures by reason, wall
    time), and the valid rows."""
    valid = [row for row in rows if row["status"] == Status.OK]
    counts = {
        "trials": len(rows),
        "valid": len(valid),
        "failed_by_reason": failures_by_reason(rows),
        "wall_s": wall_s,
    }
    return counts, valid


def tuner_result(summary: dict) -> str:
    """A tuner's outcome in a few words, for its console line."""
    failed = summary["trials"] - summary["valid"]
    best = (
        f"best {summary['best_kernel_us']:.2f} us at trial {summary['best_trial']}"
        if summary.get("best_kernel_us") is not None
        else "no valid candidate"
    )
    return f"{best} of {summary['trials']}" + (f", {failed} failed" if failed else "")
