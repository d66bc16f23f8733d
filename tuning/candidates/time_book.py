"""Where a tuner's time went, summed by what it was spent on, so that one run on the device shows
where the next speed-up is.

A tuner's threads, its builder processes and its measuring process add to one `TimeBook`; the
tuner writes the totals into its summary (`time_spent`), and the report's wall-time section
shows them beside the tuner's wall time. Seconds of work done in parallel (builds on many cores)
add up to more than the wall time; `runfolder.spent.SPENT` says what each total is.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from pool_fusion_tuning.runfolder.spent import SPENT


class TimeBook:
    """Seconds and counts by name, added from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, float] = {}

    def add(self, name: str, amount: float = 1) -> None:
        with self._lock:
            self._totals[name] = self._totals.get(name, 0) + amount

    @contextlib.contextmanager
    def timing(self, name: str) -> Iterator[None]:
        """Add the seconds the block takes to `name`."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - started)

    def totals(self, *others: TimeBook) -> dict[str, float]:
        """This book's totals with `others`' added, in SPENT's order."""
        merged: dict[str, float] = {}
        for book in (self, *others):
            with book._lock:
                for name, amount in book._totals.items():
                    merged[name] = merged.get(name, 0) + amount
        order = list(SPENT)
        return {
            name: merged[name]
            for name in sorted(merged, key=lambda n: order.index(n) if n in order else len(order))
        }
