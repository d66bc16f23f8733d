"""Names a run file gives for parts of a folder (a model of `tune models`, a Case of a sweep, a
tuner): names, never paths.

A run folder may come from elsewhere, so a name read from one of its files is checked before a
path is made of it: one plain name (no `/`, no `..`, no control or direction character), and
the part it names is never a symbolic link, so that neither a report nor a resume reads or
writes outside the folder it was given. Every reader of such a name goes through `member`.
"""

from __future__ import annotations

import re
from pathlib import Path

from .store import RunError

# One path component of printable characters: no separator, NUL, control character or
# right-to-left override (a name that would read differently than it is).
_PLAIN = re.compile(r"[^/\\\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]{1,200}")


def plain_name(name: object) -> bool:
    """Whether `name` is one plain name (text, one path component, not `.` or `..`)."""
    return isinstance(name, str) and name not in (".", "..") and _PLAIN.fullmatch(name) is not None


def member(folder: Path, name: object, source: Path) -> Path:
    """`folder / name`, where `name` (read from the file `source`) is a plain name and what it
    names is not a symbolic link; RunError in one line otherwise."""
    if not plain_name(name):
        raise RunError(
            f"{source} is damaged (it names {name!r}, which is not a plain name of a folder "
            f"inside {folder}); restore it from a copy"
        )
    path = Path(folder) / str(name)
    if path.is_symlink():
        raise RunError(f"{path} is a symbolic link; a run folder is never followed through one")
    return path
