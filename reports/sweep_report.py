"""The sweep's report (sweep.json, sweep.md, sweep.png) from its cases' own reports and the
rules the sweep recorded when it measured (`tuning/rule_choice.py`); rendering needs no TVM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pool_fusion_tuning.baselines.peers import CAPTURE, inductor_peer
from pool_fusion_tuning.runfolder.names import member
from pool_fusion_tuning.runfolder.records import RunMeta, Sweep
from pool_fusion_tuning.runfolder.redact import redact_data
from pool_fusion_tuning.runfolder.report_records import Report
from pool_fusion_tuning.runfolder.store import RUN_FILE, Run, read_record, write_json, write_text

from .render import render_run
from .report_data import kernel_times
from .sources import inductor_ahead, sources
from .sweep_arms import end_to_end_arms, kernel_arms, sweep_tuners, tuned_against
from .sweep_md import GOAL_GAP, sweep_markdown

# The files a sweep writes into its folder, beside one folder per Case.
SWEEP_JSON, SWEEP_MD, SWEEP_PNG = "sweep.json", "sweep.md", "sweep.png"
OUTPUTS = (SWEEP_JSON, SWEEP_MD, SWEEP_PNG)


def render_sweep(out: Path, names: list[str]) -> dict:
    """The sweep's report from its Cases' own: sweep.json (a row per Case, the Cases where the
    rule is slower than ON or beyond the goal, the tuners' failures), sweep.md and, with
    matplotlib, sweep.png; returns the sweep's data."""
    stored = read_record(
        out / SWEEP_JSON, Sweep
    )  # with `large_reductions` where the sweep recorded it
    folders = [member(out, name, out / SWEEP_JSON) for name in names]
    tuners = sweep_tuners(stored)
    cases = [
        _case_row(f.name, _case_report(f), read_record(f / RUN_FILE, RunMeta), tuners)
        for f in folders
    ]
    sweep = redact_data(
        {
            **stored,
            "device": cases[0]["device"] if cases else None,
            "cases": cases,
            "fixed_slower_than_on": [c["case"] for c in cases if c["fixed_slower_than_on"]],
            "fixed_beyond_goal": [
                c["case"] for c in cases if c["fixed_gap"] is not None and c["fixed_gap"] > GOAL_GAP
            ],
            "one_kernel_slower_than_fixed": [
                c["case"] for c in cases if c["one_kernel_slower_than_fixed"]
            ],
            "one_kernel_beyond_goal": [
                c["case"]
                for c in cases
                if c["one_kernel_gap"] is not None and c["one_kernel_gap"] > GOAL_GAP
            ],
            "tuner_failures": {
                c["case"]: c["tuner_failures"] for c in cases if c["tuner_failures"]
            },
        }
    )
    if any("inductor" in c for c in cases):  # sweeps from before it ran inductor render as then
        sweep["one_kernel_slower_than_inductor"] = [
            c["case"] for c in cases if "inductor" in c and c["inductor"]["slower"]
        ]
    write_json(out / SWEEP_JSON, sweep)
    write_text(out / SWEEP_MD, sweep_markdown(sweep))
    try:
        from .plots import sweep_plot
    except ImportError:  # matplotlib is optional; the tables are enough
        return sweep
    sweep_plot(sweep, out / SWEEP_PNG)
    return sweep


# The whole graph as one kernel, against inductor's (plain and captured whole).
WHOLE, INDUCTOR, CAPTURED = "one-kernel", inductor_peer(), CAPTURE


def _case_row(name: str, report: Report, meta: RunMeta, tuners: dict[str, str]) -> dict:
    arms = report["arms"]
    times = kernel_times(report["tuners"])  # reports of older cases lack the arms' kernel_us
    # The default rule's kernel is ON's.
    kernels = {"default": times.get("on"), **{arm: times.get(arm) for arm in kernel_arms(tuners)}}
    end_to_end = end_to_end_arms(tuners)
    fixed_vs_on = report["ratios"].get("fixed/on", {})
    one_vs_fixed = report["ratios"].get("one-kernel/fixed", {})
    launches = {
        row["arm"]: {k: row.get(k) for k in ("grid", "block")}
        for row in report.get("fused_kernel", [])
    }
    rules = meta.get("fused_kernel_rules", {})  # None where a sweep before it did not record
    row: dict[str, Any] = {
        "case": name,
        "shape": report["case"],
        "device": report["device"],
        "tuner_failures": report.get("tuner_failures", {}),
        "rule": rules.get("pool"),
        "one_kernel_rule": rules.get("one-kernel"),
        "fixed_launch": launches.get("fixed", {"grid": None, "block": None}),
        "one_kernel_launch": launches.get("one-kernel", {"grid": None, "block": None}),
        "fixed_correct": arms.get("fixed", {}).get("correct"),
        "fixed_max_abs_err": arms.get("fixed", {}).get("max_abs_err"),
        "one_kernel_correct": arms.get("one-kernel", {}).get("correct"),
        "kernel_us": kernels,
        "fixed_gap": _gap(kernels, tuners, "fixed"),
        "one_kernel_gap": _gap(kernels, tuners, "one-kernel"),
        "end_to_end_us": {arm: arms.get(arm, {}).get("median_us") for arm in end_to_end},
        "queued_gpu_us": {arm: arms.get(arm, {}).get("queued_gpu_us") for arm in end_to_end},
        "fixed_over_on": fixed_vs_on,
        "one_kernel_over_fixed": one_vs_fixed,
        "captured_one_kernel_over_fixed": report["ratios"].get(
            "one-kernel+capture/fixed+capture", {}
        ),
        # Slower only when the interval says so (both ends above 1).
        "fixed_slower_than_on": bool(fixed_vs_on) and (fixed_vs_on.get("low") or 0) > 1,
        "one_kernel_slower_than_fixed": bool(one_vs_fixed) and (one_vs_fixed.get("low") or 0) > 1,
    }
    # Every source's best kernel side by side (the tuners as the sweep recorded them).
    row["sources"] = sources(report, tuners)
    row["inductor_ahead"] = inductor_ahead(report, row["sources"])
    inductor = _against_inductor(report)
    if inductor is not None:
        row["inductor"] = inductor
    return row


def _against_inductor(report: Report) -> dict | None:
    """`one-kernel` against inductor's graph (`torch-compile`) by GPU time with calls queued,
    and both captured whole; None where the Case ran no inductor."""
    ratios, arms = report.get("ratios_by_figure", {}), report["arms"]  # none in older reports
    plain = ratios.get("gpu_queued", {}).get(f"{WHOLE}/{INDUCTOR}")
    if plain is None:
        return None
    return {
        "gpu_us": {arm: arms[arm]["queued_gpu_us"] for arm in (WHOLE, INDUCTOR)},
        "gpu_ratio": plain,
        "captured_us": {
            arm: arms.get(arm + CAPTURED, {}).get("median_us") for arm in (WHOLE, INDUCTOR)
        },
        "captured_ratio": ratios.get("call_path", {}).get(
            f"{WHOLE}{CAPTURED}/{INDUCTOR}{CAPTURED}"
        ),
        # Slower only when the interval says so (both ends above 1).
        "slower": (plain.get("low") or 0) > 1,
    }


def _gap(kernels: dict, tuners: dict[str, str], arm: str) -> float | None:
    """`arm`'s kernel against the best its tuners found (None where none found one)."""
    found = [kernels[t] for t in tuned_against(tuners, arm) if kernels[t]]
    return kernels[arm] / min(found) - 1 if kernels[arm] and found else None


def _case_report(folder: Path) -> Report:
    """A Case's report.json, remade from its measurements where a kept copy of the sweep left it
    out (a committed archive keeps the samples alone)."""
    if not (folder / "report.json").exists():
        return render_run(Run(folder))
    return read_record(folder / "report.json", Report)
