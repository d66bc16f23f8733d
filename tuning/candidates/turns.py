"""A lock taken in the order it was asked for: the device's turns between the tuners.

`threading.Lock` lets the thread that just released it take it again at once, so a tuner that
has a batch of built candidates could keep the device while another tuner's candidates wait.
"""

from __future__ import annotations

import threading


class TurnLock:
    """Taken in turn, first asked first served; a context manager like `threading.Lock`."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._next_ticket = 0
        self._serving = 0
        self._abandoned: set[int] = set()  # tickets whose waiter was interrupted

    def __enter__(self) -> "TurnLock":
        with self._changed:
            ticket = self._next_ticket
            self._next_ticket += 1
            try:
                while ticket != self._serving:
                    self._changed.wait()
            except BaseException:  # Ctrl-C while waiting: the turn passes on, not stuck
                if ticket == self._serving:
                    self._pass_turn()
                else:
                    self._abandoned.add(ticket)
                raise
        return self

    def __exit__(self, *exc) -> None:
        with self._changed:
            self._pass_turn()

    def _pass_turn(self) -> None:
        self._serving += 1
        while self._serving in self._abandoned:
            self._abandoned.remove(self._serving)
            self._serving += 1
        self._changed.notify_all()
