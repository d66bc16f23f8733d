"""The paragraph a maintainer pastes into apache/tvm#20401: the candidate fix first, each fact
once, every verdict with the figure it uses, "cannot be told apart" wherever an interval holds 1;
at most eight sentences.

Each sentence is built by one function here, which `comment.py` reuses for the shorter comment.
"""

from __future__ import annotations

from pool_fusion_tuning.baselines.peers import CAPTURE, inductor_peer
from pool_fusion_tuning.runfolder.records import TunerSummary
from pool_fusion_tuning.runfolder.report_records import Ratio, Report, ReportArm

from .cells import us
from .comparisons import figure_verdicts, treatment, verdict
from .escape import code, md
from .report_data import fixed_rule_before
from .samples import LABELS

CANDIDATE = "fixed"
# The slowdown: the fused arm against the unfused ones.
SLOWDOWN = ("on/partial", "on/off")
# The PyTorch peer held against the candidate like for like, plain and captured.
COMPILED = inductor_peer()
FAIR_PEERS = (f"fixed/{COMPILED}", f"fixed{CAPTURE}/{COMPILED}{CAPTURE}")
PEER_FIGURES = ("python_call", "gpu_queued")
ONE_KERNEL = ("one-kernel/fixed", "one-kernel+capture/fixed+capture")
# The whole graph against PyTorch like for like: plain by GPU time against torch.compile's, captured
# against torch.compile captured.
WHOLE_GRAPH_PEERS = (
    (f"one-kernel/{COMPILED}", ("gpu_queued",), "plain"),
    (f"one-kernel{CAPTURE}/{COMPILED}{CAPTURE}", ("call_path",), "captured"),
)


def stated_figures(pair: str) -> tuple[str, ...]:
    """The figures this paragraph states PyTorch comparisons on; comment.md states each verdict
    on one of them, so the two never disagree."""
    return next((f for p, f, _ in WHOLE_GRAPH_PEERS if p == pair), PEER_FIGURES)


def headline(report: Report) -> str:
    timed = {name for name, arm in report["arms"].items() if arm["median_us"] is not None}
    sentences = [
        setting(report),
        slowdown(report),
        *(_candidate(report) if CANDIDATE in timed else _best_tuned(report, timed)),
        *(_like_for_like(report, pair) for pair in FAIR_PEERS),
        whole_graph(report),
        closing(report),
    ]
    return " ".join(s for s in sentences if s)


def setting(report: Report) -> str:
    """The first sentence: device, target, trials, and what the intervals are (and are blind to,
    or that there are none), so every verdict after it can be read."""
    method, trials = report["ratio_method"], report["trials"]
    notes = []
    if method.get("coverage"):
        values = sorted(method["coverage"].values())
        notes.append(f"simulated coverage {values[0]:.0%} to {values[-1]:.0%}")
    if trials > 1:
        clause = f"95% CIs, Student t over the {trials} trials' paired block log-ratios"
    elif (method.get("blocks") or 1) > 1:
        clause = "95% CIs, Student t over one trial's paired block log-ratios"
        notes.append("blind to differences between processes")
    else:
        clause, notes = "no intervals (one trial of one block), so no verdicts", []
    if notes:
        clause += f" ({'; '.join(notes)})"
    return (
        f"On {md(report['device'])} ({md(report['target'])}), {trials} "
        f"{'trial' if trials == 1 else 'trials'} of one process each; ratios are of times, "
        f"with {clause}."
    )


def _ratio(report: Report, pair: str) -> Ratio | None:
    return report["ratios"].get(pair)


def slowdown(report: Report) -> str:
    """The issue's slowdown: ON against PARTIAL and OFF."""
    return pairs_sentence(report, SLOWDOWN, "The issue's slowdown")


def pairs_sentence(report: Report, pairs: tuple, opening: str) -> str:
    """One sentence of the pairs' verdicts, end to end through the arms' own call paths."""
    found = [verdict(pair, ratio) for pair in pairs if (ratio := _ratio(report, pair))]
    return f"{opening}, {LABELS['call_path']}: {'; '.join(found)}." if found else ""


def _candidate(report: Report) -> list[str]:
    """`fixed` against ON, then against the tuned optimum of its kernel."""
    arms, pair = report["arms"], f"{CANDIDATE}/on"
    rule = f"the default rules with `WindowReduction` before {code(fixed_rule_before(report))}"
    if report["target"] != "cuda":
        rule += f", a GPU rule: on {report['target']} it builds what ON builds"
    sentence = (
        f"The candidate fix `{CANDIDATE}` ({rule}), {LABELS['call_path']}: "
        f"{us(arms[CANDIDATE]['median_us'])} us"
    )
    ratio = _ratio(report, pair)
    if ratio:
        sentence += f" against ON's {us(arms['on']['median_us'])} us, {verdict(pair, ratio)}"
    optimum = _against_optimum(report, CANDIDATE)
    return [sentence + ".", f"Against the tuned optimum, {'; '.join(optimum)}." if optimum else ""]


def _tuned_alike(report: Report, name: str) -> list[str]:
    """The tuned arms that searched the same kernel as `name` (pool kernel or whole graph)."""
    whole = report["arms"][name].get("whole_graph")
    return [
        t
        for t in report["tuners"]
        if t in report["arms"] and report["arms"][t].get("whole_graph") == whole
    ]


