"""report.md of a model run: the paragraph for the issue thread first (what the pattern costs,
what each candidate list recovers, the controls, correctness), then the tables it rests on."""

from __future__ import annotations

from pool_fusion_tuning.baselines.models.failures import failure_text
from pool_fusion_tuning.runfolder.model_records import ModelReport

from . import model_tables as tables
from .comparisons import verdict
from .cublas_md import cublas_section
from .escape import code, md
from .kernel_classes import class_section, class_text
from .markdown import closing_sections
from .model_names import AGREEMENT, DEFAULT, arm_of
from .model_peers import peer_section, peer_text
from .model_tables import duration
from .model_tuned import tuned_section, tuned_text


def label(report: ModelReport) -> str:
    model = report["model"]
    decomposed = " (decomposed)" if model["options"].get("decompose") else ""
    return f"{model['spec']}{decomposed}"


def render(report: ModelReport) -> str:
    """report.md: the paragraph, then the tables it rests on, then what was run."""
    lines = [
        f"# {md(label(report))}: the idle-lane pattern in a real network",
        "",
        headline(report),
    ]
    lines += tables.failure_section(report.get("rule_failures", []))
    lines += tables.pattern_section(report)
    if report["arms"]:
        lines += tables.arms_section(report)
    lines += peer_section(report)
    lines += class_section(report)
    lines += cublas_section(report)
    lines += tuned_section(report)
    lines += tables.changes_section(report)
    lines += tables.costliest_section(report)
    lines += ["", "## The idle-lane pattern", "", report["criterion"]]
    lines += tables.checks_section(report)
    lines += tables.walls_section(report)
    lines += closing_sections(
        report,
        "Model, options and protocol",
        {"Model": report["model"], "Settings": report["settings"]},
    )
    return "\n".join(lines) + "\n"


def headline(report: ModelReport) -> str:
    """The paragraph to paste: each fact once, each verdict naming its figure."""
    model, pattern = report["model"], report["pattern"]
    kernels = report["kernels"]
    inputs = ", ".join(f"{md(i['dtype'])}{i['shape']}" for i in model["inputs"])
    date = report["environment"].get("date", "date not recorded")
    where = (
        f"on {md(report['device'])} ({md(date)})"
        if report["arms"] or report["kernel_timer"]
        else f"analysed without running anything ({md(date)}, `--analyze`)"
    )
    parts = [
        f"{code(label(report))} with input {inputs}, {md(model['weights'])}, {where}.",
        f"{pattern['kernels']} of its {len(kernels)} kernels ({_launches(pattern['launches'])} "
        "per call) have the idle-lane pattern (criterion below; analysed for CUDA "
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
    parts += [
        failure_text(**row, name=code, text=md) + "." for row in report.get("rule_failures", [])
    ]
    parts += _taken_elsewhere(report)
    parts.append(_correct_text(report))
    parts += peer_text(report)
    parts.append(class_text(report))
    parts.append(tuned_text(report))
    return " ".join(p for p in parts if p)


def _taken_elsewhere(report: ModelReport) -> list[str]:
    """Per kernel a list cannot build, the rule each list without that failure gives it."""
    failing: dict[str, set] = {}
    for row in report.get("rule_failures", []):
        failing.setdefault(row["kernel"], set()).add(row["rules"])
    texts = []
    for kernel in report["kernels"]:
        if kernel["name"] not in failing:
            continue
        taken = [
            f"{code(rules)} gives it {md(rule)}"
            for rules, rule in kernel["rules"].items()
            if rules not in failing[kernel["name"]] and rule
        ]
        if taken:
            texts.append(f"Kernel {code(kernel['name'])}: {', '.join(taken)}.")
    return texts


def _changes_text(report: ModelReport, rules: str) -> str:
    """What a list changes, where nothing was timed."""
    changed = report["rule_changes"].get(rules, [])
    flagged = {k["name"] for k in report["kernels"] if k["pattern"]}
    return (
        f"{code(rules)} gives {len(changed)} kernel(s) another rule than `default` "
        f"({len([n for n in changed if n in flagged])} of them with the pattern)."
    )


def _launches(count: int) -> str:
    return f"{count} launch" + ("" if count == 1 else "es")


def _recovered_text(rules: str, found: dict) -> str:
    arm = found["arm"]
    pair = f"{arm}/{arm_of(DEFAULT)}"
    # A control's figure whose interval excludes 1 is shown too, so the sentence that says so
    # shows the interval it means.
    excluding = (
        [f for f, held in found["holds_one"].items() if not held] if found["control"] else []
    )
    names = {"gpu_queued": "GPU time", "call_path": "end to end", "python_call": "from Python"}
    shown = [
        "gpu_queued",
        "call_path",
        *[f for f in excluding if f not in ("gpu_queued", "call_path")],
    ]
    verdicts = [
        f"{names[f]}: {verdict(pair, found['ratios'][f])}" for f in shown if f in found["ratios"]
    ]
    if found["control"]:
        holds = all(found["holds_one"].values()) if found["holds_one"] else None
        told = (
            ""
            if holds is None
            else " and its interval holds 1, as it should"
            if holds
            else f"; **its interval excludes 1** ({', '.join(names[f] for f in excluding)}) "
            "though no rule changed"
        )
        return f"{code(rules)} changes no kernel's rule (a control){told}" + (
            f" ({'; '.join(verdicts)})." if verdicts else "."
        )
    what = (
        "the tuned kernels"
        if rules == "tuned"
        else f"its {found['changed_kernels']} changed kernels"
    )
    text = f"{code(rules)}: " + ("; ".join(verdicts) if verdicts else "not timed end to end") + "."
    if found["predicted_gain_ms"] is not None:
        measured = found["measured_gain_ms"]
        agrees = (
            ""
            if found["agrees"] is None
            else f" (within {AGREEMENT:.0%}: {'yes' if found['agrees'] else '**no**'})"
        )
        sums = found.get("measured_kernel_sum_ms")
        end_to_end = (
            f"end to end (GPU time) {duration(measured)}{agrees}"
            if measured is not None
            else f"in the kernel sum of the whole call (CUPTI) {duration(sums)}, the GPU time "
            "with calls queued having no figure"
            if sums is not None
            else "the GPU time with calls queued has no figure (its reason below) and no "
            "profile was taken: the call-path ratios above compare"
        )
        text += (
            f" {what.capitalize()} predict {duration(found['predicted_gain_ms'])} saved per "
            f"call; {end_to_end}."
        )
    if found["correct"] is False:
        text += f" **{code(arm)} does not match PyTorch eager**."
    return text


def _correct_text(report: ModelReport) -> str:
    if not report["arms"]:
        return "Nothing was timed (analysis only: `tune model ... --analyze`)."
    tvm = {n: a for n, a in report["arms"].items() if n not in report["peers"]}
    wrong = [n for n, a in tvm.items() if not a["correct"]]
    errors = [
        f"{code(n)} {c['max_abs_err']:.2g} at scale {c['scale']:.2g}"
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
    failed = "; ".join(f"{code(a)}: {md(e)}" for a, e in built.items())
    failed = f" Not built: {failed}." if built else ""
    return f"{head}{failed} {report['tf32']}."
