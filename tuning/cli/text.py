"""The one check every text a user types goes through, apart from the options' module: `tune
report` uses it on a machine without TVM, and the options' module imports the arms (TVM)."""

from __future__ import annotations

import unicodedata

from tuning.base.errors import UsageError


def check_text(flag: str, text: str, names: str | None = None) -> None:
    """Refuse a control character (a newline, a tab, an escape, or a format character such as
    a right-to-left override, which makes a name read otherwise than it is) anywhere in an
    option's text, and, where the option `names` something, an empty or blank value."""
    bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        raise UsageError(f"{flag} holds a control character ({text!r}); type it without {bad!r}")
    if names is not None and not text.strip():
        raise UsageError(f"{flag} is {'blank' if text else 'empty'} ({text!r}): name {names}")
