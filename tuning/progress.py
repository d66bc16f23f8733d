"""Progress on long phases: a live line with an ETA on a terminal, silence otherwise.

`verbose` (the CLI's --verbose) prints one line per message instead, for logs.
"""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, verbose: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.verbose = verbose
        self._phase_start: dict[str, float] = {}

    def say(self, message: str) -> None:
        if self.verbose:
            print(message, file=self.stream, flush=True)
        elif self.live:
            print(f"\r\033[K{message}", end="", file=self.stream, flush=True)

    def step(self, phase: str, done: int, total: int, detail: str = "") -> None:
        """`done` of `total` units of `phase` finished; the ETA is extrapolated from the rate."""
        start = self._phase_start.setdefault(phase, time.monotonic())
        elapsed = time.monotonic() - start
        eta = elapsed / done * (total - done) if done else float("nan")
        eta_text = f"ETA {eta:.0f}s" if done else "ETA ?"
        message = f"{phase}: {done}/{total} {eta_text} {detail}".rstrip()
        if self.verbose and (done == total or done % max(1, total // 20) == 0):
            print(message, file=self.stream, flush=True)
        elif self.live and not self.verbose:
            print(f"\r\033[K{message}", end="" if done < total else "\n", file=self.stream,
                  flush=True)