def _against_optimum(report: Report, name: str, end_to_end: bool = True) -> list[str]:
    """Clauses: `name`'s kernel against the tuners' best of the same kernel (each find named
    once), and `name` end to end against the fastest of those tuned arms."""
    arms, tuners = report["arms"], report["tuners"]
    if name not in arms:
        return []
    tuned = _tuned_alike(report, name)
    clauses = []
    best_us = {t: time_us for t in tuned if (time_us := tuners[t].get("best_kernel_us"))}
    found = sorted(best_us, key=lambda t: best_us[t])
    kernel_us = arms[name].get("kernel_us")
    if found and kernel_us:
        best = best_us[found[0]]
        finds = "; ".join(
            f"{code(t)} {us(tuners[t]['best_kernel_us'])} us, found at trial "
            f"{tuners[t]['best_trial']} of {_best_of(tuners[t])}"
            for t in found
        )
        clauses.append(
            f"its kernel takes {us(arms[name]['kernel_us'])} us, "
            f"{kernel_us / best:.2f}x the best tuned kernel ({finds})"
        )
    pair = against_fastest_tuned(report, name) if end_to_end else None
    if pair:
        optimum, opening = pair.split("/")[1], LABELS["call_path"]
        if optimum not in tuned:  # the other kernel's tuned arm is the graph's optimum
            opening = (
                f"the tuned optimum of the graph, the fastest tuned arm of both kernels (the fused "
                f"pool kernel's and the whole graph's), is {code(optimum)}: {opening}"
            )
        clauses.append(f"{opening}, {verdict(pair, report['ratios'][pair])}")
    return clauses


def against_fastest_tuned(report: Report, name: str) -> str | None:
    """`name/T` for the tuned optimum T, the fastest timed tuned arm end to end whichever kernel
    its tuner searched, where that ratio exists."""
    arms = report["arms"]
    if name not in arms:
        return None
    timed = [t for t in report["tuners"] if t in arms and arms[t]["median_us"] is not None]
    paired = [t for t in timed if _ratio(report, f"{name}/{t}")]  # older reports: same kernel
    if not paired:
        return None
    return f"{name}/{min(paired, key=lambda t: _median(arms[t]))}"


def _best_tuned(report: Report, timed: set) -> list[str]:
    """Without the candidate: the fastest tuned arm against ON, and what its tuner found."""
    tuned = [t for t in report["tuners"] if t in timed]
    if not tuned:
        return []
    best = min(tuned, key=lambda t: _median(report["arms"][t]))
    return [
        pairs_sentence(report, (f"{best}/on",), f"The fastest tuned arm, {code(best)}"),
        _tuner_find(report, best),
    ]


def _tuner_find(report: Report, name: str) -> str:
    tuner = report["tuners"][name]
    if tuner.get("best_trial") is None:
        return ""
    return (
        f"{code(name)} found its kernel ({us(tuner['best_kernel_us'])} us) at trial "
        f"{tuner['best_trial']} of {_best_of(tuner)}."
    )


def _best_of(tuner: TunerSummary) -> int:
    """The trials its best trial is numbered among: a tuner of several runs (MetaSchedule's two)
    counts all their trials and numbers its best within the run that found it."""
    return tuner.get("best_of", tuner["trials"])


def _like_for_like(report: Report, pair: str) -> str:
    verdicts = figure_verdicts(report, pair, PEER_FIGURES)
    top, peer = pair.split("/")
    return (
        f"Like for like against PyTorch ({treatment(top)}), {code(top)} against "
        f"{code(peer)}: {verdicts}."
        if verdicts
        else ""
    )


def whole_graph(report: Report) -> str:
    """The whole graph as one kernel: against `fixed`, against PyTorch like for like, and
    against its own tuned optimum."""
    found = [verdict(pair, ratio) for pair in ONE_KERNEL if (ratio := _ratio(report, pair))]
    against = whole_graph_against_pytorch(report)
    if against:
        found.append(f"like for like against PyTorch, {against}")
    if not found:
        return ""
    found += _against_optimum(report, "one-kernel", end_to_end=False)
    return (
        f"The whole graph as one kernel (`one-kernel`), {LABELS['call_path']}: "
        + "; ".join(found)
        + "."
    )


def whole_graph_against_pytorch(report: Report) -> str:
    """`one-kernel` against torch.compile by GPU time, and both captured whole, end to end."""
    parts = []
    for pair, figures, how in WHOLE_GRAPH_PEERS:
        verdicts = figure_verdicts(report, pair, figures)
        if verdicts:
            parts.append(f"{how}, {verdicts}")
    return "; ".join(parts)


def not_measured(report: Report) -> list[str]:
    """What the run meant to measure and could not, each with its reason."""
    found = [
        f"Tuner {code(name)} gave no arm: {md(reason)}"
        for name, reason in report.get("tuner_failures", {}).items()
    ]
    by_reason: dict[str, list[str]] = {}
    for name, reason in report.get("peers_not_measured", {}).items():
        by_reason.setdefault(reason, []).append(code(name))
    return found + [
        f"Not measured: {', '.join(names)} ({md(reason)})" for reason, names in by_reason.items()
    ]


def correctness(report: Report) -> str:
    arms = report["arms"]
    wrong = [name for name, arm in arms.items() if not arm["correct"]]
    if wrong:
        return "Wrong against the NumPy reference, not timed: " + ", ".join(wrong)
    return (
        "Every arm matched the independent NumPy reference (largest max-abs error "
        f"{max(a['max_abs_err'] or 0 for a in arms.values()):.3g})"
    )


def closing(report: Report) -> str:
    """The last sentence: what was not measured, then the correctness check (keeping the
    paragraph within eight)."""
    clauses = [*not_measured(report), correctness(report)]
    clauses[1:] = [clause[0].lower() + clause[1:] for clause in clauses[1:]]
    return "; ".join(clauses) + "."


def _median(arm: ReportArm) -> float:
    """The call-path median of an arm its caller compares (one it knows was timed)."""
    value = arm.get("median_us")
    if value is None:
        raise ValueError("an arm that was not timed is not compared")
    return value
