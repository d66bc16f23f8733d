"""The scratch clone `tune upstream --check` works in, kept apart from the user's checkout.

The clone copies its objects (no hard link to the user's files), has no remote, and holds regular
files only: every committed symbolic link and special file is removed before anything reads it, so
no read or collected test follows a link out of the clone or into a device. What the clone leaves
out of the user's tree (uncommitted edits, untracked files, the links) is said in the report. Every
git call goes through `git.run_git`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pool_fusion_tuning.tuning.base.errors import UsageError

from .git import run_git
from .tvm_tree import BASE_COMMIT

# The largest file of the clone read whole (TVM's largest test file is under 1 MB).
LARGEST_READ = 8 * 2**20
# How many left-out files the report names before "and N more".
NAMED = 5


def clone_at_base(tree: Path, scratch: Path) -> tuple[Path, str]:
    """A clone of `tree` under `scratch` at BASE_COMMIT where `tree` holds it, else at its HEAD,
    and the commit checked out; UsageError where `tree` is not the top of a TVM git checkout."""
    if not (tree / "python" / "tvm").is_dir():
        raise UsageError(f"{tree} is not a TVM source tree (no python/tvm); give a clone")
    top = run_git(["rev-parse", "--show-toplevel"], tree, scratch=False)
    if top.returncode != 0:
        if "dubious ownership" in top.stderr:
            raise UsageError(
                f"git refuses {tree}: it is owned by another user; give a clone of your own "
                f"(git clone {tree} DIR)"
            )
        raise UsageError(f"{tree} is not a git checkout; give a clone of apache/tvm")
    if Path(top.stdout.strip()).resolve() != tree.resolve():
        raise UsageError(
            f"{tree} is a folder inside the git checkout {top.stdout.strip()}, not a checkout "
            "of its own; give a clone of apache/tvm"
        )
    clone = scratch / "tvm"
    done = run_git(
        ["clone", "-q", "--no-checkout", "--no-hardlinks", str(tree.resolve()), str(clone)],
        scratch,
        scratch=False,  # the user's own configuration says whether their tree is safe to read
    )
    if done.returncode != 0:
        raise UsageError(f"cannot clone {tree}: {done.stderr.strip()}")
    run_git(["remote", "remove", "origin"], clone)
    if run_git(["checkout", "-q", "--detach", BASE_COMMIT], clone).returncode != 0:
        run_git(["checkout", "-q", "--detach", "HEAD"], clone)
    return clone, run_git(["rev-parse", "HEAD"], clone).stdout.strip()


def remove_links(clone: Path) -> list[str]:
    """Remove every symbolic link and special file of the clone's work tree (never followed);
    their paths, relative to the clone."""
    removed = []
    for folder, folders, files in os.walk(clone):
        if Path(folder) == clone:
            folders[:] = [name for name in folders if name != ".git"]
        for name in [*folders, *files]:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                os.unlink(path)
                removed.append(str(path.relative_to(clone)))
        folders[:] = [name for name in folders if (Path(folder) / name).is_dir()]
    return sorted(removed)


def clone_text(path: Path) -> str:
    """The text of a regular file of the clone (a link is not followed), at most LARGEST_READ
    bytes; UsageError naming it otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise UsageError(f"cannot read {path} in the scratch clone: {error.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_size > LARGEST_READ:
            raise UsageError(
                f"{path} in the scratch clone is not a regular file of at most "
                f"{LARGEST_READ} bytes; the tree's file is left as it is"
            )
        return handle.read(LARGEST_READ + 1).decode("utf-8", errors="replace")


def left_out(tree: Path) -> list[str]:
    """The tree's uncommitted and untracked files as `git status` names them (read without taking
    a lock or writing the index): the clone holds committed files only."""
    done = run_git(
        ["status", "--porcelain", "--untracked-files=all", "--ignored=no"], tree, scratch=False
    )
    return [line[3:] for line in done.stdout.splitlines() if len(line) > 3]


def left_out_note(changed: list[str], links: list[str]) -> str:
    """The report's paragraph on what the clone left out of the tree, and that its code ran."""

    def named(paths: list[str]) -> str:
        more = f" and {len(paths) - NAMED} more" if len(paths) > NAMED else ""
        return ", ".join(f"`{p}`" for p in paths[:NAMED]) + more

    lines = [
        "The tree's own test code (its `conftest.py` files and tests) ran in the scratch clone "
        "with your user's rights; the clone is removed afterwards and has no remote.",
    ]
    if changed:
        lines.append(
            f"Left out, as the clone holds the committed files only: {len(changed)} uncommitted "
            f"or untracked file(s) of the tree ({named(changed)})."
        )
    if links:
        lines.append(
            f"Left out of the clone, never followed: {len(links)} symbolic link(s) or special "
            f"file(s) the tree commits ({named(links)})."
        )
    return "\n".join(["", *lines, ""])
