"""Where PyTorch stands in a model report: every TVM arm (each rule list, and tuned) against every
PyTorch peer (eager, torch.compile), in each figure both have, each labelled.

The figures, in the order a reader trusts them: the GPU time with calls queued (a paired ratio
with its interval), the sum of the call's kernel times from CUPTI's profile, and the whole call
captured into one CUDA graph and replayed (`tuning/measure/profiled.py`; ratios of the trials'
medians). Where the host never gets ahead of a small network's kernels the first has no figure,
and the other two still compare; a run from before the profile compares by its end-to-end call
path. A peer that was not timed is said, with why: never "nothing to compare".
"""

from __future__ import annotations

from pool_fusion_tuning.runfolder.model_records import ModelReport
from pool_fusion_tuning.runfolder.report_records import Ratio

from .comparisons import ratio_text
from .escape import code, md
from .model_tables import duration

# (figure, its label): the paired figures of the trials, then the profile's.
PAIRED = (("gpu_queued", "GPU time, calls queued"),)
PROFILED = (
    ("kernel_sum_us", "kernel sum (CUPTI profile)"),
    ("captured_us", "captured into a CUDA graph"),
)
CALL_PATH = ("call_path", "end to end, own call path")


def peer_rows(report: ModelReport) -> list[dict]:
    """One row per (TVM arm, peer): the figures both have, each with the two times (ms) and
    their ratio (TVM / PyTorch), the paired ones with their interval too."""
    peers = report["peers"]
    tvm = [n for n, a in report["arms"].items() if n not in peers and a.get("correct")]
    rows = []
    for peer in peers:
        if not report["arms"].get(peer, {}).get("correct"):
            continue
        for arm in tvm:
            rows.append({"arm": arm, "peer": peer, "figures": _figures(report, arm, peer)})
    return rows


def _figures(report: ModelReport, arm: str, peer: str) -> dict:
    found = {}
    profiled = report.get("profiled", {})
    for key, label in PROFILED:
        ours, theirs = profiled.get(arm, {}).get(key), profiled.get(peer, {}).get(key)
        if ours and theirs:
            found[key] = {"label": label, "tvm_ms": ours / 1e3, "torch_ms": theirs / 1e3}
            found[key]["ratio"] = {"ratio": ours / theirs}
    paired = [*PAIRED, *([] if found else [CALL_PATH])]
    for key, label in paired:
        ratio = report["ratios_by_figure"].get(key, {}).get(f"{arm}/{peer}")
        if ratio:
            times = [_median_ms(report, name, key) for name in (arm, peer)]
            found[key] = {"label": label, "tvm_ms": times[0], "torch_ms": times[1]}
            found[key]["ratio"] = ratio
    order = [key for key, _ in (*PAIRED, *PROFILED, CALL_PATH)]
    return {key: found[key] for key in order if key in found}


def _median_ms(report: ModelReport, arm: str, figure: str) -> float | None:
    value = report["arms"][arm].get("figures", {}).get(figure, {}).get("median_us")
    return None if value is None else value / 1e3


def peer_text(report: ModelReport) -> list[str]:
    """The headline's sentences: per peer, each TVM arm in every figure; a peer not timed, and
    where the queued GPU time has no figure, why."""
    texts = []
    for peer in report["peers"]:
        arm = report["arms"].get(peer, {})
        if not arm.get("correct"):
            why = "not correct against PyTorch eager" if arm else "not run"
            texts.append(f"{code(peer)} was not timed ({why}).")
            continue
        rows = [row for row in peer_rows(report) if row["peer"] == peer]
        said = [f"{code(row['arm'])} {_figures_text(row['figures'])}" for row in rows]
        if said:
            texts.append(f"Against {code(peer)} (TVM / PyTorch): " + "; ".join(said) + ".")
    rows = [r for r in peer_rows(report) if "gpu_queued" not in r["figures"]]
    if rows and report.get("target") == "cuda":  # on a CPU there is no GPU time to have
        profiled = any("kernel_sum_us" in r["figures"] for r in rows)
        texts.append(
            "Where the GPU time with calls queued has no figure (the host never got ahead of "
            "the GPU: reasons below), "
            + (
                "the kernel sum and the captured call compare instead."
                if profiled
                else "this run has no profile (made before it was taken): the end-to-end call "
                "path compares."
            )
        )
    return texts


def _figures_text(figures: dict) -> str:
    if not figures:
        return "has no figure in common with it"
    return ", ".join(
        f"{md(f['label'])}{_times(f)} = {_ratio(f['ratio'])}" for f in figures.values()
    )


def _ratio(ratio: Ratio) -> str:
    """A paired ratio with its interval; a ratio of medians alone."""
    return ratio_text(ratio) if "low" in ratio else f"{ratio['ratio']:.3f}"


def _times(figure: dict) -> str:
    if figure["tvm_ms"] is None or figure["torch_ms"] is None:
        return ""
    return f" {duration(figure['tvm_ms'])} vs {duration(figure['torch_ms'])}"


def peer_section(report: ModelReport) -> list[str]:
    """## Against PyTorch: a row per TVM arm, peer and figure."""
    rows = peer_rows(report)
    if not rows:
        return []
    lines = [
        "",
        "## Against PyTorch",
        "",
        "Each TVM arm against each PyTorch peer (TF32 off), in every figure both have: the GPU "
        "time with calls queued (paired ratio, interval over blocks and trials), the sum of the "
        "call's kernel times from CUPTI's profile, and the whole call captured into one CUDA "
        "graph and replayed (ratios of the trials' medians). A ratio over 1: PyTorch is faster.",
        "",
        "| TVM arm | peer | figure | TVM | PyTorch | TVM / PyTorch |",
        "|---|---|---|---:|---:|---:|",
    ]
    for row in rows:
        for figure in row["figures"].values():
            tvm_ms, torch_ms = figure["tvm_ms"], figure["torch_ms"]
            lines.append(
                f"| {code(row['arm'])} | {code(row['peer'])} | {md(figure['label'])} | "
                f"{duration(tvm_ms) if tvm_ms is not None else '—'} | "
                f"{duration(torch_ms) if torch_ms is not None else '—'} | "
                f"{_ratio(figure['ratio'])} |"
            )
    profiled = report.get("profiled", {})
    said = [
        f"- No {what} for {code(name)}: {md(found[key])}"
        for name, found in profiled.items()
        for key, what in (("captured_reason", "captured call"), ("profile_reason", "profile"))
        if found.get(key)
    ]
    return [*lines, "", *said] if said else lines
