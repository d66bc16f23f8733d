"""Text from outside on its way into markdown meant for GitHub: one escaping for every report,
comment.md and PR.md.

Whatever a run file, spec, name, error or the environment holds is written as text, never markup: no
HTML, no code fence or table cell it could close, no link, no line break, no @mention that would
ping someone, and no password (`runfolder/redact.py`). Ordinary names (`inception_v3`, `ms-default`)
are left as they are.

`md(text)` is plain text for a paragraph or table cell; `code(text)` an inline code span (plain text
where a span could not hold it); `fenced(lines)` a code block no line can close. `plain` takes such
markdown back to the text it shows, for the console (so commands paste as printed).
"""

from __future__ import annotations

import re

from pool_fusion_tuning.runfolder.redact import redact

# Line breaks, control characters and the direction overrides that make text read otherwise.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Markdown's punctuation that can start markup anywhere in a line.
_MARKUP = re.compile(r"([\\`*\[\]|~])")
# '_' emphasises only where it is not inside a word (`inception_v3` stays as it is).
_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# Markup that only opens a line (a heading, a list, a quote, a rule).
_LINE_START = re.compile(r"^([#+=>-])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# GitHub links `@name` and `@org/team` (and pings them); a word joiner after '@' keeps the text.
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
WORD_JOINER = "\u2060"
# The longest text a cell or a sentence takes from outside.
LONGEST = 500


def md(text: object) -> str:
    """`text` (any value; str() of it) as plain markdown text: shown as it is, markup of none."""
    flat = _UNPRINTABLE.sub(" ", redact(str(text)))[:LONGEST]
    flat = re.sub(r"[&<>]", lambda m: _ENTITIES[m[0]], flat)
    flat = _MARKUP.sub(r"\\\1", flat)
    flat = _UNDERSCORE.sub(r"\\_", flat)
    flat = _LINE_START.sub(r"\\\1", flat)
    return _MENTION.sub("@" + WORD_JOINER, flat)


def code(text: object) -> str:
    """`text` as an inline code span; as `md` text where a span could not hold it (a backtick, a
    `|` splitting a table cell, a control character)."""
    plain = redact(str(text))
    if not plain or len(plain) > LONGEST or re.search(r"[`|]", plain) or _UNPRINTABLE.search(plain):
        return md(plain)
    if plain.startswith(" ") or plain.endswith(" "):  # a span strips one space each side
        return md(plain)
    return f"`{plain}`"


def fenced(lines: list[str], info: str = "") -> list[str]:
    """`lines` in a fenced code block none of them can close (the fence outruns any backtick
    run); unprintable characters shown as spaces, passwords hidden."""
    body = [_UNPRINTABLE.sub(" ", redact(str(line)))[: LONGEST * 4] for line in lines]
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *body, fence]


# What `md` and `code` add, each taken away by `plain`: a code span, a backslash escape, an
# entity, the word joiner after '@'.
_MARKED = re.compile(r"`([^`]+)`|\\([\\`*\[\]|~_#+=>-])|&(amp|lt|gt);|" + WORD_JOINER)
_ENTITY_TEXT = {"amp": "&", "lt": "<", "gt": ">"}


def plain(text: str) -> str:
    """Markdown made by `md` and `code` as the plain text it shows, so a command in it pastes as
    printed."""

    def unmark(match: re.Match) -> str:
        span, escaped, entity = match.groups()
        if span is not None:
            return span
        if escaped is not None:
            return escaped
        return _ENTITY_TEXT[entity] if entity else ""

    return _MARKED.sub(unmark, text)
