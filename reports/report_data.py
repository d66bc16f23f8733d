"""Turn a run folder's stored measurements into the report's data (report.json)."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.runfolder.records import ProtocolRecord, RunMeta, Trial, TunerSummary
from pool_fusion_tuning.runfolder.report_records import Report
from pool_fusion_tuning.runfolder.store import Run, RunError, read_json, read_record

from .comparisons import ratio_pairs
from .samples import LABELS, has_samples, samples_by_figure
from .stats import coverage
from .stats.cpu_noise import within_cpu_noise
from .stats.medians import combined_median, summarize
from .stats.noise import noise_levels
from .stats.paired import CONFIDENCE, METHOD, ONE_TRIAL_METHOD, paired_ratio

FLOAT_BYTES = 4


def summarize_run(run: Run) -> Report:
    """report.json's data from a run folder: each arm's figures and correctness, the paired
    ratios with their method, the design, the tuners and kernel times. A missing trial file, or
    an arm no trial measured, is a `RunError` saying which: a report is of the whole run."""
    meta = run.meta
    trials = run.trials()
    require_every_trial(run, meta["protocol"].get("trials", 0), len(trials))
    arm_names = [arm["name"] for arm in meta["arms"]]
    _require_every_arm(run, arm_names, trials)
    peers = [arm["name"] for arm in meta["arms"] if arm.get("peer")]
    samples = samples_by_figure(trials, arm_names, meta["protocol"]["repeat"])
    arms = {name: arm_summary(name, trials, samples) for name in arm_names}
    timed = [name for name in arm_names if arms[name].get("median_us") is not None]
    tuners = _tuners(run, meta)
    pairs = ratio_pairs(timed, peers, held_against(tuners, meta["tuners"]))
    by_figure = {figure: paired_ratios(per_arm, pairs) for figure, per_arm in samples.items()}
    if meta["identity"]["target"] != "cuda":  # a smoke test: between-run noise is no finding
        by_figure = {
            figure: {pair: within_cpu_noise(r) for pair, r in ratios.items()}
            for figure, ratios in by_figure.items()
        }
    report: dict[str, Any] = {
        "command": meta.get("command"),
        "case": meta["case"],
        "target": meta["identity"]["target"],
        "device": meta["identity"]["device"],
        "protocol": meta["protocol"],
        "environment": _environment(run),
        "trials": len(trials),
        "arms": arms,
        "figures": {figure: LABELS[figure] for figure in samples},
        # The end-to-end figure through each arm's own call path, as earlier reports gave it.
        "ratios": by_figure.get("call_path", {}),
        "ratios_by_figure": by_figure,
        "ratio_method": ratio_method(trials, meta["protocol"]),
        "design": [{"trial": t["trial"], **t["design"]} for t in trials if "design" in t],
        "peers_not_measured": meta.get("peers_not_measured", {}),
        "peers_added": meta.get("peers_added", []),
        "tuners": tuners,
        # What --budget counted is said per tuner in the report (tuners_md.budget_text).
        "budget": meta.get("budget"),
        "workers": meta.get("options", {}).get("workers", 1),
        "wall_s": meta.get("wall_s"),
        "phase_wall_s": meta.get("phase_wall_s", {}),
        "tuner_failures": meta.get("tuner_failures", {}),
        "cuda_graph_launches": trials[0].get("cuda_graph_launches", {}) if trials else {},
    }
    before = [arm["rule_before"] for arm in meta["arms"] if "rule_before" in arm]
    if before:  # runs before 2026-12-01 put the rule before GeneralReduction and say nothing
        report["fixed_rule_before"] = before[0]
    masked = [arm["name"] for arm in meta["arms"] if arm.get("masked_loads")]
    if masked:  # runs before 2026-12-02 masked no arm's loads and say nothing
        report["masked_arms"] = masked
    if timed:
        best = min(timed, key=lambda name: arms[name]["median_us"])
        report["best_arm"] = best
        for name in timed:
            arms[name]["ratio_to_on"] = _ratio(arms, name, "on")
            arms[name]["ratio_to_best"] = _ratio(arms, name, best)
    whole_arms = {a["name"] for a in meta["arms"] if a.get("whole_graph")}
    times = kernel_times(report["tuners"])
    for name, arm in arms.items():
        arm["kernel_us"] = times.get(name)
        arm["whole_graph"] = name in whole_arms
    _add_fused_kernel_table(report)
    walls = [t.get("wall_s", {}) for t in trials]
    if any("timing_by_arm_s" in wall for wall in walls):  # runs that kept where it went
        report["trial_wall_s"] = walls
    return cast(Report, report)  # built key by key above, as report.json holds it


def paired_ratios(per_arm: dict, pairs: list) -> dict:
    ratios = {}
    for top, bottom in pairs:
        found = paired_ratio(per_arm[top], per_arm[bottom])
        if found is not None:
            ratios[f"{top}/{bottom}"] = found
    return ratios


def ratio_method(trials: list[Trial], protocol: ProtocolRecord) -> dict:
    """The interval's method (one trial's is over its blocks, as `paired_ratio` takes it), and its
    coverage simulated at this run's numbers."""
    if not trials:
        return {"method": METHOD, "confidence": CONFIDENCE}
    blocks = [t["design"]["blocks"] for t in trials if "design" in t] or [protocol["blocks"] or 1]
    checked = coverage.verify(len(trials), int(np.median(blocks)), protocol["repeat"])
    method = METHOD if len(trials) > 1 else ONE_TRIAL_METHOD
    return {"method": method, "confidence": CONFIDENCE, **checked}


