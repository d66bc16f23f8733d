"""report.md's tuners: what --budget counted for each, what each found, and how close the
samplers came to the exhaustive optimum."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.report_records import Report

from .cells import table, three, us
from .escape import code, md

# What one unit of --budget was to each tuner in runs written before the tuners stored their
# `budget_counts` (2026-12-01); a tuner declares it in its spec (tuning/tuners/).
WORKERS = "{workers}"
_EARLIER_BUDGET_COUNTS = {
    "optuna": "trials of one Optuna study{workers}, failed candidates included (fewer where the "
    "space is spent)",
    "optuna-one-kernel": "the same, for the one kernel of the whole graph",
    "metaschedule": "candidates of its two runs together: `ms-default` half of it (rounded "
    "down), `ms-space` the rest",
}


def _budget_counts(declared: str, workers: int) -> str:
    """What a tuner's budget counted, its workers filled in (not by `str.format`: the text is
    read from the run folder); a text no tune tuner declares is shown as text."""
    shared = f", shared by its {workers} workers" if workers > 1 else ""
    counts = declared.replace(WORKERS, shared)
    known = {t.replace(WORKERS, s) for t in _EARLIER_BUDGET_COUNTS.values() for s in ("", shared)}
    return counts if counts in known else md(counts)


def tuners_section(report: Report) -> list[str]:
    if not report["tuners"]:
        return []
    return [
        "",
        f"## Tuners ({_kernels(report)}, kernel-level timing)",
        "",
        *budget_text(report),
        *tuners_table(report),
        *sampler_table(report),
    ]


def _kernels(report: Report) -> str:
    """Which kernels the tuners searched: the fused one, or also the whole graph's (whose best
    kernel time is of other work than the fused pool kernel's)."""
    arms = report["arms"]
    whole = [code(t) for t in report["tuners"] if arms.get(t, {}).get("whole_graph")]
    if not whole:
        return "the fused kernel"
    return f"the fused pool kernel; {', '.join(whole)}: the whole graph's one kernel"


def budget_text(report: Report) -> list[str]:
    """Per tuner: what `--budget` counted, and how many candidates it measured (run folder)."""
    if report.get("budget") is None:  # a run recorded before the report read it
        return []
    workers = report.get("workers", 1)
    parts = []
    for name, tuner in _tuners_of_the_run(report).items():
        declared = tuner.get("budget_counts", _EARLIER_BUDGET_COUNTS.get(name, "candidates"))
        counts = _budget_counts(str(declared), workers)
        runs = tuner.get("runs", {})
        measured = (
            " and ".join(f"{run['trials']} ({code(run_name)})" for run_name, run in runs.items())
            if runs
            else tuner.get("trials")
        )
        parts.append(f"{code(name)}, {counts}: {measured} measured")
    return [f"`--budget {report['budget']}` counted, per tuner: " + "; ".join(parts) + ".", ""]


def _tuners_of_the_run(report: Report) -> dict:
    """The tuners the run named, without the runs a tuner made of its own (`ms-default`)."""
    inner = {name for tuner in report["tuners"].values() for name in tuner.get("runs", {})}
    return {name: tuner for name, tuner in report["tuners"].items() if name not in inner}


def tuners_table(report: Report) -> list[str]:
    """One row per tuner: trials, valid ones, failures by reason, the best kernel time and where
    it was found, wall time; the kernel timers used above it."""
    rows = []
    for name, tuner in report["tuners"].items():
        failed = ", ".join(f"{md(k)}: {v}" for k, v in tuner.get("failed_by_reason", {}).items())
        rows.append(
            [
                code(name),
                tuner.get("trials"),
                tuner.get("valid"),
                failed or "0",
                us(tuner.get("best_kernel_us")),
                tuner.get("best_trial"),
                three(tuner.get("wall_s")),
            ]
        )
    timers = sorted({timer for t in report["tuners"].values() if (timer := t.get("timer"))})
    note = [f"Kernel timer: {', '.join(timers)}.", ""] if timers else []
    return note + table(
        [
            "tuner",
            "trials",
            "valid",
            "failed by reason",
            "best kernel us",
            "found at trial",
            "wall s",
        ],
        rows,
    )


def sampler_table(report: Report) -> list[str]:
    """How close each sampler came to the exhaustive optimum (replayed on its measurements)."""
    # The tuner that replayed its samplers (its summary says so; none names it here).
    found = [t for t in report["tuners"].values() if t.get("sampler_replay")]
    if not found:
        return []
    tuner = found[0]
    replays = tuner["sampler_replay"]
    rows = []
    for name, result in replays.items():
        for run in result["runs"]:
            rows.append(
                [
                    name,
                    run["seed"],
                    us(run["best_kernel_us"]),
                    f"{run['gap']:.1%}",
                    run["trials_to_within_10pct"],
                ]
            )
    return [
        "",
        f"Exhaustive optimum of the space: {us(tuner['exhaustive_best_kernel_us'])} us "
        f"over {tuner['exhaustive_points']} valid points. Samplers replayed on those "
        f"measurements, {next(iter(replays.values()))['trials']} trials each:",
        "",
    ] + table(["sampler", "seed", "best us", "gap to optimum", "trials to within 10 %"], rows)
