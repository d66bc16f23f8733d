"""What a tuner's summary says about where its time went (`time_spent`): each total's name and
what it is. Part of the run folder's contract: the tuners write these (`candidates.time_book`),
the report reads them without TVM."""

from __future__ import annotations

# Each total a summary's `time_spent` may hold, and what it is (the report prints these).
SPENT = {
    "build_cpu_s": "building: CPU seconds of the builder processes, their compiler included",
    "build_wall_s": "building: seconds each build took in its builder, summed",
    "builds": "candidates built",
    "builder_start_cpu_s": "builder processes starting: CPU seconds (imports)",
    "builder_starts": "builder processes started",
    "device_s": "on the device: checking and timing candidates, in turn",
    "device_wait_s": "waiting for the device's turn",
    "measured": "candidates measured on the device (the others reused a measurement)",
    "runner_start_s": "starting measuring processes",
    "ask_s": "asking the sampler (Optuna's ask, with the storage writes it makes)",
    "asks": "asks",
    "storage_s": "storage writes (records, tells, attributes)",
    "read_s": "reading the study (measured points, best so far)",
    "wait_s": "waiting for candidates to be built or measured",
    "search_s": (
        "MetaSchedule's own work: search, cost model, database (derived: its wall time less the "
        "builder's and the callbacks')"
    ),
}


def added(earlier: dict | None, now: dict) -> dict:
    """`now`'s totals with those a summary written before holds (a finished run resumed: the
    sessions before this one), so that a resume that measures nothing keeps every total."""
    merged = dict(earlier or {})
    for name, amount in now.items():
        merged[name] = merged.get(name, 0) + amount
    return merged
