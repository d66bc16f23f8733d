"""What `tune model --tune-top` found, in a model run's report.md: per tuned kernel its kind, its
time under the default and fixed lists and each tuner's best (one timer), the winner, and any
tuner skipped with its reason; in the paragraph, `tvm-tuned` end to end against the fixed list
and torch.compile."""

from __future__ import annotations

from pool_fusion_tuning.baselines.peers import inductor_peer
from pool_fusion_tuning.runfolder.model_records import ModelReport
from pool_fusion_tuning.runfolder.report_records import Ratio

from .cells import MISSING, table, tenths
from .comparisons import ratio_text
from .escape import code, md
from .kernel_classes import ARITHMETIC, gflop, kernel_us, rate, tvm_class
from .model_names import TUNED, arm_of
from .samples import LABELS

# The peer the tuned build is held against, where it was timed.
COMPILED = inductor_peer()
# The figure a verdict on the tuned build names first: GPU time where there is one.
FIGURES = ("gpu_queued", "call_path")
# The kernels left untuned that the section names (the others counted).
_NAMED = 8


def none_taken(kernels: str | None) -> str:
    """Why --tune-top tuned nothing: --kernels (None: the default, pattern) took no kernel."""
    return f"--kernels {kernels or 'pattern'} takes none of the kernels --tune-top considers"


def tuned_section(report: ModelReport) -> list[str]:
    """The tuned kernels' table (none without --tune-top; a line where it took no kernel)."""
    kernels = report["tuned"].get("kernels", {})
    if not kernels:
        if report["tuned"].get("kernels_chosen") == 0:
            return [
                "",
                "## Tuned kernels",
                "",
                f"None: {none_taken(report['tuned'].get('chosen'))}.",
            ]
        return []
    # Each tuner's summary is a table of its own in a kernel's (`tuning/models/tune_top.py`).
    first = next(iter(kernels.values()))
    tuners = [key for key, value in first.items() if isinstance(value, dict)]
    analysed = {row["name"]: row for row in report["kernels"]}
    rows = [
        [
            code(name),
            md(found.get("kind", MISSING)),
            found.get("calls", MISSING),
            tenths(found["default_us"]),
            tenths(found["fixed_us"]),
            *(_tuner_cell(found.get(tuner, {})) for tuner in tuners),
            tenths(found.get("kernel_us")),
            _into_tuned(found),
            _rate(analysed.get(name), report["tuned"].get("base")),
        ]
        for name, found in kernels.items()
    ]
    chosen = report["tuned"].get("chosen")
    option = f" --kernels {chosen}" if chosen else ""
    top = report["tuned"].get("tune_top", len(kernels))
    return [
        "",
        f"## Tuned kernels (--tune-top {top}{option}, {first['budget']} candidates per "
        "tuner; us, each kernel compiled alone and timed by the tuners' evaluator)",
        "",
        *table(
            [
                "kernel",
                "kind",
                "calls",
                "default",
                "fixed",
                *(code(t) for t in tuners),
                "best",
                "into tvm-tuned",
                "TFLOP/s in tvm-tuned",
            ],
            rows,
        ),
        "",
        f"`{TUNED}` is the {code(report['tuned'].get('base'))} list's build with these "
        "kernels put in.",
        *_still_improving(kernels, tuners),
        *_warm_started(kernels, tuners),
        *_spent(report, first["budget"]),
    ]


def _still_improving(kernels: dict, tuners: list[str]) -> list[str]:
    """Tuners whose best came in their trials' last quarter: a larger --budget may find more."""
    late = [
        f"{code(name)} ({tuner}, {cell['best_trial']} of {cell['trials']})"
        for name, found in kernels.items()
        for tuner in tuners
        if (cell := found.get(tuner, {})).get("best_trial", 0) > 0.75 * cell.get("trials", 0)
    ]
    if not late:
        return []
    said = "Best found in the last quarter of the search: " + ", ".join(late)
    return ["", said + "; a larger --budget on the same --out goes on from there."]


def _warm_started(kernels: dict, tuners: list[str]) -> list[str]:
    """Where searches began with another run's records (`--warm-start`), and how many kernels
    that run held."""
    begun = [
        cell["warm_start"]
        for found in kernels.values()
        for tuner in tuners
        if "warm_start" in (cell := found.get(tuner, {}))
    ]
    if not begun:
        return []
    folders = dict.fromkeys((w["folder"], w["gpu"]) for w in begun)  # in the kernels' order
    said = "; ".join(code(folder) + (f" ({md(gpu)})" if gpu else "") for folder, gpu in folders)
    held = sum(1 for w in begun if w["kernel"] is not None)
    return [
        "",
        f"Warm start from {said}: it held {held} of the {len(begun)} kernels searched; each "
        "search's first candidates (`from warm start` above) are its best records there, built, "
        "checked and timed again here, and counted in the budget.",
    ]


