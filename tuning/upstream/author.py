"""Who the patch is from: `--author "Name <email>"`, else git's own identity (its GIT_AUTHOR_*
variables, then user.name and user.email). A patch with a made-up author cannot be sent, so
where neither names one, the command asks for --author instead of inventing it."""

from __future__ import annotations

import os
import re

from pool_fusion_tuning.tuning.base.errors import UsageError

from .git import run_git

AUTHOR = re.compile(r"(?P<name>[^<>\n]*[^<>\s])\s*<(?P<email>[^<>\s]+@[^<>\s]+)>")
ASK = 'give the patch\'s author with --author "Name <email>"'


def parse_author(text: str) -> tuple[str, str]:
    """(name, email) of `Name <email>`; UsageError for anything else."""
    found = AUTHOR.fullmatch(text.strip())
    if found is None:
        raise UsageError(f'--author {text!r} is not of the form "Name <email>"; {ASK}')
    return found["name"], found["email"]


def _git_config(key: str) -> str:
    try:  # the user's own configuration, no repository named by a variable
        done = run_git(["config", "--get", key], scratch=False)
    except UsageError:  # no git: the patch is written by git anyway, which says so later
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def patch_author(given: str | None) -> tuple[str, str]:
    """The patch's author, from --author or from git; UsageError where git knows no one."""
    if given is not None:
        return parse_author(given)
    name = os.environ.get("GIT_AUTHOR_NAME") or _git_config("user.name")
    email = os.environ.get("GIT_AUTHOR_EMAIL") or _git_config("user.email")
    if not name or not email:
        raise UsageError(f"git has no user.name and user.email here; {ASK}")
    return parse_author(f"{name} <{email}>")
