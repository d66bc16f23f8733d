"""The console of a long run: one progress bar per phase, one summary line when a phase ends.

Everything else a run prints (TVM's C++ logs, MetaSchedule's tables, XGBoost, compilers, child
processes) goes to `details.log` in the run folder through `details_to`. Bars are drawn only on a
terminal; a log or a pipe gets the summary lines alone. `verbose` (the CLI's --verbose) leaves
the console as it is and prints every message instead of bars.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from pool_fusion_tuning.runfolder.store import open_in_place

DETAILS_LOG = "details.log"


class Progress:
    def __init__(self, verbose: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self._bars: dict = {}
        self._started: dict[str, float] = {}
        self._lock = threading.Lock()  # phases may run side by side in threads

    @property
    def live(self) -> bool:
        return not self.verbose and hasattr(self.stream, "isatty") and self.stream.isatty()

    def say(self, message: str) -> None:
        """A detail: shown with --verbose only."""
        if self.verbose:
            self._print(message)

    def line(self, message: str) -> None:
        """A line every reader needs (a phase's result, a failure, where the report is)."""
        with self._lock:
            if self._bars:
                from tqdm import tqdm

                tqdm.write(message, file=self.stream)
            else:
                self._print(message)

    def step(self, phase: str, done: int, total: int, best: str = "") -> None:
        """`done` of `total` units of `phase` finished; `best` is the best result so far."""
        self._started.setdefault(phase, time.monotonic())
        if self.verbose:
            if done == total or done % max(1, total // 20) == 0:
                self._print(f"{phase}: {done}/{total} {best}".rstrip())
            return
        if not self.live:
            return
        with self._lock:
            bar = self._bars.get(phase)
            if bar is None:
                from tqdm import tqdm

                bar = self._bars[phase] = tqdm(
                    total=total,
                    desc=phase,
                    file=self.stream,
                    leave=False,
                    dynamic_ncols=True,
                    bar_format="{desc}: {n}/{total} {bar} {elapsed}<{remaining} {postfix}",
                )
            bar.total = total
            bar.n = done
            bar.set_postfix_str(best, refresh=False)
            bar.refresh()

    def finish(self, phase: str, summary: str) -> float:
        """End `phase`: its bar goes, one line with its summary and wall time stays. Returns
        the phase's wall time (from its first step or its `start`)."""
        wall_s = time.monotonic() - self._started.pop(phase, time.monotonic())
        with self._lock:
            bar = self._bars.pop(phase, None)
            if bar is not None:
                bar.close()
        self.line(f"{phase}: {summary} ({wall_s:.0f} s)")
        return wall_s

    def start(self, phase: str) -> None:
        self._started[phase] = time.monotonic()

    def _print(self, message: str) -> None:
        print(message, file=self.stream, flush=True)


@contextlib.contextmanager
def details_to(path: Path, progress: Progress) -> Iterator[None]:
    """Send file descriptors 1 and 2 (and so every library and child process) to `path` for
    the block, and `progress` to the console they pointed at. With --verbose, nothing moves."""
    if progress.verbose:
        yield
        return
    for stream in (sys.stdout, sys.stderr, progress.stream):
        stream.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    console_fd = os.dup(progress.stream.fileno()) if _has_fd(progress.stream) else None
    log = open_in_place(path, os.O_WRONLY | os.O_APPEND)  # never through a link
    previous = progress.stream
    if console_fd is not None:
        progress.stream = os.fdopen(console_fd, "w", buffering=1)
    try:
        for fd in (1, 2):
            os.dup2(log, fd)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError):  # a full disk: the console must come back
                stream.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(log)
        if console_fd is not None:
            progress.stream.close()
        progress.stream = previous


def _has_fd(stream) -> bool:
    try:
        stream.fileno()
        return True
    except (AttributeError, OSError, ValueError):
        return False
