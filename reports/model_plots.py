"""PNG plots of a model run: the pattern kernels' times per rule list (and tuned), launches
included (kernels.png), and the arms end to end (arms.png, as the study's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pool_fusion_tuning.runfolder.model_records import ModelReport
from pool_fusion_tuning.runfolder.store import Run

from .model_names import DEFAULT
from .plots import arms_plot, plt, save_figure

SHOWN = 15


def write_all(run: Run, report: ModelReport) -> None:
    if report["arms"] and any(a["median_us"] is not None for a in report["arms"].values()):
        arms_plot(run, report)
    _pattern_kernels(run, report)


def _pattern_kernels(run: Run, report: ModelReport) -> None:
    """Per pattern kernel, launches x time under each list (ms per call of the model)."""
    kernels = [
        k for k in report["kernels"] if k["pattern"] and k["kernel_us"].get(DEFAULT) is not None
    ]
    if not kernels:
        return
    kernels.sort(key=lambda k: -k["calls"] * k["kernel_us"][DEFAULT])
    kernels = kernels[:SHOWN]
    keys = list(report["settings"]["rule_lists"])
    if any(k["kernel_us"].get("tuned") for k in kernels):
        keys.append("tuned")
    x = np.arange(len(kernels))
    width = 0.8 / len(keys)
    figure, axis = plt.subplots(figsize=(max(6, 0.6 * len(kernels) + 2), 3.8))
    for i, key in enumerate(keys):
        values = [
            k["calls"] * k["kernel_us"][key] / 1e3 if k["kernel_us"].get(key) else np.nan
            for k in kernels
        ]
        axis.bar(x + (i - (len(keys) - 1) / 2) * width, values, width, label=key)
    axis.set_xticks(x, [k["name"] for k in kernels], rotation=40, ha="right", fontsize=6)
    axis.set_yscale("log")
    axis.set_ylabel("launches x kernel time, ms per call")
    axis.legend(fontsize=7)
    axis.set_title(f"{report['model']['spec']} on {report['device']}: pattern kernels")
    figure.tight_layout()
    save_figure(figure, run.path / "kernels.png")


def models_plot(summary: dict, path: Path) -> None:
    """Per model and candidate list: its end-to-end ratio to the default list (GPU time, else
    the own call path) with its interval; 1 is no change."""
    bars = []
    for row in summary["rows"]:
        for rules, found in row["recovered"].items():
            ratio = found["ratios"].get("gpu_queued") or found["ratios"].get("call_path")
            if ratio:
                bars.append((f"{row['model']} {rules}", ratio, found["control"]))
    if not bars:
        return
    figure, axis = plt.subplots(figsize=(max(6, 0.55 * len(bars) + 2), 3.8))
    for i, (_, ratio, control) in enumerate(bars):
        low = ratio["ratio"] - (ratio["low"] if ratio["low"] is not None else ratio["ratio"])
        high = (ratio["high"] if ratio["high"] is not None else ratio["ratio"]) - ratio["ratio"]
        axis.errorbar(
            i,
            ratio["ratio"],
            yerr=[[low], [high]],
            fmt="s" if control else "o",
            color="gray" if control else "tab:orange",
            capsize=3,
        )
    axis.axhline(1, color="black", linewidth=0.8)
    axis.set_xticks(range(len(bars)), [b[0] for b in bars], rotation=40, ha="right", fontsize=6)
    axis.set_ylabel("list / default, end to end (95 % CI)")
    axis.set_title(f"{summary.get('device')}: candidate lists against the default (grey: controls)")
    figure.tight_layout()
    save_figure(figure, path)
