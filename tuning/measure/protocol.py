"""Timing settings: the end-to-end harness's `Protocol` and the tuners' `KernelProtocol`."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Timing:
    """What both time: `repeat` samples of `number` calls each, a sample at least `min_repeat_ms`
    long. (`checks`, shared too, stays in each: a base field would move it in the stored
    protocol's order.)"""

    number: int
    repeat: int
    min_repeat_ms: int


@dataclass(frozen=True)
class Protocol(Timing):
    """Timing settings. The issue's full protocol is blocks=40, warmup_s=2, trials=5.

    `repeat` samples per arm, figure and block, each at least `min_repeat_ms` long. The defaults
    (3 samples of 5 ms) keep the comparison of the default run's 13 arms in 26 blocks and 3
    trials near a minute and a half on an H200: the intervals come from the spread between
    blocks and processes, which longer samples do not shrink (`--repeat 5 --min-repeat-ms 25` is
    the earlier, longer protocol). `blocks` None: whole cycles of the balanced order, at least 6.
    `queued_calls`: calls queued behind the sleep per GPU-time sample (enough that the events'
    resolution is a small share of a sample)."""

    number: int = 10
    repeat: int = 3
    min_repeat_ms: int = 5
    warmup_calls: int = 75
    warmup_s: float = 0.25
    blocks: int | None = None
    trials: int = 3
    checks: int = 3
    queued_calls: int = 50

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class KernelProtocol(Timing):
    """Kernel-level timing: `number` launches per repeat, at least `min_repeat_ms` each."""

    number: int = 20
    repeat: int = 5
    min_repeat_ms: int = 10
    checks: int = 2
    time_limit_s: float = 60.0
