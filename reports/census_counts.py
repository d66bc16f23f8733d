"""Counts over a census's flagged kernels, which census.json's rows and census.md both read."""

from __future__ import annotations

from collections import Counter

from .model_names import DEFAULT

# A flagged kernel's `window_rule` where a candidate list takes it (else the reason it declines).
TAKES = "takes"
ROW_TAKES = "RowReduction takes"


def tally(flagged: list[dict]) -> dict:
    """Counts over flagged kernels: kernels and launches, taken by the window rule and by
    RowReduction, declined by reason, and the default list's rules."""
    taken = [k for k in flagged if k["window_rule"] == TAKES]
    rows = [k for k in flagged if k["window_rule"] == ROW_TAKES]
    return {
        "kernels": len(flagged),
        "launches": sum(k["calls"] for k in flagged),
        "taken": len(taken),
        "taken_launches": sum(k["calls"] for k in taken),
        "rows": len(rows),
        "rows_launches": sum(k["calls"] for k in rows),
        "declined": Counter(
            str(k["window_rule"]) for k in flagged if k["window_rule"] not in (TAKES, ROW_TAKES)
        ),
        "default_rules": Counter(str(k["rules"].get(DEFAULT)) for k in flagged),
    }


def flagged_ms(flagged: list[dict], rules: str) -> float | None:
    """Launches x time of the flagged kernels under `rules`, in ms; None unless all are timed."""
    times = [k["kernel_us"].get(rules) for k in flagged]
    if not flagged or None in times:
        return None
    return sum(k["calls"] * t for k, t in zip(flagged, times)) / 1e3
