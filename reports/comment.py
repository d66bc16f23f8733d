"""comment.md: a run as a comment for the apache/tvm#20401 thread, in GitHub-flavoured Markdown of
at most 2,500 characters: what was run, three or four verdicts, one table, the environment folded
away, and where the full report is.

The verdicts come from the paragraph's helpers (`paragraph.py`, `comparisons.py`), so each names its
figure and an interval holding 1 says "cannot be told apart". Where the table would pass the limit,
the last arms are left to the full report, and the comment says how many.
"""

from __future__ import annotations

from pool_fusion_tuning.runfolder.report_records import Report

from .cells import MISSING, table, three, us
from .comparisons import verdict
from .escape import code, fenced, md
from .paragraph import (
    CANDIDATE,
    FAIR_PEERS,
    WHOLE_GRAPH_PEERS,
    against_fastest_tuned,
    closing,
    pairs_sentence,
    slowdown,
    stated_figures,
)
from .samples import LABELS
from .stats.cpu_noise import CPU_NOTE

LIMIT = 2500
# How the first verdict, the candidate's, opens (the slowdown goes before it where there
# is room).
CANDIDATE_OPENING = f"The candidate rule `{CANDIDATE}`"
# Like for like against PyTorch, a sentence per treatment: plain by queued GPU time, captured end to
# end, each on the figure the console's paragraph states for the pair (`stated_figures`), else its
# last figure for it.
AGAINST_PYTORCH = (
    ("Against PyTorch, plain", (FAIR_PEERS[0], WHOLE_GRAPH_PEERS[0][0]), "gpu_queued"),
    ("Against PyTorch, both captured whole", (FAIR_PEERS[1], WHOLE_GRAPH_PEERS[1][0]), "call_path"),
)
# The environment's lines the comment keeps (the target's JSON is in the full report).
ENVIRONMENT = (
    "gpu",
    "driver",
    "cuda_runtime",
    "tvm",
    "tvm_ffi",
    "torch",
    "cpu_count",
    "sm_clock_before",
    "sm_clock_after",
)


def render_comment(report: Report) -> str:
    """The comment, within LIMIT (`size`)."""
    return answer(report)[0]


def answer(report: Report) -> tuple[str, list[str], list[list], int]:
    """The comment, its verdicts, its table's rows (arm name, then `COLUMNS` cells) and how many
    arms it left to the full report: past LIMIT, arms no verdict names leave first, last first.
    The console prints the same verdicts and rows (`console.py`)."""
    sentences = verdicts(report)
    rows = _rows(report)
    named = {arm for s in sentences for arm in _named_arms(s)}
    spare = [row for row in reversed(rows) if row[0] not in named]
    for count in range(len(spare) + 1):
        left = {id(row) for row in spare[:count]}
        kept = [r for r in rows if id(r) not in left]
        text = _comment(report, sentences, kept, count)
        if size(text) <= LIMIT:
            return text, sentences, kept, count
    return _cut(text), sentences, kept, count


def size(text: str) -> int:
    """A comment's size against LIMIT: its UTF-8 bytes (never fewer than its characters)."""
    return len(text.encode("utf-8"))


def _cut(text: str) -> str:
    """A comment still past LIMIT with every spare arm left out: its whole lines up to the limit,
    so no fence or fold is left open."""
    kept: list[str] = []
    for line in text.splitlines():
        if size("\n".join([*kept, line, "…"])) + 1 > LIMIT or line.startswith("<details>"):
            break
        kept.append(line)
    return "\n".join([*kept, "…"]) + "\n"


def _named_arms(sentence: str) -> list[str]:
    """The arms of the ratios a sentence gives (`a/b = ...`)."""
    return [arm for word in sentence.split() if "/" in word for arm in word.split("/")]


def verdicts(report: Report) -> list[str]:
    """Three or four sentences: the candidate against ON and the tuned optimum, then against
    PyTorch like for like, then what was not measured and the correctness check; the issue's
    slowdown opens where there is room."""
    pairs = [f"{CANDIDATE}/on"]
    optimum = against_fastest_tuned(report, CANDIDATE)
    pairs += [optimum] if optimum else []
    opening = CANDIDATE_OPENING
    if report["target"] != "cuda":
        opening += f" (a GPU rule: on {report['target']} it builds what ON builds)"
    sentences = [pairs_sentence(report, tuple(pairs), opening)]
    for opening, peer_pairs, preferred in AGAINST_PYTORCH:
        found = [f for pair in peer_pairs if (f := _peer_verdict(report, pair, preferred))]
        if found and len({figure for figure, _ in found}) == 1:
            sentences.append(f"{opening}, {LABELS[found[0][0]]}: {'; '.join(v for _, v in found)}.")
        elif found:
            said = "; ".join(f"{LABELS[figure]}, {v}" for figure, v in found)
            sentences.append(f"{opening}: {said}.")
    sentences = [s for s in sentences if s] + [closing(report)]
    if len(sentences) < 4:
        sentences.insert(0, slowdown(report))
    return [s for s in sentences if s]


