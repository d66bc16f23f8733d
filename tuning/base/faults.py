"""Fault injection for the fault tests: a kill at an exact point of a run.

`POOL_TUNING_KILL_AFTER_WRITE=k` SIGKILLs the process right after its k-th storage write of a
measurement (the record, then the `tell`, of each measured trial), so that a test can put a
kill after every such write in turn. `POOL_TUNING_INTERRUPT_AFTER_WRITE=k` sends SIGINT to the
process's group there instead, as Ctrl-C in a terminal does: an interrupt mid-search at an exact
point, not a race with the search's end. Unset, each costs one dictionary lookup per write.
"""

from __future__ import annotations

import os
import signal

KILL_AFTER_WRITE = "POOL_TUNING_KILL_AFTER_WRITE"
INTERRUPT_AFTER_WRITE = "POOL_TUNING_INTERRUPT_AFTER_WRITE"

_writes = 0


def measurement_written() -> None:
    global _writes
    _writes += 1
    if os.environ.get(KILL_AFTER_WRITE) == str(_writes):
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(INTERRUPT_AFTER_WRITE) == str(_writes):
        os.killpg(os.getpgrp(), signal.SIGINT)
