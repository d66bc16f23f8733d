"""What the pieces that plug in have in common, written down as `typing.Protocol` classes.

A schedule replaces the fused pool function (`PoolSchedule`, a tuned MetaSchedule module, the
backend's rules as a candidate); a timed arm is anything the harness checks and times in its
blocks (a TVM arm in the VM, a captured one, a PyTorch peer).
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np
import tvm

# Each call takes `repeat` samples and returns them (us per call of the timed function).
Sampler = Callable[[], list[float]]
# A graph's input: one array, or one per argument (a real network's).
Input = np.ndarray | tuple[np.ndarray, ...]


class Schedule(Protocol):
    """Picklable, so that builder and trial processes can take it."""

    def apply(self, func: tvm.tirx.PrimFunc, target: tvm.target.Target) -> tvm.tirx.PrimFunc:
        """The scheduled PrimFunc that replaces `func`."""

    def to_dict(self) -> dict:
        """How the run folder records it."""


class TimedArm(Protocol):
    def outputs(self, x: Input) -> list[np.ndarray]:
        """The graph's outputs for input `x`, on the host."""

    def call(self) -> None:
        """One call on the input last given, queued on the device."""

    def sync(self) -> None:
        """Wait for the calls queued."""

    def timer(self, x: Input, protocol) -> Sampler:
        """Calls through the arm's own call path; each call returns `repeat` samples (us)."""

    def python_timer(self, x: Input, protocol) -> Sampler:
        """Calls as a Python user makes them; each call returns `repeat` samples (us)."""
