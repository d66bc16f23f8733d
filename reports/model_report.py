"""A model run's report (`tune model`): report.json, .md, .csv and the plots, from the run folder
alone (no TVM).

What it computes: - per kernel: its rule, launch and time under each rule list (and tuned), its
launches per call (`calls`), and the idle-lane pattern flag, its criterion stated once; - what the
pattern costs: the sum over pattern kernels of launches x time under the default list, against the
model's end-to-end GPU time and all its kernels' sum; - what each other list recovers: its
end-to-end ratio to the default with its paired interval, beside the gain its changed kernels
predict; - controls: a list that changes no kernel's rule should give a ratio whose interval holds
1.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Mapping
from typing import Any, cast

from pool_fusion_tuning.baselines.models.failures import failure_rows
from pool_fusion_tuning.runfolder.model_records import (
    Analysis,
    AnalyzedKernel,
    CublasGemms,
    KernelTimes,
    ModelFile,
    ModelReport,
    ModelRunMeta,
)
from pool_fusion_tuning.runfolder.records import Trial
from pool_fusion_tuning.runfolder.redact import redact_data
from pool_fusion_tuning.runfolder.store import Run, read_json, read_record, write_json, write_text

from .cublas_md import CUBLAS_FILE
from .kernel_classes import kernels_ms
from .model_names import AGREEMENT, DEFAULT, TUNED, arm_of
from .report_data import arm_summary, paired_ratios, ratio_method, require_every_trial
from .samples import LABELS, samples_by_figure

KERNEL_FILE = "kernel_times.json"
TF32 = (
    "PyTorch runs with TF32 off (torch.backends.cudnn.allow_tf32 and "
    "torch.backends.cuda.matmul.allow_tf32 both False, in the reference and the peers: fp32 "
    "as TVM's kernels compute it); each check records the switches"
)


def summarize_model_run(run: Run) -> ModelReport:
    """report.json of a model run from its folder alone: per kernel its rules, launches and
    times, what the pattern costs, what each list recovers, the arms' figures and ratios."""
    meta = run.model_meta
    settings = meta["settings"]
    lists = settings["rule_lists"]
    analysis = read_record(run.path / "analysis.json", Analysis)
    times = _kernel_times(run)
    kernels = [_kernel_row(k, lists, times, meta.get("tuned", {})) for k in analysis["kernels"]]
    report: dict[str, Any] = {
        "kind": "model",
        "model": read_record(run.path / "model.json", ModelFile),
        "shows": meta.get("shows"),
        "command": meta.get("command"),
        "target": meta["identity"]["target"],
        "device": meta["identity"]["device"],
        "environment": read_json(run.path / "environment.json"),
        "settings": settings,
        "analysis_target": analysis["target"],
        "criterion": analysis["criterion"],
        "tf32": TF32,
        "kernels": kernels,
        "kernel_timer": times.get("timer"),
        "kernel_checks": times.get("checks", {}),
        "rule_changes": {
            rules: [k["name"] for k in kernels if k["rules"].get(rules) != k["rules"][DEFAULT]]
            for rules in lists
            if rules != DEFAULT
        },
        "build_errors": meta.get("build_errors", {}),
        "rule_failures": failure_rows(dict(analysis)),
        "tuned": meta.get("tuned", {}),
        "phase_wall_s": meta.get("phase_wall_s", {}),
    }
    if (run.path / CUBLAS_FILE).exists():  # PyTorch's GEMMs, where timed
        report["cublas"] = read_record(run.path / CUBLAS_FILE, CublasGemms)
    report.update(_end_to_end(run, meta))
    report["pattern"] = _pattern_cost(report)
    report["recovered"] = {r: _recovered(report, r) for r in lists if r != DEFAULT}
    if report["arms"].get(TUNED):
        report["recovered"]["tuned"] = _recovered(report, "tuned", TUNED)
    return cast(ModelReport, report)  # built key by key above, as report.json holds it


def _kernel_times(run: Run) -> dict:
    path = run.path / KERNEL_FILE
    stored = read_record(path, KernelTimes) if path.exists() else KernelTimes(kernels={})
    timers = {o.get("timer") for per in stored["kernels"].values() for o in per.values()}
    return {**stored, "timer": next(iter(sorted(t for t in timers if t)), None)}


