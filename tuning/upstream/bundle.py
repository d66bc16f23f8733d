"""Everything `tune upstream` writes, by its path under --out: the TVM files as the patch leaves
them, the patch, and the pull request's description."""

from __future__ import annotations

from .patch import PATCH, format_patch, patched_files
from .pr_text import Figures, render_pr

PR = "PR.md"


def upstream_files(author: tuple[str, str], figures: Figures) -> dict[str, str]:
    """Path under --out -> text."""
    files = patched_files()
    return {**files, PATCH: format_patch(files, author), PR: render_pr(figures, author)}
