"""report.md's sections on how the figures were taken: paired ratios, noise by level, the order
of the blocks."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.report_records import Ratio, Report

from .cells import table
from .escape import code


def _percent(value: float | None) -> str | None:
    return None if value is None else f"{value:.2%}"


def _ratio_cell(ratio: Ratio | None) -> str | None:
    """`0.143 (0.139–0.147, ±2.8 %)`: the interval and its half-width relative to the ratio."""
    if not ratio:
        return None
    if ratio.get("low") is None:
        return f"{ratio['ratio']:.3f}"
    return (
        f"{ratio['ratio']:.3f} ({ratio['low']:.3f}–{ratio['high']:.3f}, ±{ratio['half_width']:.1%})"
    )


def method_text(report: Report) -> str:
    method = report["ratio_method"]
    text = f"{method['confidence']:.0%} intervals, {method['method']}."
    coverage = method.get("coverage")
    if coverage:
        text += (
            f" Coverage verified by simulating {method['studies']} studies with the H200's "
            f"noise structure at this run's {method['trials']} trials x {method['blocks']} "
            f"blocks x {method['samples']} samples (`reports/stats/coverage.py`): "
            f"{coverage['host']:.1%} for two host-bound arms, {coverage['gpu']:.1%} for a "
            f"host-bound arm against a GPU-bound one, {coverage['gpu-time']:.1%} for two "
            "GPU times."
        )
    return text


def ratios_section(report: Report) -> list[str]:
    """Every paired ratio the run took, one column per figure, with the interval's method;
    nothing where no pair was timed."""
    figures = report["figures"]
    pairs = list(dict.fromkeys(p for ratios in report["ratios_by_figure"].values() for p in ratios))
    if not pairs:
        return []
    rows = []
    for pair in pairs:
        rows.append(
            [
                code(pair),
                *(_ratio_cell(report["ratios_by_figure"][figure].get(pair)) for figure in figures),
            ]
        )
    return ["", "## Paired ratios", "", method_text(report), ""] + table(
        ["ratio", *figures.values()], rows
    )


def noise_section(report: Report) -> list[str]:
    """Each arm's noise by level (within a timer call, between blocks, between processes) per
    figure, then each trial's centre: where the interval's width comes from."""
    rows, figures = [], report["figures"]
    for name, arm in report["arms"].items():
        for figure, label in figures.items():
            noise = arm.get("figures", {}).get(figure, {}).get("noise")
            if noise:
                rows.append(
                    [
                        code(name),
                        label,
                        _percent(noise["within_call"]),
                        _percent(noise["between_blocks"]),
                        _percent(noise["between_processes"]),
                    ]
                )
    if not rows:
        return []
    lines = [
        "",
        "## Noise by level",
        "",
        "Standard deviation of log time (about the CV) within one timer call's samples, "
        "between the block medians of a trial, and between the trials' centres (the "
        "geometric mean of a trial's block medians); each level holds a share of the "
        "levels below it.",
        "",
    ]
    lines += table(["arm", "figure", "within a call", "between blocks", "between processes"], rows)
    for figure, label in figures.items():
        lines += _trial_centres(report, figure, label)
    return lines


def _trial_centres(report: Report, figure: str, label: str) -> list[str]:
    """Per arm, each trial's centre and its departure from the arm's mean over trials, side by
    side: arms that move together between processes share the signs and sizes."""
    rows, trials = [], report["trials"]
    for name, arm in report["arms"].items():
        centres = arm.get("figures", {}).get(figure, {}).get("noise", {}).get("trial_centres_us")
        known = [c for c in centres or [] if c is not None]
        if len(known) < 2:
            continue
        mean = sum(known) / len(known)
        cells: list[str | None] = [code(name)]
        rows.append(
            cells + [None if c is None else f"{c:.2f} ({c / mean - 1:+.1%})" for c in centres]
        )
    if not rows:
        return []
    return [
        "",
        f"Per-trial centres, {label}, us (departure from the arm's mean over trials):",
        "",
    ] + table(["arm", *(f"trial {i}" for i in range(trials))], rows)


def design_text(report: Report) -> list[str]:
    """The order of the blocks: the Williams design, whether its cycles were whole (the
    balance exact only then) and each trial's starting row."""
    designs = report.get("design")
    if not designs:
        return []
    first = designs[0]
    whole = all(d["positions"] and d["carryover"] for d in designs)
    balance = (
        "whole cycles: every arm in every position, and right after every other arm, equally often"
        if whole
        else "not whole cycles of the design, so the balance is only approximate; give "
        f"--blocks a multiple of {first['rows']}"
    )
    return [
        "",
        "## Order of the blocks",
        "",
        f"A Williams design over the {len(first['arms'])} timed arms ({first['rows']} rows), "
        f"{first['blocks']} blocks per trial ({balance}); trials start at rows "
        f"{', '.join(str(d['start_row']) for d in designs)}. Every block's order is in "
        "`trials/trial_<i>.json` (`block_orders`).",
    ]