def _peer_verdict(report: Report, pair: str, preferred: str) -> tuple[str, str] | None:
    """(figure, verdict) of a comparison with PyTorch, on a figure the console states for it."""
    stated = stated_figures(pair)
    figure = preferred if preferred in stated else stated[-1]
    ratio = report["ratios_by_figure"].get(figure, {}).get(pair)
    return (figure, verdict(pair, ratio)) if ratio else None


def setting_lines(report: Report, command: bool = True) -> list[str]:
    """What was run (without `command`, just typed at the console), where and when; the design
    and what its intervals are."""
    env = report.get("environment") or {}
    method = report.get("ratio_method") or {}
    date = str(env.get("date", ""))[:10]
    what = ", ".join(
        part
        for part in (
            md(report["device"]),
            f"TVM {md(env['tvm'])}" if env.get("tvm") else "",
            date,
            f"{report['wall_s']:.0f} s" if report.get("wall_s") else "",
        )
        if part
    )
    blocks = method.get("blocks")
    trials = report["trials"]
    design = f"{trials} process{'es' if trials != 1 else ''}" + (
        f" × {blocks} blocks" if blocks else ""
    )
    if trials > 1:
        interval = "95% CIs paired within blocks, Student t over processes"
    elif (blocks or 1) > 1:
        interval = "95% CIs over one process's paired blocks (blind to other processes)"
    else:
        interval = "no intervals, so no verdicts"
    coverage = sorted((method.get("coverage") or {}).values())
    if coverage and trials > 1:
        interval += f" (simulated coverage {coverage[0]:.0%}–{coverage[-1]:.0%})"
    return [
        f"{code(report.get('command'))} on {what}." if command else f"On {what}.",
        f"{design}; {interval}.",
    ]


def _to_on(report: Report, name: str) -> str:
    """The arm's time over ON's, end to end through its own call path, with its interval."""
    if name == "on":
        return "1"
    ratios = report["ratios"]
    if f"{name}/on" in ratios:
        ratio = ratios[f"{name}/on"]
        low, high, value = ratio.get("low"), ratio.get("high"), ratio["ratio"]
    elif f"on/{name}" in ratios:  # the unfused arms are given as ON over them
        ratio = ratios[f"on/{name}"]
        value = 1 / ratio["ratio"]
        low = 1 / above if (above := ratio.get("high")) else None
        high = 1 / below if (below := ratio.get("low")) else None
    else:
        return MISSING
    return three(value) + (f" ({low:.3f}–{high:.3f})" if low and high else "")


def _rows(report: Report) -> list[list]:
    rows = []
    for name, arm in report["arms"].items():
        if arm.get("median_us") is None:
            continue
        rows.append(
            [
                name,
                us(arm["median_us"]),
                us(arm.get("queued_gpu_us")),
                us(arm.get("kernel_us")),
                _to_on(report, name),
            ]
        )
    return rows


COLUMNS = ("arm", "end to end, us", "GPU time, us", "fused kernel, us", "/ ON (95% CI)")
# What each column but the arm's name is, said under the table where the column is shown.
COLUMN_NOTES = (
    "end to end: own call path",
    "GPU time: calls queued behind a sleep",
    "fused kernel: timed alone",
    "/ ON: end to end",
)


def shown_columns(rows: list[list]) -> list[int]:
    """The columns shown: one no arm has a figure for (GPU time on a CPU) is left out, not shown
    empty."""
    return [0, *(c for c in range(1, len(COLUMNS)) if any(row[c] != MISSING for row in rows))]


def table_note(columns: list[int], left_out: int) -> str:
    """What each shown column is, and how many arms are left to the full report."""
    notes = "; ".join(COLUMN_NOTES[c - 1] for c in columns[1:])
    more = f" {left_out} more arm{'s are' if left_out > 1 else ' is'} in the full report."
    return notes[0].upper() + notes[1:] + "." + (more if left_out else "")


def _table(rows: list[list], left_out: int) -> list[str]:
    keep = shown_columns(rows)
    cells = [[code(row[0]), *(row[c] for c in keep[1:])] for row in rows]
    return [*table([COLUMNS[c] for c in keep], cells), "", table_note(keep, left_out)]


def _environment(report: Report) -> list[str]:
    env = report.get("environment") or {}
    lines = [f"{key}: {env[key]}" for key in ENVIRONMENT if env.get(key) is not None]
    if not lines:
        return []
    return ["<details><summary>Environment</summary>", "", *fenced(lines), "", "</details>"]


def _comment(report: Report, sentences: list[str], rows: list[list], left_out: int) -> str:
    lines = [
        *setting_lines(report),
        *([md(CPU_NOTE)] if report["target"] != "cuda" else []),
        "",
        *(f"- {sentence}" for sentence in sentences),
        "",
        *_table(rows, left_out),
        "",
        *_environment(report),
        *([""] if _environment(report) else []),
        "Full report (every sample, noise by level, kernels): `report.md` beside this file; "
        "`tune report DIR` renders it again.",
    ]
    return "\n".join(lines) + "\n"