def _figure_summary(per_trial: list) -> dict:
    timed = [[s for block in trial for s in block] for trial in per_trial]
    timed = [samples for samples in timed if samples]
    pooled = summarize([s for samples in timed for s in samples])
    return {
        "median_us": combined_median(timed),
        "trial_medians_us": [float(np.median(s)) for s in timed],
        "iqr_us": pooled["iqr_us"],
        "q1_us": pooled["q1_us"],
        "q3_us": pooled["q3_us"],
        "cv": float(np.median([summarize(s)["cv"] for s in timed])),
        "samples": pooled["samples"],
        "noise": noise_levels(per_trial),
    }


def arm_summary(name: str, trials: list[Trial], samples: dict) -> dict:
    """One arm across the trials: correctness, kernels, each figure's summary, and the call-path
    figure's under the top-level keys earlier reports used."""
    checks = [t["checks"][name] for t in trials if name in t["checks"]]
    errors = [e for c in checks if (e := c.get("max_abs_err")) is not None]
    figures = {
        figure: _figure_summary(per_arm[name])
        for figure, per_arm in samples.items()
        if has_samples(per_arm[name])
    }
    summary: dict = {
        "correct": bool(checks) and all(c["correct"] for c in checks),
        "max_abs_err": max(errors) if errors else None,
        "kernels": next((t["kernels"][name] for t in trials if name in t.get("kernels", {})), []),
        "figures": figures,
        "queued_gpu_us": figures.get("gpu_queued", {}).get("median_us"),
        "median_us": None,
    }
    if "call_path" in figures:  # the figure earlier reports gave, under the same keys
        summary.update(
            {
                key: figures["call_path"][key]
                for key in (
                    "median_us",
                    "trial_medians_us",
                    "iqr_us",
                    "q1_us",
                    "q3_us",
                    "cv",
                    "samples",
                )
            }
        )
    return summary


def _ratio(arms: dict, top: str, bottom: str) -> float | None:
    if arms.get(bottom, {}).get("median_us") is None:
        return None
    return arms[top]["median_us"] / arms[bottom]["median_us"]


def _environment(run: Run) -> dict:
    return read_json(run.path / "environment.json")  # missing or damaged: said, not dropped


def require_every_trial(run: Run, trials: int, found: int) -> None:
    """A missing trial file is named, never silently dropped (`trials`: the protocol's, else
    `found`)."""
    for index in range(trials or found):
        if not run.trial_path(index).exists():
            read_record(run.trial_path(index), Trial)  # says which, and what to do


def _require_every_arm(run: Run, arm_names: list[str], trials: list[Trial]) -> None:
    """Every trial checks every arm: an arm no trial holds was never measured, and is said, not
    reported as wrong or dropped."""
    found = {name for trial in trials for name in trial["checks"]}
    missing = [name for name in arm_names if trials and name not in found]
    if missing:
        raise RunError(
            f"{run.path / 'run.json'} names arm {missing[0]!r}, which no trial of the run "
            "measured; the run cannot be continued from it: start a new run with --out"
        )


