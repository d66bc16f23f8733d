"""Turn a run folder's stored measurements into the report's data (report.json)."""

from __future__ import annotations

import math

import numpy as np

from baselines.case import Case
from tuning.stats import combined_median, ratio_interval, summarize
from tuning.store import Run, read_json

DEFAULT_ORDER = ("off", "partial", "on", "serial")
# (numerator, denominator) pairs the issue thread quotes, when both arms were timed.
ISSUE_RATIOS = (("on", "off"), ("on", "partial"), ("serial", "on"))
FLOAT_BYTES = 4
FUSED_PREFIX = "fused_pool2d"


def summarize_run(run: Run) -> dict:
    meta = run.meta
    trials = run.trials()
    _require_every_trial(run, meta, len(trials))
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
        "tuners": _tuners(run, meta),
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
    _add_fused_kernel_table(report)
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
    return read_json(run.path / "environment.json")  # missing or damaged: said, not dropped


def _require_every_trial(run: Run, meta: dict, found: int) -> None:
    """A report is of the whole run: a trial file missing is named, never silently dropped."""
    for index in range(meta["protocol"].get("trials", found)):
        if not run.trial_path(index).exists():
            read_json(run.trial_path(index))  # says which, and what to do


def _tuners(run: Run, meta: dict) -> dict:
    tuners = {}
    for path in sorted((run.path / "tuners").glob("*/summary.json")):
        tuners[path.parent.name] = read_json(path)
    for name in meta["tuners"]:  # every tuner gave a summary or failed with a reason
        if name not in tuners and name not in meta.get("tuner_failures", {}):
            read_json(run.path / "tuners" / name / "summary.json")
    return tuners


def fused_kernel_bytes(case: dict) -> int:
    """The fewest bytes the fused pool kernel must move: its input once, its output once."""
    shape = Case.from_dict(case)
    return FLOAT_BYTES * (math.prod(shape.pool_input_shape) + math.prod(shape.pool_shape))


# Which tuner figure is the kernel-level time of the fused kernel in each arm.
KERNEL_TIME_SOURCES = {"on": ("optuna", "default_kernel_us"), "fixed": ("optuna", "fixed_kernel_us"),
                       "serial": ("optuna", "serial_kernel_us"),
                       "optuna": ("optuna", "best_kernel_us"),
                       "metaschedule": ("metaschedule", "best_kernel_us")}


def _add_fused_kernel_table(report: dict) -> None:
    """Per arm with a fused pool kernel: its launch, resources, kernel-level time and GB/s."""
    bytes_moved = fused_kernel_bytes(report["case"])
    report["fused_kernel_bytes"] = bytes_moved
    rows = []
    for name, arm in report["arms"].items():
        kernel = next((k for k in arm["kernels"] if k["name"].startswith(FUSED_PREFIX)), None)
        if kernel is None:
            continue
        tuner, field = KERNEL_TIME_SOURCES.get(name, (None, None))
        kernel_us = report["tuners"].get(tuner, {}).get(field)
        rows.append({"arm": name, **kernel, "kernel_us": kernel_us,
                     "gbps": bytes_moved / (kernel_us * 1e-6) / 1e9 if kernel_us else None})
    report["fused_kernel"] = rows