def _spent(report: ModelReport, budget: int) -> list[str]:
    """What the tuning spent and left, and the tuned network against torch.compile (none for runs
    from before the tuning recorded its wall time)."""
    found = report["tuned"]
    if "kernels_chosen" not in found:
        return []
    limit = found["time_budget_s"]
    wall_s = report["phase_wall_s"].get("tuning", 0.0)  # summed over the commands that tuned
    left = found["kernels_left"]
    named = ", ".join(code(name) for name in left[:_NAMED])
    more = f" and {len(left) - _NAMED} more" if len(left) > _NAMED else ""
    lines = [
        "",
        f"Tuning budget {budget} candidates per tuner and kernel; time budget "
        f"{f'{limit:g} s' if limit is not None else 'none'}; {wall_s:.1f} s of tuning "
        f"wall time over {found['commands']} command(s)"
        + (f", {found['kernels_at_once']} kernels at once" if "kernels_at_once" in found else "")
        + f". Kernels: {len(found['kernels'])} "
        f"tuned of {found['kernels_chosen']} chosen, {len(left)} left"
        + (f" (the time budget was spent): {named}{more}." if left else "."),
    ]
    pair = f"{TUNED}/{COMPILED}"
    first = _ratio(report, pair)
    if TUNED in report["arms"] and first is not None:
        lines += ["", f"Against {code(COMPILED)}: {_verdicts(report, pair)}. {_ahead(*first)}"]
    return lines


def _rate(kernel: dict | None, base: str | None) -> str:
    """A multiply-add kernel's TFLOP/s in tvm-tuned (`kernel_classes.gflop`)."""
    if kernel is None or tvm_class(kernel) not in ARITHMETIC:
        return MISSING
    work, us = gflop(kernel), kernel_us(kernel, "tuned", base)
    return MISSING if work is None or not us else rate(work / us * 1e3)


def _into_tuned(found: dict) -> str:
    """Whose schedule of the kernel `tvm-tuned` runs: the best tuner's, or the base list's where
    the best tuned kernel was no faster."""
    used = found.get("used", found["best"])
    if used is not None and used != found["best"]:
        return f"{md(used)} (the tuned kernel is no faster)"
    return used or MISSING


def _tuner_cell(found: dict) -> str:
    if "skipped" in found:
        return f"skipped: {md(found['skipped'])}"
    if "error" in found:
        return f"none ({md(found['error'])})"
    valid = f"{found.get('valid', 0)} of {found.get('trials', 0)} valid"
    # Where the best came: late in the budget, a larger one may find more.
    at = f", best at {found['best_trial']}" if found.get("best_trial") else ""
    warm = found.get("warm_start", {}).get("records")
    begun = f", {warm} from warm start" if warm else ""
    return f"{tenths(found.get('best_kernel_us'))} ({valid}{at}{begun})"


def tuned_text(report: ModelReport) -> str:
    """`tvm-tuned` end to end against its base list and torch.compile, each with its interval,
    and which is ahead of torch.compile in words ("" where not timed)."""
    if TUNED not in report["arms"]:
        return ""
    found = report["tuned"]
    kernels = found.get("kernels", {})
    # Whose schedule each kernel runs in tvm-tuned (the base list's where no tuner beat it).
    won = [k.get("used", k["best"]) for k in kernels.values() if k.get("best")]
    winners = ", ".join(f"{code(t)} {won.count(t)}" for t in dict.fromkeys(won))
    base = arm_of(found.get("base", ""))
    pair = f"{TUNED}/{base}"
    sentences = [
        f"{code(TUNED)} ({len(kernels)} kernel(s) tuned; schedule by {winners or 'none'}) "
        f"against {code(base)}: {_verdicts(report, pair)}."
    ]
    pair = f"{TUNED}/{COMPILED}"
    first = _ratio(report, pair)
    if first is not None:
        sentences.append(f"Against {code(COMPILED)}: {_verdicts(report, pair)}.")
        sentences.append(_ahead(*first))
    return " ".join(sentences)


def _verdicts(report: ModelReport, pair: str) -> str:
    found = []
    for figure in FIGURES:
        ratio = report["ratios_by_figure"].get(figure, {}).get(pair)
        if ratio is not None:
            found.append(f"{LABELS[figure]} {pair} = {ratio_text(ratio)}")
    return "; ".join(found) or "not timed"


def _ratio(report: ModelReport, pair: str) -> tuple[str, Ratio] | None:
    """The first of FIGURES that has the pair's ratio, and that ratio."""
    for figure in FIGURES:
        ratio = report["ratios_by_figure"].get(figure, {}).get(pair)
        if ratio is not None:
            return figure, ratio
    return None


def _ahead(figure: str, ratio: Ratio) -> str:
    """Which of the tuned build and torch.compile is ahead, by `ratio` (tuned / compiled) in
    `figure`."""
    what = LABELS[figure]
    if not ratio.get("distinguishable"):
        return f"In {what}, {code(TUNED)} and torch.compile cannot be told apart."
    low = ratio.get("low")
    if low is not None and low > 1:
        return f"**torch.compile is ahead**: {code(TUNED)} takes {ratio['ratio']:.2f}x its {what}."
    return f"**{code(TUNED)} is ahead of torch.compile**: {ratio['ratio']:.2f}x its {what}."
