"""Optuna storages by URL, opened without harm to what they hold.

`sqlite:///PATH` and other SQLAlchemy URLs are RDB storages (with heartbeats, `heartbeat.py`);
`journal://PATH` is a journal file. A damaged storage file is refused in one line before Optuna
touches it, since Optuna would write to it (a study missing from a garbled journal is created anew
at its end); so is one that is not a regular file (Optuna would hang on a FIFO) and a link in the
run folder (Optuna would write through it). A password comes from the environment variable
`password_env` names, so none is ever stored (`redact.py`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from pool_fusion_tuning.runfolder.redact import (
    has_password,
    query_password,
    redact,
    remember_secret,
    with_password,
    without_password,
)
from pool_fusion_tuning.runfolder.store import RunError, check_in_place, not_regular, read_bytes

from .heartbeat import heartbeat_options

if TYPE_CHECKING:
    import optuna

JOURNAL = "journal://"
SQLITE = "sqlite:///"
# How a password typed in a URL reaches `tune worker` processes: their environment, never their
# command line (`ps` shows it to every user).
CHILD_PASSWORD_ENV = "POOL_TUNING_STORAGE_PASSWORD"

# Passwords typed in a URL on this command line, keyed by the URL without them; never stored.
_typed: dict[str, str] = {}


def remember_password(url: str) -> str:
    """The URL to store (no password); its password, if any, is kept for this process only."""
    bare = without_password(url)
    if bare != url:
        _typed[bare] = _password_of(url)
        remember_secret(_typed[bare])
    return bare


def _password_of(url: str) -> str:
    from urllib.parse import unquote, urlsplit

    try:
        typed = urlsplit(url).password
    except ValueError:  # a port that is not a number: the server will say so
        typed = None
    return unquote(typed or "") or query_password(url) or ""


def password_for(url: str, password_env: str | None) -> str | None:
    """The password to connect with: typed on this command line, else from the variable
    `password_env` names; None leaves it to libpq (PGPASSWORD, ~/.pgpass)."""
    if has_password(url):
        return None  # the URL carries its own
    if url in _typed:
        return _typed[url]
    if not password_env:
        return None
    password = os.environ.get(password_env)
    remember_secret(password)
    if password is None:
        raise RunError(
            f"--storage-password-env names {password_env}, which is not set; "
            f"export {password_env}=... or use PGPASSWORD or ~/.pgpass"
        )
    return password


def default_storage_url(directory, workers: int = 1) -> str:
    """SQLite in the run folder; a journal file where SQLAlchemy is missing or several worker
    processes write at once (its file lock is safe for that)."""
    try:
        import sqlalchemy  # noqa: F401  (only whether it is there)
    except ImportError:
        workers = 0
    if workers == 1:
        return f"{SQLITE}{(directory / 'study.db').resolve()}"
    return f"{JOURNAL}{(directory / 'study.journal').resolve()}"


def storage_file(url: str) -> Path | None:
    """The file a storage URL names (SQLite or journal), None for a server."""
    for prefix in (JOURNAL, SQLITE):
        if url.startswith(prefix):
            return Path(url[len(prefix) :].split("?")[0])
    return None


def storage_for(
    directory: Path | None, url: str | None, password_env: str | None = None
) -> optuna.storages.BaseStorage:
    """An Optuna storage from a URL; None: the default in `directory`."""
    import optuna

    url = url or default_storage_url(directory)
    if url.startswith(JOURNAL):
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        return JournalStorage(JournalFileBackend(url[len(JOURNAL) :]))
    password = password_for(url, password_env)
    if password is not None:
        try:
            url = with_password(url, password)
        except ValueError as error:
            raise RunError(str(error)) from None
    with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna 5
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.storages.RDBStorage(url, **heartbeat_options())


def check_in_folder(url: str, folder: Path) -> None:
    """Refuse a storage file inside the run folder that Optuna would write through a link."""
    path = storage_file(url)
    if path is not None and path.parent.resolve().is_relative_to(folder.resolve()):
        check_in_place(path)  # the name itself, not what a link at it points to


def check_untouched(url: str) -> None:
    """Refuse a damaged storage file, or one that is not a regular file, before Optuna opens
    (and writes to) it."""
    path = storage_file(url)
    if path is None:
        return
    special = not_regular(path)
    if special:
        raise RunError(f"the Optuna storage {special}; pass another --storage")
    if not path.is_file() or path.stat().st_size == 0:
        return
    problem = _journal_problem(path) if url.startswith(JOURNAL) else _sqlite_problem(path)
    if problem:
        raise RunError(
            f"the Optuna storage {path} is damaged ({problem}); it was left as it "
            "is: restore it from a copy, or pass another --storage"
        )


# Optuna's tables (optuna.storages._rdb.models, Optuna 4 and 5) and those SQLAlchemy and SQLite
# add: a SQLite file holding any other is the user's own database, not a study's.
OPTUNA_TABLES = frozenset(
    {
        "studies",
        "study_directions",
        "study_system_attributes",
        "study_user_attributes",
        "trial_heartbeats",
        "trial_intermediate_values",
        "trial_params",
        "trial_system_attributes",
        "trial_user_attributes",
        "trial_values",
        "trials",
        "version_info",
        "alembic_version",
        "sqlite_sequence",
    }
)


def storage_problem(url: str, force: bool = False) -> str | None:
    """Why a run must not record `url` as its storage: SQLite in memory (never resumable), or,
    unless `force`, a SQLite file holding tables not Optuna's (Optuna would add its twelve beside
    them)."""
    if url.startswith("sqlite:") and (
        url.rstrip("/") in ("sqlite:", "sqlite:///:memory:") or "memory" in url.partition("?")[2]
    ):
        return (
            f"--storage {url} keeps the study in memory, and a run records its storage to be "
            "resumed from it: give a file, e.g. sqlite:///PATH/study.db"
        )
    path = storage_file(url)
    if force or path is None or not url.startswith(SQLITE) or not_regular(path):
        return None
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            found = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = {row[0] for row in found.fetchall()}
        finally:
            connection.close()
    except sqlite3.Error:
        return None  # not a database: check_untouched says so
    foreign = sorted(tables - OPTUNA_TABLES)
    if not foreign:
        return None
    named = ", ".join(foreign[:3]) + (" and more" if len(foreign) > 3 else "")
    return (
        f"the SQLite file {path} holds tables that are not Optuna's ({named}), and Optuna would "
        "add its own beside them: pass another --storage, or --storage-force to use it anyway"
    )


def _journal_problem(path: Path) -> str | None:
    for number, line in enumerate(read_bytes(path).splitlines(keepends=True), 1):
        if not line.endswith(b"\n"):
            return f"line {number} is cut short"
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            return f"line {number} is not a journal entry"
    return None


def _sqlite_problem(path: Path) -> str | None:
    """SQLite's own check, read-only. A hot journal left by a killed writer fails a read-only
    connection with OperationalError: SQLite's to roll back, not damage."""
    connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        rows = connection.execute("PRAGMA quick_check").fetchall()
    except sqlite3.OperationalError:
        return None
    except sqlite3.DatabaseError as error:
        return str(error)
    finally:
        connection.close()
    if rows == [("ok",)]:
        return None
    return " ".join(" ".join(str(row[0]) for row in rows[:3]).split())[:200]


def cannot_open(error: Exception) -> RunError:
    """A storage that failed to open, as the one line a user reads: a package missing (SQLite and
    servers go through SQLAlchemy) is not a damaged storage."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        package = error.name.split(".")[0]
        return RunError(
            f"this Optuna storage needs the Python package {package}, which is not installed: "
            f"pip install {package}, or pass --storage {JOURNAL}/PATH (a journal file, no "
            "package needed)"
        )
    return RunError(
        f"cannot open the Optuna storage ({said(error)}); it was left as it is: repair it or "
        "pass another --storage"
    )


def said(error: Exception) -> str:
    """An error from a storage backend as one line, with any password shown as ***."""
    first = (str(error).strip().splitlines() or [""])[0][:200]
    return redact(f"{type(error).__name__}: {first}")
