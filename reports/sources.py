"""Every source's best kernel for one Case side by side (default, rule, tuners, one-kernel,
inductor) by kernel time alone and GPU time queued, and whether inductor is ahead of every TVM
kernel; from report.json alone (a study's or a sweep Case's), a source not measured said so."""

from __future__ import annotations

from pool_fusion_tuning.baselines.peers import PEERS, Treatment, inductor_peer
from pool_fusion_tuning.runfolder.report_records import Ratio, Report

from .report_data import held_against, kernel_times

# The rule-made sources and their arms; a tuner held against one follows it.
RULE_MADE = (("default", "on"), ("rule", "fixed"), ("one-kernel", "one-kernel"))
POOL, WHOLE = "pool", "whole"  # the fused pool kernel, the whole graph's one kernel


def sources(report: Report, tuners: dict[str, str] | None = None) -> list[dict]:
    """One row per source: `source`, `arm`, `kernel` (whose kernel time), `ran`, `kernel_us` and
    `gpu_us` (None where not taken). `tuners`: tuner -> the rule-made arm it is held against; by
    default the report's."""
    arms = report["arms"]
    if tuners is None:
        tuners = held_against(report["tuners"], [t for t in report["tuners"] if t in arms])
    times = kernel_times(report["tuners"])
    rows = []
    for source, arm in RULE_MADE:
        kernel = WHOLE if arm == "one-kernel" else POOL
        rows.append(_row(source, arm, kernel, arms, times))
        if arm == "on":  # the tuners are held against the rule-made arms of each kernel
            continue
        found = [t for t, held in tuners.items() if held == arm]
        rows += [_row("tuned", t, kernel, arms, times) for t in found]
        if not found:  # no tuner searched this kernel
            rows.append({"source": "tuned", "arm": None, "kernel": kernel, "ran": False})
    # Inductor's plain modes (CUDA graphs are launch treatments): the faster one is its row.
    inductor = [n for n, p in PEERS.items() if p.compiles and p.treatment == Treatment.PLAIN]
    ran = [name for name in inductor if _timed(arms, name)]
    fastest = min(ran, key=lambda name: arms[name]["queued_gpu_us"] or 0, default=inductor_peer())
    rows.append(_row("inductor", fastest, None, arms, times))
    return rows


def _timed(arms: dict, name: str) -> bool:
    return arms.get(name, {}).get("median_us") is not None


def _row(source: str, arm: str, kernel: str | None, arms: dict, times: dict) -> dict:
    if not _timed(arms, arm):  # not measured, or measured wrong and so not timed
        return {"source": source, "arm": arm, "kernel": kernel, "ran": False, "wrong": arm in arms}
    kernel_us = arms[arm].get("kernel_us", times.get(arm))  # older reports: the tuners' record
    return {
        "source": source,
        "arm": arm,
        "kernel": kernel,
        "ran": True,
        "kernel_us": kernel_us if kernel else None,  # inductor's kernels are not timed alone
        "gpu_us": arms[arm].get("queued_gpu_us"),
    }


def inductor_ahead(report: Report, rows: list[dict]) -> dict | None:
    """The fastest TVM source by GPU time against inductor's row: their arms and GPU times, the
    paired ratio tvm/inductor (else the medians'), who is ahead (`standing`: inductor, tvm, or a
    tie where the interval holds 1) and by how much (`longer`: slower over faster, less 1); None
    where either lacks a GPU time."""
    tvm = [r for r in rows if r["ran"] and r["source"] != "inductor" and r.get("gpu_us")]
    peer = next((r for r in rows if r["source"] == "inductor" and r["ran"]), None)
    if not tvm or peer is None or not peer.get("gpu_us"):
        return None
    best = min(tvm, key=lambda r: r["gpu_us"])
    ratio = _paired(report, best["arm"], peer["arm"])
    value = ratio["ratio"] if ratio else best["gpu_us"] / peer["gpu_us"]
    tie = ratio is not None and not ratio.get("distinguishable")
    return {
        "tvm": best["arm"],
        "inductor": peer["arm"],
        "tvm_gpu_us": best["gpu_us"],
        "inductor_gpu_us": peer["gpu_us"],
        "ratio": ratio,
        "standing": "tie" if tie else "inductor" if value > 1 else "tvm",
        "longer": max(value, 1 / value) - 1,
    }


def _paired(report: Report, top: str, bottom: str) -> Ratio | None:
    """The GPU-time ratio top/bottom, paired within blocks: as stored, or the inverse of
    bottom/top (the report gives peers over `on`)."""
    ratios = report.get("ratios_by_figure", {}).get("gpu_queued", {})
    if f"{top}/{bottom}" in ratios:
        return ratios[f"{top}/{bottom}"]
    inverse = ratios.get(f"{bottom}/{top}")
    if inverse is None:
        return None
    flipped: Ratio = {**inverse, "ratio": 1 / inverse["ratio"]}
    low, high = inverse.get("low"), inverse.get("high")
    if low is not None and high is not None:
        flipped["low"], flipped["high"] = 1 / high, 1 / low
    return flipped
