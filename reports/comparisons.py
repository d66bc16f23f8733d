"""Which ratios a report gives, and how a verdict on one reads."""

from __future__ import annotations

from pool_fusion_tuning.baselines.peers import CAPTURE, PEERS, Treatment
from pool_fusion_tuning.runfolder.report_records import Ratio, Report

from .escape import code
from .samples import LABELS

DEFAULT_ORDER = ("off", "partial", "on", "serial")
# (numerator, denominator) pairs the issue thread quotes, when both arms were timed: the issue's
# slowdown and the rule-made arms against each other (each against the tuned optimum of its
# kernel follows, as the run's tuners declared: `ratio_pairs`).
ISSUE_RATIOS = (
    ("on", "off"),
    ("on", "partial"),
    ("serial", "on"),
    ("one-kernel", "fixed"),
    ("one-kernel+capture", "fixed+capture"),
)
# TVM arms that are the issue's baselines, not candidates to hold against a peer.
BASELINES = ("off", "partial", "on")


def treatment(name: str) -> str:
    """How an arm's launches are issued: one whole-call CUDA graph, the framework's own CUDA
    graphs, or plain calls (a peer's, as its table says). A comparison with a peer is made like
    for like."""
    if name in PEERS:
        return PEERS[name].treatment
    if name.endswith(CAPTURE):
        return Treatment.CAPTURED
    if name.endswith("+graph"):
        return Treatment.OWN_GRAPHS
    return Treatment.PLAIN


def like_for_like(timed: list[str], peers: list[str]) -> list[tuple[str, str]]:
    """Every TVM candidate against every peer given the same treatment."""
    candidates = [n for n in timed if n not in peers and n not in BASELINES]
    return [
        (arm, peer)
        for arm in candidates
        for peer in timed
        if peer in peers and treatment(peer) == treatment(arm)
    ]


def ratio_pairs(
    timed: list[str], peers: list[str], held_against: dict[str, str]
) -> list[tuple[str, str]]:
    tuned = [(arm, tuner) for tuner, arm in held_against.items()]  # tuner -> its rule-made arm
    # Each rule-made arm against every tuned arm too, the other kernel's included: the tuned
    # optimum of the graph is the fastest of them all (`paragraph.against_fastest_tuned`).
    declared = [tuner for tuner, arm in held_against.items() if arm]  # a tuner naming none: none
    rule_made = dict.fromkeys(held_against[tuner] for tuner in declared)
    tuned += [(arm, tuner) for arm in rule_made for tuner in declared]
    pairs = [pair for pair in [*ISSUE_RATIOS, *tuned] if pair[0] in timed and pair[1] in timed]
    if "on" in timed:
        pairs += [(name, "on") for name in timed if name not in DEFAULT_ORDER]
    pairs += like_for_like(timed, peers)
    return list(dict.fromkeys(pairs))


def ratio_text(ratio: Ratio) -> str:
    """`0.143 (95 % CI 0.139–0.147)`; an interval needs two trials or two blocks."""
    if ratio.get("low") is None:
        return f"{ratio['ratio']:.3f} (no interval)"
    return (
        f"{ratio['ratio']:.3f} ({ratio['confidence']:.0%} CI "
        f"{ratio['low']:.3f}–{ratio['high']:.3f})"
    )


def verdict(pair: str, ratio: Ratio) -> str:
    """`a/b = r (CI): `a` is faster`, or that the two cannot be told apart."""
    top, bottom = pair.split("/")
    text = f"{pair} = {ratio_text(ratio)}"
    if not ratio.get("distinguishable"):
        band = ratio.get("noise_band")  # a CPU run's (`stats/cpu_noise.py`)
        low, high = ratio.get("low"), ratio.get("high")
        apart = low is not None and high is not None and (low > 1 or high < 1)
        if band and apart:  # apart within the run, not beyond the noise between runs
            text += f", cannot be told apart (within the CPU's between-run noise, {1 / band:.2f}"
            return text + f"-{band:.2f})"
        return f"{text}, cannot be told apart"
    high = ratio.get("high")
    return f"{text}: {code(top if high is not None and high < 1 else bottom)} is faster"


def figure_verdicts(report: Report, pair: str, figures: tuple[str, ...]) -> str:
    """One pair's verdict in each of `figures`, each named."""
    parts = []
    for figure in figures:
        ratio = report["ratios_by_figure"].get(figure, {}).get(pair)
        if ratio:
            parts.append(f"{LABELS[figure]}: {verdict(pair, ratio)}")
    return "; ".join(parts)
