"""Cells and tables of the Markdown reports: one way to print a time, a ratio, a missing value."""

from __future__ import annotations

MISSING = "—"


def us(value: float | None) -> str:
    """A time in microseconds."""
    return MISSING if value is None else f"{value:.2f}"


def tenths(value: float | None) -> str:
    """A kernel's time in microseconds, to a tenth (the model reports' tables)."""
    return MISSING if value is None else f"{value:.1f}"


def three(value: float | None) -> str:
    """A ratio, to three decimals."""
    return MISSING if value is None else f"{value:.3f}"


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + [
        "| " + " | ".join(MISSING if c is None else str(c) for c in row) + " |" for row in rows
    ]
