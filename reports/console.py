"""The run's answer on the console, where `tune` ends: plain text of at most LINES lines, with
the figures of comment.md's table and its verdicts (`comment.answer`, one place for both).

A terminal shows markdown as its characters: a backslash escape or a code span's backtick
would be pasted with a command (`pip install -e '.\\[torch\\]'` fails), so every sentence is
taken back to the plain text it shows (`escape.plain`) and the table is aligned columns.
Where the verdicts do not all fit, the table stays and the rest are in comment.md.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from pool_fusion_tuning.runfolder.report_records import Report

from .comment import CANDIDATE_OPENING, COLUMNS, answer, setting_lines, shown_columns, table_note
from .escape import md, plain
from .stats.cpu_noise import CPU_NOTE

LINES = 25
WIDTH = 100
# A command a sentence suggests, up to the punctuation that ends it, kept on one line: its
# spaces are held as a character textwrap does not break at.
_COMMAND = re.compile(r"\b(?:pip install|tune) [^;,)]*")
_UNBROKEN = "\u00a0"


def console_answer(report: Report, report_md: Path) -> str:
    """The answer `tune` prints: what was run (on a CPU, that it is a smoke test), the verdicts
    that fit, the table, and where the report is."""
    _, sentences, rows, left_out = answer(report)
    head = [*(_wrap(CPU_NOTE) if report["target"] != "cuda" else [])]
    head += [line for text in setting_lines(report, False) for line in _wrap(plain(text))]
    columns = shown_columns(rows)
    tail = [
        "",
        *_table(rows, columns),
        *_wrap(table_note(columns, left_out)),
        f"report: {report_md} (for the issue thread: comment.md beside it)",
    ]
    return "\n".join([*head, *_verdicts(sentences, LINES - len(head) - len(tail)), *tail])


def _verdicts(sentences: list[str], room: int) -> list[str]:
    """The verdicts that fit in `room` lines, in their order: the candidate's first, then the
    last (what was not measured, and why; the correctness check), then the others; a line
    saying where the rest are takes the room of one."""
    wrapped = [_wrap(plain(sentence), "- ") for sentence in sentences]
    first = next((i for i, s in enumerate(sentences) if s.startswith(CANDIDATE_OPENING)), 0)
    kept: set[int] = set()
    for index in dict.fromkeys([first, len(wrapped) - 1, *range(len(wrapped))]):
        more = len(kept) + 1 < len(wrapped)  # a line for the rest is still needed
        if sum(len(wrapped[i]) for i in kept) + len(wrapped[index]) + more <= room:
            kept.add(index)
    left = ["- More verdicts are in comment.md."] if len(kept) < len(wrapped) else []
    return [line for i in sorted(kept) for line in wrapped[i]] + left


def _wrap(text: str, bullet: str = "") -> list[str]:
    """`text` in lines of WIDTH, a command in it never split (it is pasted from one line)."""
    kept = _COMMAND.sub(lambda m: m[0].replace(" ", _UNBROKEN), text)
    lines = textwrap.wrap(
        kept,
        WIDTH,
        initial_indent=bullet,
        subsequent_indent=" " * len(bullet),
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace(_UNBROKEN, " ") for line in lines]


def _table(rows: list[list], columns: list[int]) -> list[str]:
    """The rows as aligned columns: names to the left, figures to the right."""
    # a name from the run folder shown as md shows it: no control character reaches the terminal
    named = ([plain(md(row[0])), *(str(row[c]) for c in columns[1:])] for row in rows)
    cells = [[COLUMNS[c] for c in columns], *named]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]

    def line(values: list[str]) -> str:
        first = values[0].ljust(widths[0])
        return "  ".join([first, *(v.rjust(w) for v, w in zip(values[1:], widths[1:]))])

    return [line(cells[0]), "  ".join("-" * w for w in widths), *(line(c) for c in cells[1:])]