def _kernel_row(kernel: AnalyzedKernel, lists: list[str], times: dict, tuned: dict) -> dict:
    measured = times["kernels"].get(kernel["name"], {})
    row: dict[str, Any] = {
        key: kernel[key] for key in ("name", "window", "outputs", "calls", "pattern", "rules")
    }
    row["launches"] = kernel["launches"]
    row["kernel_us"] = {r: _ok_time(measured.get(r)) for r in lists}
    row["status"] = {r: measured[r]["status"] for r in lists if r in measured}
    row["checked_against"] = {r: measured[r].get("checked_against") for r in lists if r in measured}
    tuned_kernel = tuned.get("kernels", {}).get(kernel["name"])
    row["tuned"] = tuned_kernel
    row["kernel_us"]["tuned"] = _tuned_us(tuned_kernel, tuned.get("base"))
    return row


def _tuned_us(found: dict | None, base: str | None) -> float | None:
    """The kernel's time in tvm-tuned where the build takes its tuned schedule; None where it
    keeps the base list's (then read as the base's)."""
    if not found or found.get("used") in (None, base):
        return None
    return found.get("kernel_us")


def _ok_time(outcome: dict | None) -> float | None:
    return outcome.get("kernel_us") if outcome and outcome["status"] == "ok" else None


def _end_to_end(run: Run, meta: ModelRunMeta) -> dict:
    """The arms' figures and paired ratios, from the trials (none for an analysis alone)."""
    arms_meta = meta.get("arms", [])
    protocol = meta["settings"]["protocol"]
    if arms_meta:  # a trial file missing is named, never silently dropped
        require_every_trial(run, protocol.get("trials", 0), 0)
    trials = run.trials()
    names = [arm["name"] for arm in arms_meta]
    peers = [arm["name"] for arm in arms_meta if arm.get("peer")]
    samples = samples_by_figure(trials, names, protocol["repeat"]) if trials else {}
    arms = {name: arm_summary(name, trials, samples) for name in names}
    timed = [name for name in names if any(name in per for per in samples.values())]
    pairs = _pairs(timed, peers)
    by_figure = {figure: paired_ratios(per_arm, pairs) for figure, per_arm in samples.items()}
    return {
        "trials": len(trials),
        "arms": arms,
        "peers": peers,
        "figures": {figure: LABELS[figure] for figure in samples},
        "ratios_by_figure": by_figure,
        "ratio_method": ratio_method(trials, protocol) if trials else {},
        "trial_walls": [{"trial": t["trial"], **t.get("wall_s", {})} for t in trials],
        "checks": {n: [t["checks"][n] for t in trials if n in t["checks"]] for n in names},
        # why an arm has no GPU time (the GPU timer's reason), the last trial's word
        "gpu_reasons": {n: r for t in trials for n, r in t.get("gpu_queued_reasons", {}).items()},
        "profiled": _profiled(trials, names),
    }


def _profiled(trials: list[Trial], names: list[str]) -> dict:
    """Per arm, over the trials that profiled it: the medians of its kernel sum (CUPTI) and
    captured call, the last reason a capture failed, and the first trial's time per kernel name."""
    found = {}
    for name in names:
        records: list[Mapping[str, Any]]
        records = [t["profiled"][name] for t in trials if name in t.get("profiled", {})]
        if not records:
            continue
        entry: dict = {}
        for key in ("kernel_sum_us", "captured_us", "kernels_per_call"):
            values = [r[key] for r in records if r.get(key) is not None]
            entry[key] = statistics.median(values) if values else None
        for key in ("captured_reason", "profile_reason"):
            reasons = [r[key] for r in records if r.get(key)]
            entry[key] = reasons[-1] if reasons else None
        entry["kernels_us"] = records[0].get("kernels_us", {})
        found[name] = entry
    return found


def _pairs(timed: list[str], peers: list[str]) -> list[tuple[str, str]]:
    """Every TVM arm against the default list's, the tuned one against each list's, and every
    TVM arm against every peer."""
    tvm = [name for name in timed if name not in peers]
    base = arm_of(DEFAULT)
    pairs = [(name, base) for name in tvm if name != base and base in timed]
    pairs += [(TUNED, name) for name in tvm if TUNED in timed and name not in (TUNED, base)]
    pairs += [(name, peer) for name in tvm for peer in peers if peer in timed]
    return pairs


