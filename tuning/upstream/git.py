"""Every git call of `tune upstream`, in one place, with git's repository variables removed.

A wrapper script or a bare-repository dotfile setup exports `GIT_DIR`, `GIT_WORK_TREE` or
`GIT_INDEX_FILE`; git obeys them over `-C` and the working folder, so a call meant for a scratch
repository would commit into, check out or overwrite the index of the user's own. Each call here
runs with every variable `git rev-parse --local-env-vars` prints (git 2.39: the repository, its
objects, index and work tree, configuration given on the command line) and the others that pick
a repository or a program git runs removed from its environment. A call on a scratch repository
also reads no user or system configuration file (`scratch=True`): hooks, filters and signing set
there must not run in it or change the patch's form; a call on the user's own tree reads theirs
(`safe.directory`, their identity).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pool_fusion_tuning.tuning.base.errors import UsageError

# `git rev-parse --local-env-vars`, and the variables that pick a repository or configuration.
REPOSITORY_VARIABLES = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_INDEX_VERSION",
        "GIT_QUARANTINE_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_ASKPASS",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_EXTERNAL_DIFF",
        "GIT_DIFF_OPTS",
        "GIT_PAGER",
    }
)


def git_environment(extra: dict | None = None, scratch: bool = True) -> dict:
    """The environment of a git call: the process's, without git's repository variables (and
    `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`), with `extra`; on a scratch repository without the
    user's and the system's configuration."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in REPOSITORY_VARIABLES
        and not key.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    }
    env["GIT_OPTIONAL_LOCKS"] = "0"  # `git status` on the user's tree writes no index
    env["GIT_TERMINAL_PROMPT"] = "0"
    if scratch:  # else the user's own files (safe.directory, their identity) are read
        env |= {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        env.pop("GIT_CONFIG_SYSTEM", None)
    return env | (extra or {})


def run_git(
    args: list[str], cwd: Path | None = None, extra: dict | None = None, scratch: bool = True
) -> subprocess.CompletedProcess:
    """`git ARGS` in `cwd` with `git_environment`; UsageError where git is not on the PATH."""
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="replace",
            env=git_environment(extra, scratch),
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise UsageError("tune upstream needs git on the PATH") from None
