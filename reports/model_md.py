"""report.md of a model run: the paragraph for the issue thread first (what the pattern costs,
what each candidate list recovers, the controls, correctness), then the tables it rests on."""

from __future__ import annotations

from baselines.models.failures import failure_section, failure_text

from .cells import MISSING, table
from .comparisons import ratio_text, verdict
from .markdown import closing_sections
from .model import AGREEMENT, DEFAULT, TUNED, arm_of

MAX_KERNEL_ROWS = 40
COSTLIEST = 10


def ms(value) -> str:
    return MISSING if value is None else f"{value:.3f}"


def duration(value_ms) -> str:
    """A time given in ms, in ms from 1 ms up and in us below."""
    if value_ms is None:
        return MISSING
    return f"{value_ms:.2f} ms" if abs(value_ms) >= 1 else f"{value_ms * 1e3:.1f} us"


def label(report: dict) -> str:
    model = report["model"]
    decomposed = " (decomposed)" if model["options"].get("decompose") else ""
    return f"{model['spec']}{decomposed}"


def render(report: dict) -> str:
    lines = [f"# {label(report)}: the #20401 pattern in a real network", "", headline(report)]
    lines += failure_section(report.get("rule_failures", []))
    lines += _pattern_section(report)
    if report["arms"]:
        lines += _arms_section(report)
    lines += _tuned_section(report)
    lines += _changes_section(report)
    lines += _costliest_section(report)
    lines += ["", "## The #20401 pattern", "", report["criterion"]]
    lines += _checks_section(report)
    lines += _walls_section(report)
    lines += closing_sections(
        report,
        "Model, options and protocol",
        {"Model": report["model"], "Settings": report["settings"]},
    )
    return "\n".join(lines) + "\n"


def headline(report: dict) -> str:
    """The paragraph to paste: each fact once, each verdict naming its figure."""
    model, pattern = report["model"], report["pattern"]
    kernels = report["kernels"]
    inputs = ", ".join(f"{i['dtype']}{i['shape']}" for i in model["inputs"])
    date = report["environment"].get("date", "date not recorded")
    where = (
        f"on {report['device']} ({date})"
        if report["arms"] or report["kernel_timer"]
        else f"analysed without running anything ({date}, `--analyze`)"
    )
    parts = [
        f"`{label(report)}` with input {inputs}, {model['weights']}, {where}.",
        f"{pattern['kernels']} of its {len(kernels)} kernels ({_launches(pattern['launches'])} "
        "per call) have the #20401 pattern (criterion below; analysed for CUDA "
        f"{report['analysis_target'].get('arch')} under each rule list).",
    ]
    if pattern["default_ms"] is not None:
        total = pattern["end_to_end_gpu_ms"]
        of = (
            f"of the model's {duration(total)} end to end (GPU time, calls queued; all its "
            f"kernels sum to {duration(pattern['kernels_total_ms'])})"
            if total is not None
            else f"of its kernels' {duration(pattern['kernels_total_ms'])}"
        )
        parts.append(
            f"Under the default rules they take {duration(pattern['default_ms'])} {of}; "
            "a kernel's time is its time alone times its launches per call."
        )
    for rules, found in report["recovered"].items():
        timed = found["ratios"] or found["predicted_gain_ms"] is not None
        parts.append(_recovered_text(rules, found) if timed else _changes_text(report, rules))
    parts += [failure_text(**row) + "." for row in report.get("rule_failures", [])]
    parts.append(_correct_text(report))
    parts += _peer_text(report)
    return " ".join(p for p in parts if p)


def _changes_text(report: dict, rules: str) -> str:
    """What a list changes, where nothing was timed."""
    changed = report["rule_changes"].get(rules, [])
    flagged = {k["name"] for k in report["kernels"] if k["pattern"]}
    return (
        f"`{rules}` gives {len(changed)} kernel(s) another rule than `default` "
        f"({len([n for n in changed if n in flagged])} of them with the pattern)."
    )


def _launches(count: int) -> str:
    return f"{count} launch" + ("" if count == 1 else "es")


def _recovered_text(rules: str, found: dict) -> str:
    arm = found["arm"]
    pair = f"{arm}/{arm_of(DEFAULT)}"
    figures = [("gpu_queued", "GPU time"), ("call_path", "end to end")]
    verdicts = [
        f"{name}: {verdict(pair, found['ratios'][f])}"
        for f, name in figures
        if f in found["ratios"]
    ]
    if found["control"]:
        holds = all(found["holds_one"].values()) if found["holds_one"] else None
        told = (
            ""
            if holds is None
            else " and its interval holds 1, as it should"
            if holds
            else "; **its interval excludes 1** though no rule changed"
        )
        return f"`{rules}` changes no kernel's rule (a control){told}" + (
            f" ({'; '.join(verdicts)})." if verdicts else "."
        )
    what = (
        "the tuned kernels"
        if rules == "tuned"
        else f"its {found['changed_kernels']} changed kernels"
    )
    text = f"`{rules}`: " + ("; ".join(verdicts) if verdicts else "not timed end to end") + "."
    if found["predicted_gain_ms"] is not None:
        measured = found["measured_gain_ms"]
        agrees = (
            ""
            if found["agrees"] is None
            else f" (within {AGREEMENT:.0%}: {'yes' if found['agrees'] else '**no**'})"
        )
        end_to_end = (
            f"end to end (GPU time) {duration(measured)}{agrees}"
            if measured is not None
            else "end to end there is no GPU time to compare"
        )
        text += (
            f" {what.capitalize()} predict {duration(found['predicted_gain_ms'])} saved per "
            f"call; {end_to_end}."
        )
    if found["correct"] is False:
        text += f" **`{arm}` does not match PyTorch eager**."
    return text


