"""The tables of a model run's report.md, below its paragraph (`model_md.py`): the pattern's
kernels, the arms, the rule changes, the costliest kernels, the checks, and where the time
went (the tuned kernels': `model_tuned.py`)."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.model_records import ModelReport
from pool_fusion_tuning.runfolder.report_records import Ratio, ReportArm

from .cells import MISSING, table, tenths
from .comparisons import ratio_text
from .escape import code, md
from .model_names import DEFAULT

MAX_KERNEL_ROWS = 40
COSTLIEST = 10


def ms(value: float | None) -> str:
    return MISSING if value is None else f"{value:.3f}"


def duration(value_ms: float | None) -> str:
    """A time given in ms, in ms from 1 ms up and in us below."""
    if value_ms is None:
        return MISSING
    return f"{value_ms:.2f} ms" if abs(value_ms) >= 1 else f"{value_ms * 1e3:.1f} us"


def pattern_section(report: ModelReport) -> list[str]:
    """The pattern's kernels: launches per call, rule, launch and time under each list."""
    lists = report["settings"]["rule_lists"]
    rows = []
    pattern = sorted(
        (k for k in report["kernels"] if k["pattern"]),
        key=lambda k: -(k["calls"] * (k["kernel_us"].get(DEFAULT) or 0)),
    )
    tuned = any(k["kernel_us"].get("tuned") for k in pattern)
    for k in pattern[:MAX_KERNEL_ROWS]:
        rows.append(
            [
                code(k["name"]),
                k["calls"],
                k["window"],
                *(_rule_launch(k, rules) for rules in lists),
                *(tenths(k["kernel_us"].get(rules)) for rules in lists),
                *([tenths(k["kernel_us"].get("tuned"))] if tuned else []),
            ]
        )
    header = [
        "kernel",
        "calls",
        "window",
        *(f"{rules}: rule, grid x block" for rules in lists),
        *(f"{rules}, us" for rules in lists),
        *(["tuned, us"] if tuned else []),
    ]
    more = len(pattern) - MAX_KERNEL_ROWS
    return [
        "",
        "## Pattern kernels (time of one launch; default / candidate lists / tuned)",
        "",
        *table(header, rows),
        *(["", f"{more} more in report.csv."] if more > 0 else []),
    ]


def _rule_launch(kernel: dict, rules: str) -> str:
    launch = kernel["launches"].get(rules)
    shape = f"{launch['grid']} x {launch['block']}" if launch else "no launch"
    return f"{kernel['rules'].get(rules) or 'none'}, {shape}"


def arms_section(report: ModelReport) -> list[str]:
    """Every arm end to end: each figure's median, its check, and the paired ratios."""
    figures = report["figures"]
    rows = []
    for name, arm in report["arms"].items():
        check: dict = next(iter(report["checks"].get(name, [])), {})
        rows.append(
            [
                code(name),
                *(ms(_median_ms(arm, figure)) for figure in figures),
                "yes" if arm["correct"] else "**no**",
                MISSING if check.get("max_abs_err") is None else f"{check['max_abs_err']:.2g}",
                MISSING if check.get("scale") is None else f"{check['scale']:.2g}",
            ]
        )
    lines = [
        "",
        f"## End to end ({report['trials']} trial(s), medians of per-trial medians, ms)",
        "",
        *table(
            ["arm", *(f"{v}, ms" for v in figures.values()), "correct", "max abs err", "scale"],
            rows,
        ),
        *(
            f"\nNo GPU time for {code(arm)}: {md(reason)}."
            for arm, reason in report.get("gpu_reasons", {}).items()
        ),
        "",
        "Ratios, each from samples paired within blocks "
        f"({report['ratio_method'].get('method', '')}):",
        "",
    ]
    by_figure = report["ratios_by_figure"]
    pairs = dict.fromkeys(pair for found in by_figure.values() for pair in found)
    ratio_rows = [
        [code(pair), *(_ratio_cell(by_figure.get(figure, {}).get(pair)) for figure in figures)]
        for pair in pairs
    ]
    return lines + table(["ratio", *figures.values()], ratio_rows)


def _median_ms(arm: ReportArm, figure: str) -> float | None:
    found = arm["figures"].get(figure)
    return None if found is None else found["median_us"] / 1e3


def _ratio_cell(ratio: Ratio | None) -> str:
    return MISSING if ratio is None else ratio_text(ratio)


