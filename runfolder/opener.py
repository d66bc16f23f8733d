"""One way to open a run folder: created where it holds no run, else opened to be finished, with
its identity and settings checked and this process its only writer (`lock.py`).

The study's command line, `tune sweep` (a run per Case) and the models (a run per model) all
open their run folders here, so that a folder of another kind, made for another Case, model,
target or device, with other settings, or held by another command is refused in one line
(`RunError`), the same way for each.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .files import RUN_FILE, RunError
from .store import Run


def _what(meta: dict) -> str:
    return "a model" if meta.get("kind") == "model" else "the study"


def open_locked(path: Path, identity: dict | None = None) -> Run:
    """An existing run, made for `identity` where one is given, this process its only writer."""
    run = Run.open(path, identity)
    run.lock()
    return run


def open_run(path: Path, meta: dict, refuse: Callable[[dict], str | None] | None = None) -> Run:
    """The run folder at `path`, locked: created with `meta` where it holds no run; else the
    run it holds, refused where it is of another kind than `meta`'s (`kind`: absent for the
    study's), was made for another identity (`meta["identity"]`), or `refuse(stored meta)`
    says why it must not be continued (other settings)."""
    path = Path(path)
    if not (path / RUN_FILE).exists():
        return Run.create(path, meta)
    stored = Run.open(path).fields
    if stored.get("kind") != meta.get("kind"):
        raise RunError(
            f"{path} holds a run of {_what(stored)}, not of {_what(meta)}; choose another --out"
        )
    run = open_locked(path, meta["identity"])
    problem = refuse(run.fields) if refuse else None
    if problem:
        raise RunError(problem)
    return run
