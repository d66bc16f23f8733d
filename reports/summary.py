"""Turn a run folder's stored measurements into the report's data (report.json)."""

from __future__ import annotations

import math

import numpy as np

from baselines.case import Case
from tuning.stats import combined_median, ratio_interval, summarize
from tuning.store import Run, read_json

DEFAULT_ORDER = ("off", "partial", "on", "serial")
# (numerator, denominator) pairs the issue threads quote, when both arms were timed.
ISSUE_RATIOS = (("on", "off"), ("on", "partial"), ("serial", "on"), ("one-kernel", "fixed"),
                ("one-kernel+capture", "fixed+capture"))
FLOAT_BYTES = 4


def summarize_run(run: Run) -> dict:
    meta = run.meta
    trials = run.trials()
    arm_names = [arm["name"] for arm in meta["arms"]]
    arms = {name: _arm_summary(name, trials) for name in arm_names}
    timed = [name for name in arm_names if arms[name].get("median_us") is not None]
    ratios = {}
    for top, bottom in _ratio_pairs(timed):
        ratios[f"{top}/{bottom}"] = ratio_interval(
            _per_trial(trials, top), _per_trial(trials, bottom))
    report = {
        "command": meta.get("command"),
        "case": meta["case"],
        "target": meta["identity"]["target"],
        "device": meta["identity"]["device"],
        "protocol": meta["protocol"],
        "environment": _environment(run),
        "trials": len(trials),
        "arms": arms,
        "ratios": ratios,
        "tuners": _tuners(run),
        "wall_s": meta.get("wall_s"),
        "tuner_failures": meta.get("tuner_failures", {}),
        "cuda_graph_launches": trials[0].get("cuda_graph_launches", {}) if trials else {},
    }
    if timed:
        best = min(timed, key=lambda name: arms[name]["median_us"])
        report["best_arm"] = best
        for name in timed:
            arms[name]["ratio_to_on"] = _ratio(arms, name, "on")
            arms[name]["ratio_to_best"] = _ratio(arms, name, best)
    _add_fused_kernel_table(report, {a["name"] for a in meta["arms"] if a.get("whole_graph")})
    return report


def _per_trial(trials: list[dict], name: str) -> list[list[float]]:
    return [t["samples_us"][name] for t in trials if t["samples_us"].get(name)]


def _arm_summary(name: str, trials: list[dict]) -> dict:
    checks = [t["checks"][name] for t in trials if name in t["checks"]]
    per_trial = _per_trial(trials, name)
    errors = [c["max_abs_err"] for c in checks if c.get("max_abs_err") is not None]
    summary = {
        "correct": bool(checks) and all(c["correct"] for c in checks),
        "max_abs_err": max(errors) if errors else None,
        "kernels": next((t["kernels"][name] for t in trials if name in t.get("kernels", {})), []),
        "median_us": None,
    }
    queued = [t["queued_gpu_us"][name] for t in trials if name in t.get("queued_gpu_us", {})]
    summary["queued_gpu_us"] = combined_median(queued) if queued else None
    if per_trial:
        pooled = summarize([s for samples in per_trial for s in samples])
        summary.update({
            "median_us": combined_median(per_trial),
            "trial_medians_us": [float(np.median(s)) for s in per_trial],
            "iqr_us": pooled["iqr_us"], "q1_us": pooled["q1_us"], "q3_us": pooled["q3_us"],
            "cv": float(np.median([summarize(s)["cv"] for s in per_trial])),
            "trial_cvs": [summarize(s)["cv"] for s in per_trial],
            "samples": pooled["samples"],
        })
    return summary


def _ratio_pairs(timed: list[str]):
    pairs = [pair for pair in ISSUE_RATIOS if pair[0] in timed and pair[1] in timed]
    for name in timed:
        if name not in DEFAULT_ORDER and "on" in timed:
            pairs.append((name, "on"))
    return pairs


def _ratio(arms: dict, top: str, bottom: str):
    if arms.get(bottom, {}).get("median_us") is None:
        return None
    return arms[top]["median_us"] / arms[bottom]["median_us"]


def _environment(run: Run) -> dict:
    path = run.path / "environment.json"
    return read_json(path) if path.exists() else {}


def _tuners(run: Run) -> dict:
    tuners = {}
    for path in sorted((run.path / "tuners").glob("*/summary.json")):
        tuners[path.parent.name] = read_json(path)
    return tuners


def fused_kernel_bytes(case: dict, whole: bool = False) -> int:
    """The fewest bytes the fused pool kernel must move: its input once, its output once; for
    the one kernel of the whole graph, the graph's input once and each distinct output once."""
    shape = Case.from_dict(case)
    if whole:
        outputs = 2 if shape.shared_output and shape.tail > 1 else 1
        return FLOAT_BYTES * (math.prod(shape.input_shape) + outputs * math.prod(shape.pool_shape))
    return FLOAT_BYTES * (math.prod(shape.pool_input_shape) + math.prod(shape.pool_shape))


# Which tuner figure is the kernel-level time of the fused kernel in each arm.
KERNEL_TIME_SOURCES = {"on": ("optuna", "default_kernel_us"), "fixed": ("optuna", "fixed_kernel_us"),
                       "serial": ("optuna", "serial_kernel_us"),
                       "optuna": ("optuna", "best_kernel_us"),
                       "metaschedule": ("metaschedule", "best_kernel_us"),
                       "one-kernel": ("optuna-one-kernel", "fixed_kernel_us"),
                       "optuna-one-kernel": ("optuna-one-kernel", "best_kernel_us")}


def is_fused_pool_kernel(name: str) -> bool:
    """The kernel holding the pool: FuseOps' `fused_pool2d_...`, or the whole graph's."""
    return name.startswith("fused_") and "pool2d" in name


def _add_fused_kernel_table(report: dict, whole_arms: set) -> None:
    """Per arm with a fused pool kernel: its launch, resources, kernel-level time and GB/s."""
    report["fused_kernel_bytes"] = fused_kernel_bytes(report["case"])
    report["whole_kernel_bytes"] = fused_kernel_bytes(report["case"], whole=True)
    rows = []
    for name, arm in report["arms"].items():
        kernel = next((k for k in arm["kernels"] if is_fused_pool_kernel(k["name"])), None)
        if kernel is None:
            continue
        tuner, field = KERNEL_TIME_SOURCES.get(name, (None, None))
        kernel_us = report["tuners"].get(tuner, {}).get(field)
        moved = report["whole_kernel_bytes" if name in whole_arms else "fused_kernel_bytes"]
        rows.append({"arm": name, **kernel, "kernel_us": kernel_us,
                     "whole_graph": name in whole_arms,
                     "gbps": moved / (kernel_us * 1e-6) / 1e9 if kernel_us else None})
    report["fused_kernel"] = rows