def _total_ms(kernels: list[dict], rules: str, base: str | None = None) -> float | None:
    """`kernels_ms`, None for no kernel (a pattern the network lacks)."""
    return kernels_ms(kernels, rules, base) if kernels else None


def _gpu_ms(report: dict[str, Any], arm: str) -> float | None:
    value = report["arms"].get(arm, {}).get("queued_gpu_us")
    return None if value is None else value / 1e3


def _pattern_cost(report: dict[str, Any]) -> dict:
    kernels = report["kernels"]
    pattern = [k for k in kernels if k["pattern"]]
    return {
        "kernels": len(pattern),
        "launches": sum(k["calls"] for k in pattern),
        "default_ms": _total_ms(pattern, DEFAULT),
        "kernels_total_ms": _total_ms(kernels, DEFAULT),
        "end_to_end_gpu_ms": _gpu_ms(report, arm_of(DEFAULT)),
        "by_list_ms": {
            rules: _total_ms(pattern, rules) for rules in report["settings"]["rule_lists"]
        },
    }


def _recovered(report: dict[str, Any], rules: str, arm: str | None = None) -> dict:
    """A list (or the tuned build) against the default: the gain its changed kernels predict
    (launches x time, default minus this) against the end-to-end GPU time's gain."""
    arm = arm or arm_of(rules)
    base = arm_of(DEFAULT)
    tuned_base = report["tuned"].get("base")
    names = set(report["rule_changes"].get(tuned_base if rules == "tuned" else rules, []))
    if rules == "tuned":
        names |= {k["name"] for k in report["kernels"] if k["kernel_us"].get("tuned")}
    changed = [k for k in report["kernels"] if k["name"] in names]
    before, after = _total_ms(changed, DEFAULT), _total_ms(changed, rules, tuned_base)
    predicted = None if before is None or after is None else before - after
    base_ms, arm_ms = _gpu_ms(report, base), _gpu_ms(report, arm)
    measured = None if base_ms is None or arm_ms is None else base_ms - arm_ms
    ratios = {
        figure: found[f"{arm}/{base}"]
        for figure, found in report["ratios_by_figure"].items()
        if f"{arm}/{base}" in found
    }
    sums = [report["profiled"].get(name, {}).get("kernel_sum_us") for name in (base, arm)]
    unchanged = rules != "tuned" and not report["rule_changes"].get(rules)
    return {
        "arm": arm,
        "changed_kernels": len(changed),
        "predicted_gain_ms": predicted,
        "measured_gain_ms": measured,
        # the same gain in CUPTI's kernel sum of the whole call, where both were profiled
        "measured_kernel_sum_ms": None if None in sums else (sums[0] - sums[1]) / 1e3,
        "agrees": None
        if not predicted or not measured
        else abs(predicted / measured - 1) <= AGREEMENT,
        "ratios": ratios,
        "control": unchanged,
        # only figures with an interval (one timing process gives none) hold 1 or not
        "holds_one": {
            figure: ratio["low"] <= 1 <= ratio["high"]
            for figure, ratio in ratios.items()
            if ratio["low"] is not None
        },
        "correct": report["arms"].get(arm, {}).get("correct"),
    }


CSV_FIELDS = ("kernel", "calls", "window", "pattern", "list", "rule", "grid", "block", "kernel_us")


def kernels_csv(report: ModelReport) -> str:
    """One row per kernel and rule list (and tuned, where tuned)."""
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(CSV_FIELDS)
    for k in report["kernels"]:
        for rules in [*report["settings"]["rule_lists"], "tuned"]:
            time_us = k["kernel_us"].get(rules)
            if rules == "tuned" and time_us is None:
                continue
            launch = k["launches"].get(rules) or {}
            writer.writerow(
                (
                    k["name"],
                    k["calls"],
                    k["window"],
                    k["pattern"],
                    rules,
                    k["rules"].get(rules, "tuner"),
                    launch.get("grid"),
                    launch.get("block"),
                    time_us,
                )
            )
    return table.getvalue()


def render_model_run(run: Run) -> ModelReport:
    from .model_md import render

    report = redact_data(summarize_model_run(run))  # a crafted run file may hold a password
    write_json(run.path / "report.json", report)
    write_text(run.path / "report.md", render(report))
    write_text(run.path / "report.csv", kernels_csv(report))
    try:
        from . import model_plots
    except ImportError:  # matplotlib is optional for re-rendering; the tables are enough
        return report
    model_plots.write_all(run, report)
    return report