def _tuners(run: Run, meta: RunMeta) -> dict[str, TunerSummary]:
    tuners = {}
    for path in sorted((run.path / "tuners").glob("*/summary.json")):
        tuners[path.parent.name] = read_record(path, TunerSummary)
    for name in meta["tuners"]:  # every tuner gave a summary or failed with a reason
        if name not in tuners and name not in meta.get("tuner_failures", {}):
            read_record(run.path / "tuners" / name / "summary.json", TunerSummary)
    return tuners


def fused_kernel_bytes(case: dict, whole: bool = False) -> int:
    """The fewest bytes the fused pool kernel must move: input and output once each; for the
    whole graph's one kernel, its input once and each distinct output once."""
    shape = Case.from_dict(case)
    if whole:
        outputs = 2 if shape.shared_output and shape.tail > 1 else 1
        return FLOAT_BYTES * (math.prod(shape.input_shape) + outputs * math.prod(shape.pool_shape))
    return FLOAT_BYTES * (math.prod(shape.pool_input_shape) + math.prod(shape.pool_shape))


# What runs written before the tuners stored their `kernel_times` declared.
_EARLIER_KERNEL_TIMES = {
    "optuna": {
        "on": "default_kernel_us",
        "fixed": "fixed_kernel_us",
        "serial": "serial_kernel_us",
        "optuna": "best_kernel_us",
    },
    "metaschedule": {"metaschedule": "best_kernel_us"},
    "optuna-one-kernel": {"one-kernel": "fixed_kernel_us", "optuna-one-kernel": "best_kernel_us"},
}


# What runs written before the tuners stored `held_against` declared.
_EARLIER_HELD_AGAINST = {
    "optuna": "fixed",
    "metaschedule": "fixed",
    "optuna-one-kernel": "one-kernel",
}


def held_against(tuners: dict, names: list[str]) -> dict[str, str]:
    """Tuner arm -> the rule-made arm it is held against, as each of the run's tuners (`names`,
    in order) declared in its summary."""
    held = {}
    for name in names:
        if name in tuners:
            held[name] = tuners[name].get("held_against", _EARLIER_HELD_AGAINST.get(name))
    return held


def kernel_times(tuners: dict) -> dict:
    """Arm -> its fused kernel's kernel-level time, from the tuner whose summary declares it."""
    times = {}
    for name, summary in tuners.items():
        fields = summary.get("kernel_times", _EARLIER_KERNEL_TIMES.get(name, {}))
        times.update({arm: summary.get(field) for arm, field in fields.items()})
    return times


def is_fused_pool_kernel(name: str) -> bool:
    """The kernel holding the pool: FuseOps' `fused_pool2d_...`, or the whole graph's."""
    return name.startswith("fused_") and "pool2d" in name


def _add_fused_kernel_table(report: dict[str, Any]) -> None:
    """Per arm with a fused pool kernel: its launch, resources, kernel-level time and GB/s."""
    report["fused_kernel_bytes"] = fused_kernel_bytes(report["case"])
    report["whole_kernel_bytes"] = fused_kernel_bytes(report["case"], whole=True)
    rows = []
    for name, arm in report["arms"].items():
        kernel = next((k for k in arm["kernels"] if is_fused_pool_kernel(k["name"])), None)
        if kernel is None:
            continue
        kernel_us = arm["kernel_us"]
        moved = report["whole_kernel_bytes" if arm["whole_graph"] else "fused_kernel_bytes"]
        rows.append(
            {
                "arm": name,
                **kernel,
                "kernel_us": kernel_us,
                "whole_graph": arm["whole_graph"],
                "gbps": moved / (kernel_us * 1e-6) / 1e9 if kernel_us else None,
            }
        )
    report["fused_kernel"] = rows


def fixed_rule_before(report: Report) -> str:
    """The rule that `WindowReduction` runs right before in the run's `fixed` list."""
    return report.get("fixed_rule_before", "GeneralReduction")
