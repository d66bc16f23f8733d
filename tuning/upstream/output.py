"""Writing what `tune upstream` makes into --out, which may be a folder the user owns (a TVM
checkout) or one that someone else prepared.

Every file is written as the run folder writes its own (`runfolder.store.write_text`: a fresh
temporary file renamed over the name), so a link planted at a file's name is replaced and its
target left untouched. A link where a folder of the output goes (a checkout's own, or a planted
one) is refused: writing through it would write outside --out, replacing it would change the
user's checkout. A file that already holds other text (an edited file of a TVM checkout,
a PR text touched by hand) is not overwritten unless the user says so (`--force`): everything
is checked before anything is written, and a refusal is one line.
"""

from __future__ import annotations

from pathlib import Path

from pool_fusion_tuning.runfolder.store import write_text
from pool_fusion_tuning.tuning.base.errors import UsageError


def _parents(out: Path, relative: str) -> list[Path]:
    """The folders below `out` that `relative` goes through, outermost first."""
    parts = Path(relative).parts[:-1]
    return [out.joinpath(*parts[: i + 1]) for i in range(len(parts))]


def _problem(out: Path, relative: str, text: str, force: bool) -> str | None:
    """Why `text` may not be written at `out/relative`: "differs" for other text there (unless
    `force`), a sentence for what can never be replaced; None where it may."""
    for folder in _parents(out, relative):
        if folder.is_symlink():  # a checkout's own link, or a planted one: neither is touched
            return (
                f"{folder} is a symbolic link, and tune upstream writes {relative} below it: it "
                "neither writes through a link nor replaces one; give another --out"
            )
        if folder.exists() and not folder.is_dir():
            return f"{folder} is not a folder, and tune upstream writes {relative} below it"
    path = out / relative
    if path.is_symlink() or not path.exists():
        return None
    if not path.is_file():
        return f"{path} is not a regular file; move it away"
    try:
        same = path.read_bytes() == text.encode("utf-8")
    except OSError as error:
        return f"cannot read {path}: {error.strerror}"
    return None if same or force else "differs"


def _holds(out: Path, relative: str, text: str) -> bool:
    """Whether `out/relative` is a regular file, reached through no link, holding `text`."""
    path = out / relative
    if any(p.is_symlink() for p in [*_parents(out, relative), path]) or not path.is_file():
        return False
    return path.read_bytes() == text.encode("utf-8")


def _real_folders(out: Path, relative: str) -> None:
    """Make the folders of `relative` under `out` (none is a link: `_problem` refused it)."""
    for folder in _parents(out, relative):
        if not folder.is_dir():
            folder.mkdir()


def write_outputs(out: Path, files: dict[str, str], force: bool) -> dict[str, str]:
    """Write `files` (path under `out` -> text) into `out`; returns each path's fate, "written"
    or "unchanged". Refuses, writing nothing, where a file holds other text (without `force`)
    or something in the way cannot be replaced."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder (new or existing)")
    problems = {path: _problem(out, path, text, force) for path, text in files.items()}
    fixed = [found for found in problems.values() if found not in (None, "differs")]
    if fixed:
        raise UsageError(fixed[0])
    differ = [out / path for path, found in problems.items() if found == "differs"]
    if differ:
        more = f" (and {len(differ) - 1} more)" if len(differ) > 1 else ""
        raise UsageError(
            f"{differ[0]}{more} already holds other text than tune upstream writes there; "
            "move it away, or give --force to overwrite"
        )
    fates = {}
    try:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            if _holds(out, path, text):
                fates[path] = "unchanged"
                continue
            _real_folders(out, path)
            write_text(out / path, text)
            fates[path] = "written"
    except OSError as error:
        raise UsageError(f"cannot write under --out {out}: {error.strerror}") from None
    return fates