def changes_section(report: ModelReport) -> list[str]:
    lines = ["", "## Kernels whose rule changes", ""]
    for rules, names in report["rule_changes"].items():
        changed = ", ".join(code(n) for n in names) or "none"
        lines.append(f"- {code(rules)} against `default`: {changed}")
    return lines


def costliest_section(report: ModelReport) -> list[str]:
    """The kernels that cost the model most under the default list (launches x time)."""
    timed = [k for k in report["kernels"] if k["kernel_us"].get(DEFAULT) is not None]
    if not timed:
        return []
    timed.sort(key=lambda k: -k["calls"] * k["kernel_us"][DEFAULT])
    rows = [
        [
            code(k["name"]),
            k["calls"],
            tenths(k["kernel_us"][DEFAULT]),
            ms(k["calls"] * k["kernel_us"][DEFAULT] / 1e3),
            k["rules"].get(DEFAULT),
            "yes" if k["pattern"] else "no",
        ]
        for k in timed[:COSTLIEST]
    ]
    return [
        "",
        f"## The {COSTLIEST} costliest kernels under the default list (all in report.csv)",
        "",
        *table(["kernel", "calls", "us", "x calls, ms", "rule", "pattern"], rows),
    ]


def checks_section(report: ModelReport) -> list[str]:
    """How each figure was checked: the arms end to end, the kernels alone (by outcome)."""
    if not report["arms"] and not report["kernel_timer"]:
        return []
    statuses: dict = {}
    for k in report["kernels"]:
        for rules, status in k["status"].items():
            statuses.setdefault(rules, {}).setdefault(status, 0)
            statuses[rules][status] += 1
    lines = ["", "## How each figure was checked", ""]
    lines.append(
        "End to end: every TVM arm against PyTorch eager on the run's device with TF32 off, "
        f"{report['settings']['protocol']['checks']} input draws, before its time counts; "
        "tolerance 1e-3 x the output's largest magnitude (baselines/models/eager_check.py)."
    )
    if statuses:
        counts = "; ".join(
            f"{code(rules)} " + ", ".join(f"{n} {s}" for s, n in found.items())
            for rules, found in statuses.items()
        )
        lines += [
            "",
            f"Kernels alone ({report['kernel_timer']}): {counts}. Checked against: "
            + "; ".join(f"{key}: {text}" for key, text in report["kernel_checks"].items())
            + ".",
        ]
    return lines


def walls_section(report: ModelReport) -> list[str]:
    """Where the run's time went, phase by phase."""
    walls = report["phase_wall_s"]
    if not walls:
        return []
    lines = [
        "",
        "## Wall time",
        "",
        "Per phase (the preparation's tasks run side by side: import and analysis, one build "
        "per rule list, torch.compile's first compile): "
        + ", ".join(f"{phase} {seconds:.0f} s" for phase, seconds in walls.items())
        + ".",
    ]
    for walls_of in report["trial_walls"]:
        builds = walls_of.get("build_s", {})
        lines.append(
            f"- trial {walls_of['trial']}: process start {walls_of.get('startup_s', 0):.0f} s, "
            + ", ".join(f"{arm} {seconds:.1f} s" for arm, seconds in builds.items())
            + f" (load, or build and first call), checks {walls_of.get('check_s', 0):.0f} s, "
            f"timing {walls_of.get('timing_s', 0):.0f} s"
        )
    return lines


def failure_section(rows: list[dict]) -> list[str]:
    """Kernels a rule cannot schedule (`failure_rows` of the analysis; none without one): a row
    per kernel and list."""
    if not rows:
        return []
    lines = [
        "",
        "## Kernels a rule cannot schedule (the list cannot build the model as TVM ships it)",
        "",
    ]
    header = ["list", "kernel", "rule that raises", "TVM's message", "upstream", "taken instead by"]
    cells = [
        [
            code(row["rules"]),
            code(row["kernel"]),
            md(row["failure"]["rule"]),
            code(row["failure"]["message"]),
            md(row["failure"].get("upstream") or "not a known one"),
            md(row["failure"].get("next_rule") or "no rule"),
        ]
        for row in rows
    ]
    return lines + [
        *table(header, cells),
        "",
        "Every figure of such a list here is of its build with the kernel left to the rule named "
        "last, where dlight's pass would end the build.",
    ]
