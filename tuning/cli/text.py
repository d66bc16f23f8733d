"""The one check every text a user types goes through, apart from the options' module: `tune
report` uses it on a machine without TVM, and the options' module imports the arms (TVM)."""

from __future__ import annotations

import unicodedata

from pool_fusion_tuning.tuning.base.errors import UsageError


def check_text(flag: str, text: str, names: str | None = None) -> None:
    """Refuse a control character (a newline, a tab, an escape, or a format character such as
    a right-to-left override, which makes a name read otherwise than it is) anywhere in an
    option's text, and, where the option `names` something, an empty or blank value."""
    bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        raise UsageError(f"{flag} holds a control character ({text!r}); type it without {bad!r}")
    if names is not None and not text.strip():
        raise UsageError(f"{flag} is {'blank' if text else 'empty'} ({text!r}): name {names}")


# The longest error line shown whole; a longer one keeps its start and its end (the advice).
LONGEST_LINE = 2000
LONGEST_WORD = 200


def shown(text: str) -> str:
    """An error line as the terminal gets it: each control or format character written as an
    escape (an escape code in a name a file or an option gave does not reach the terminal raw,
    a newline does not break the one line), an echoed run of more than LONGEST_WORD characters
    and a line of more than LONGEST_LINE shortened."""
    text = "".join(
        c.encode("unicode_escape").decode("ascii")
        if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")
        else c
        for c in text
    )
    words = [
        f"{w[: LONGEST_WORD // 2]}…({len(w):,} characters)" if len(w) > LONGEST_WORD else w
        for w in text.split(" ")
    ]
    text = " ".join(words)
    if len(text) > LONGEST_LINE:
        text = f"{text[: LONGEST_LINE // 2]} … {text[-LONGEST_LINE // 4 :]}"
    return text
