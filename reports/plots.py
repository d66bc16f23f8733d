"""PNG plots of a run: arm latencies with error bars, tuners' best-so-far, parameter importances."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

from pool_fusion_tuning.runfolder.model_records import ModelReport
from pool_fusion_tuning.runfolder.records import Sweep
from pool_fusion_tuning.runfolder.report_records import Report

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pool_fusion_tuning.runfolder.records import TunerTrials  # noqa: E402
from pool_fusion_tuning.runfolder.store import Run, read_record, write_bytes  # noqa: E402

from .sweep_arms import sweep_tuners, tuned_against  # noqa: E402


def write_all(run: Run, report: Report) -> None:
    arms_plot(run, report)
    _best_so_far(run, report)
    _importances(run, report)


def _save(figure: Any, run: Run, name: str) -> None:
    figure.tight_layout()
    save_figure(figure, run.path / name)


def save_figure(figure: Any, path: Path) -> None:
    """Through the run folder's atomic write: a link planted at `path` is replaced, not
    followed."""
    import io

    image = io.BytesIO()
    figure.savefig(image, dpi=90, format="png")
    plt.close(figure)
    write_bytes(path, image.getvalue())


def arms_plot(run: Run, report: Report | ModelReport) -> None:
    """Per arm, one bar per figure (median, IQR), on a log scale: the arms span 5 to 250 us."""
    timed = [(name, arm) for name, arm in report["arms"].items() if arm["median_us"] is not None]
    if not timed:
        return
    figures = report["figures"]
    figure, axis = plt.subplots(figsize=(max(6, 0.9 * len(timed)), 3.5))
    width = 0.8 / len(figures)
    for i, (key, label) in enumerate(figures.items()):
        stats = [arm["figures"].get(key) for _, arm in timed]
        medians = [s["median_us"] if s else float("nan") for s in stats]
        errors = [
            [s["median_us"] - s["q1_us"] if s else 0 for s in stats],
            [s["q3_us"] - s["median_us"] if s else 0 for s in stats],
        ]
        axis.bar(
            [j + (i - (len(figures) - 1) / 2) * width for j in range(len(timed))],
            medians,
            width,
            yerr=errors,
            capsize=3,
            label=label,
        )
    axis.set_xticks(
        range(len(timed)), [name for name, _ in timed], rotation=30, ha="right", fontsize=7
    )
    axis.set_yscale("log")
    axis.set_ylabel("us per call (median, IQR)")
    axis.legend(fontsize=7)
    axis.set_title(f"{report['device']}: whole graph per arm")
    _save(figure, run, "arms.png")


def _best_so_far(run: Run, report: Report) -> None:
    curves = {}
    for name in report["tuners"]:
        path = run.path / "tuners" / name / "trials.json"
        if path.exists():
            curves[name] = [t.get("kernel_us") for t in read_record(path, TunerTrials)]
    if not curves:
        return
    figure, axis = plt.subplots(figsize=(6, 3.5))
    for name, times in curves.items():
        best, line = float("inf"), []
        for value in times:
            best = min(best, value) if value is not None else best
            line.append(best if best != float("inf") else math.nan)  # a gap before the first
        axis.plot(range(1, len(line) + 1), line, label=name)
    tuners = report["tuners"].values()
    schedules = (
        ("default_kernel_us", "--", [t.get("default_kernel_us") for t in tuners]),
        ("serial_kernel_us", ":", [t.get("serial_kernel_us") for t in tuners]),
    )
    for key, style, values in schedules:
        value = next((v for v in values if v), None)
        if value:
            axis.axhline(
                value, linestyle=style, color="gray", label=key.replace("_kernel_us", " schedule")
            )
    axis.set_yscale("log")
    axis.set_xlabel("trial")
    axis.set_ylabel("best fused-kernel time so far, us")
    axis.legend(fontsize=7)
    _save(figure, run, "best_so_far.png")


def _importances(run: Run, report: Report) -> None:
    # The first tuner whose summary gives its parameters' importances.
    found = [(n, i) for n, t in report["tuners"].items() if (i := t.get("importances"))]
    if not found:
        return
    name, importances = found[0]
    figure, axis = plt.subplots(figsize=(5, 3))
    names = list(importances)
    axis.barh(names, [importances[n] for n in names], color="tab:green")
    axis.set_xlabel("importance (fANOVA)")
    axis.set_title(f"{name} parameter importances")
    _save(figure, run, "importances.png")


def sweep_plot(sweep: Sweep, path: Path) -> None:
    """Per Case: the fused kernel's time under each schedule, and the whole graph per arm."""
    import numpy as np

    cases = sweep["cases"]
    x = np.arange(len(cases))
    # One colour per schedule in both panels (the default rule's kernel is ON's).
    colours = {
        "default": "tab:blue",
        "on": "tab:blue",
        "fixed": "tab:orange",
        "serial": "tab:green",
        "partial": "tab:purple",
        "one-kernel": "tab:brown",
    }
    tuned = tuned_against(sweep_tuners(sweep), "fixed")  # the tuners of the pool kernel
    colours.update(zip(tuned, ("tab:red", "tab:pink", "tab:olive", "tab:cyan", "tab:gray")))
    figure, (kernel_axis, e2e_axis) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for axis, field, keys in (
        (kernel_axis, "kernel_us", ("default", "fixed", "serial", *tuned)),
        (e2e_axis, "end_to_end_us", ("on", "partial", "fixed", *tuned, "one-kernel")),
    ):
        width = 0.8 / len(keys)
        for i, key in enumerate(keys):
            values = [c[field][key] or np.nan for c in cases]
            axis.bar(
                x + (i - (len(keys) - 1) / 2) * width,
                values,
                width,
                label=key,
                color=colours.get(key),
            )
        axis.set_yscale("log")
        axis.legend(fontsize=7, ncol=len(keys))
    kernel_axis.set_ylabel("fused kernel, us")
    e2e_axis.set_ylabel("whole graph, us")
    e2e_axis.set_xticks(x, [c["case"] for c in cases], rotation=30, ha="right", fontsize=7)
    kernel_axis.set_title(f"{sweep['device']}: default rule vs WindowReduction (fixed) vs tuned")
    figure.tight_layout()
    save_figure(figure, path)
