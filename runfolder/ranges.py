"""The range of every number that defines a run, one rule for the command line and the stored run.

`tune` refuses `--processes 0` or `--repeat -5`; a run.json from elsewhere may hold them all the
same, and read back they would time nothing and report every arm wrong. So the command line
(`tuning/cli/options.py`) and the type of run.json (`records.py`) check the same table here.
Inclusive ranges: large enough for any real study, small enough that nothing overflows or waits
for ever. Seeds feed NumPy's generators (0 <= seed < 2**32, workers add their index).
"""

from __future__ import annotations

import math

# The options of `tune` (and `tune sweep`, `tune worker`, `tune model`), by their argparse names.
RANGES: dict[str, tuple[int, int]] = {
    "budget": (0, 1_000_000),
    "trials": (1, 1000),
    "blocks": (1, 100_000),
    "number": (1, 1_000_000),
    "repeat": (1, 100_000),
    "min_repeat_ms": (0, 600_000),
    "warmup_s": (0, 3600),
    "seed": (0, 2**31 - 1),
    "workers": (1, 1024),
    # `tune model`'s own: a network's batch and input size, kernels tuned
    "batch": (1, 4096),
    "size": (1, 16384),
    "tune_top": (0, 1000),
    # `--time-budget` of --tune-top, seconds of tuning wall time over all commands (115 days)
    "time_budget": (1, 10_000_000),
}
# Fields of the stored protocol that no option sets (the harness's own settings).
STORED_RANGES: dict[str, tuple[int, int]] = {
    "checks": (1, 1000),
    "warmup_calls": (0, 1_000_000),
    "queued_calls": (1, 1_000_000),
}
# A time a run records, in microseconds (one call, one kernel launch): at most 1000 s, beyond
# anything this tool times, and far below where summing a run's samples could overflow.
TIME_US = (0, 1e9)
# Wall times of phases, in seconds (31 years).
WALL_S = (0, 1e9)


def out_of_range(value: float, low: float, high: float) -> bool:
    return not math.isfinite(value) or not low <= value <= high
