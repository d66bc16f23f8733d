"""report.md's account of where the run's time went, beyond each phase's wall time: for each
tuner, what its seconds were spent on (`time_spent` in its summary, `runfolder.spent`),
and for each trial of the comparison, its process's start, its loads, checks, warm-up and timing
(its record's `wall_s`, `tuning.measure.harness`). Runs recorded before these were kept render
without them."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.report_records import Report
from pool_fusion_tuning.runfolder.spent import SPENT

from .cells import table
from .escape import code

# The comparison's parts of a trial, in the order they happen (a trial's `wall_s` keys).
TRIAL_PARTS = {
    "startup_s": "process start: spawned, TVM imported",
    "compiler_import_s": "torch.compile's imports, while the process waits",
    "waited_s": "waiting for its trial (beside the tuners or the trials before)",
    "load_s": "loading the arms' libraries",
    "peer_s": "making the PyTorch peers (torch.compile's wrappers)",
    "check_s": "checks against the NumPy reference (first calls, compiles)",
    "warmup_s": "warm-up",
    "timing_s": "timing: every arm's figures in every block",
}


def tuners_time(report: Report) -> list[str]:
    """Per tuner (MetaSchedule's two runs apart), seconds and counts by what they were for."""
    spent = {
        name: {"wall_s": summary.get("wall_s"), **summary["time_spent"]}
        for name, summary in (report.get("tuners") or {}).items()
        if summary.get("time_spent") and "runs" not in summary  # the runs hold it
    }
    if not spent:
        return []
    names = list(spent)
    keys = ["wall_s", *(k for k in SPENT if any(k in found for found in spent.values()))]
    labels = {"wall_s": "wall time", **SPENT}
    rows = [[labels[k], *(_amount(k, spent[n].get(k)) for n in names)] for k in keys]
    return [
        "",
        "Where each tuner's time went (seconds, or a count; work done in parallel, builds on "
        "many cores, sums past the wall time; the session that finished the tuner):",
        "",
        *table(["", *(code(n) for n in names)], rows),
    ]


def trials_time(report: Report) -> list[str]:
    """Per trial of the comparison, seconds by part, and the timing by arm over all trials."""
    walls = report.get("trial_wall_s") or []
    if not walls:
        return []
    keys = [k for k in TRIAL_PARTS if any(k in wall for wall in walls)]
    rows = [[TRIAL_PARTS[k], *(_seconds(_total(wall.get(k))) for wall in walls)] for k in keys]
    by_arm: dict[str, float] = {}
    for wall in walls:
        for name, seconds in (wall.get("timing_by_arm_s") or {}).items():
            by_arm[name] = by_arm.get(name, 0.0) + seconds
    lines = [
        "",
        "Where each trial's time went (seconds; a trial's process starts with the run and "
        "waits for its trial):",
        "",
        *table(["", *(f"trial {i}" for i in range(len(walls)))], rows),
    ]
    if by_arm:
        ranked = sorted(by_arm.items(), key=lambda item: -item[1])
        lines += [
            "",
            "Timing by arm, all its figures, summed over trials: "
            + ", ".join(f"{code(name)} {seconds:.1f} s" for name, seconds in ranked)
            + ".",
        ]
    return lines


def _total(value: float | dict[str, float] | None) -> float | None:
    """A part's seconds: a number, or per arm (loads, peers) their sum."""
    if isinstance(value, dict):
        return sum(value.values())
    return value


def _seconds(value: float | None) -> str | None:
    return None if value is None else f"{value:.1f}"


def _amount(key: str, value: float | None) -> str | None:
    if value is None:
        return None
    return f"{value:.1f}" if key.endswith("_s") else f"{value:.0f}"