def _correct_text(report: dict) -> str:
    if not report["arms"]:
        return "Nothing was timed (analysis only: `tune model ... --analyze`)."
    tvm = {n: a for n, a in report["arms"].items() if n not in report["peers"]}
    wrong = [n for n, a in tvm.items() if not a["correct"]]
    errors = [
        f"`{n}` {c['max_abs_err']:.2g} at scale {c['scale']:.2g}"
        for n in tvm
        for c in report["checks"].get(n, [])[:1]
        if c.get("max_abs_err") is not None and c.get("scale") is not None
    ]
    head = (
        f"**Not correct against PyTorch eager: {', '.join(wrong)}** (not timed)."
        if wrong
        else "Every TVM build matches PyTorch eager before its time counts"
    )
    if not wrong:
        head += (
            f" (worst error and output scale per arm: {'; '.join(errors)}; tolerance 1e-3 x scale)."
        )
    built = report["build_errors"]
    failed = f" Not built: {'; '.join(f'`{a}`: {e}' for a, e in built.items())}." if built else ""
    return f"{head}{failed} {report['tf32']}."


def _peer_text(report: dict) -> list[str]:
    found = report["ratios_by_figure"].get("gpu_queued", {})
    texts = []
    for peer in report["peers"]:
        for rules in ("fixed", DEFAULT):
            pair = f"{arm_of(rules)}/{peer}"
            if pair in found:
                texts.append(f"GPU time {verdict(pair, found[pair])}.")
                break
    return texts


def _pattern_section(report: dict) -> list[str]:
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
                f"`{k['name']}`",
                k["calls"],
                k["window"],
                *(_rule_launch(k, rules) for rules in lists),
                *(_us(k["kernel_us"].get(rules)) for rules in lists),
                *([_us(k["kernel_us"].get("tuned"))] if tuned else []),
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


def _us(value) -> str:
    return MISSING if value is None else f"{value:.1f}"


def _arms_section(report: dict) -> list[str]:
    figures = report["figures"]
    rows = []
    for name, arm in report["arms"].items():
        check: dict = next(iter(report["checks"].get(name, [])), {})
        rows.append(
            [
                f"`{name}`",
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
            f"\nNo GPU time for `{arm}`: {reason}."
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
        [f"`{pair}`", *(_ratio_cell(by_figure.get(figure, {}).get(pair)) for figure in figures)]
        for pair in pairs
    ]
    return lines + table(["ratio", *figures.values()], ratio_rows)


def _median_ms(arm: dict, figure: str) -> float | None:
    found = arm["figures"].get(figure)
    return None if found is None else found["median_us"] / 1e3


def _ratio_cell(ratio: dict | None) -> str:
    return MISSING if ratio is None else ratio_text(ratio)


def _tuned_section(report: dict) -> list[str]:
    """--tune-top: per kernel, the tuners' evaluator's times of the lists' schedules and of
    each tuner's best (one timer, the kernel compiled alone)."""
    kernels = report["tuned"].get("kernels", {})
    if not kernels:
        return []
    rows = []
    for name, found in kernels.items():
        cells = []
        for tuner in ("optuna", "metaschedule"):
            got = found.get(tuner, {})
            cells.append(
                f"{_us(got.get('best_kernel_us'))} ({got.get('valid', 0)} of "
                f"{got.get('trials', 0)} valid)"
                if "error" not in got
                else f"none ({got['error']})"
            )
        rows.append(
            [
                f"`{name}`",
                _us(found["default_us"]),
                _us(found["fixed_us"]),
                *cells,
                found["best"] or MISSING,
            ]
        )
    budget = next(iter(kernels.values()))["budget"]
    return [
        "",
        f"## Tuned kernels (--tune-top {len(kernels)}, {budget} candidates per tuner; us, each "
        "kernel compiled alone and timed by the tuners' evaluator)",
        "",
        *table(["kernel", "default", "fixed", "Optuna", "MetaSchedule", "into tvm-tuned"], rows),
        "",
        f"`{TUNED}` is the `{report['tuned'].get('base')}` list's build with these kernels put in.",
    ]


def _changes_section(report: dict) -> list[str]:
    lines = ["", "## Kernels whose rule changes", ""]
    for rules, names in report["rule_changes"].items():
        changed = ", ".join(f"`{n}`" for n in names) or "none"
        lines.append(f"- `{rules}` against `default`: {changed}")
    return lines


def _costliest_section(report: dict) -> list[str]:
    timed = [k for k in report["kernels"] if k["kernel_us"].get(DEFAULT) is not None]
    if not timed:
        return []
    timed.sort(key=lambda k: -k["calls"] * k["kernel_us"][DEFAULT])
    rows = [
        [
            f"`{k['name']}`",
            k["calls"],
            _us(k["kernel_us"][DEFAULT]),
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


def _checks_section(report: dict) -> list[str]:
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
        "tolerance 1e-3 x the output's largest magnitude (baselines/models/check.py)."
    )
    if statuses:
        counts = "; ".join(
            f"`{rules}` " + ", ".join(f"{n} {s}" for s, n in found.items())
            for rules, found in statuses.items()
        )
        lines += [
            "",
            f"Kernels alone ({report['kernel_timer']}): {counts}. Checked against: "
            + "; ".join(f"{key}: {text}" for key, text in report["kernel_checks"].items())
            + ".",
        ]
    return lines


def _walls_section(report: dict) -> list[str]:
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
