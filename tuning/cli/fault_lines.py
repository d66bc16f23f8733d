"""Failures of the machine rather than of the input, said in one line with what to do.

A full disk, a file that cannot be written, a storage server gone: the run folder stays
resumable (every file is written atomically, every measurement in one storage write), so the
line says how to continue once the cause is fixed. Anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import errno
import sqlite3

from pool_fusion_tuning.runfolder.redact import redact
from pool_fusion_tuning.tuning.base.errors import ProcessDied

_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
# The top-level modules of the packages `pip install -e .` installs (pyproject.toml).
DEPENDENCIES = ("tvm", "tvm_ffi", "numpy", "optuna", "xgboost", "psutil", "cloudpickle", "scipy")
_FULL_TEXT = (
    "No space left on device",
    "database or disk is full",
    "Disk quota exceeded",
    "File too large",
)


def fault_line(error: BaseException, resume: str) -> str | None:
    """The line for `error`, or None where it is not a failure of the machine. `resume` is
    the command that continues the run."""
    chain = _chain(error)  # Optuna wraps the storage's error in its own
    missing = next((e.name for e in chain if isinstance(e, ModuleNotFoundError)), None) or ""
    if (package := missing.split(".")[0]) in DEPENDENCIES:
        return (
            f"the package {package!r} is not installed; install the project's "
            "dependencies (pip install -e .), then run the command again"
        )
    text = _first_line(chain[-1])
    full = next((e for e in chain if getattr(e, "errno", None) in _FULL or _full_text(e)), None)
    if full is not None:  # said in the words of the error that found it full
        said = getattr(full, "strerror", None) or _full_text(full)
        return f"the disk is full ({said}); free some space, then {resume} continues the run"
    if isinstance(error, OSError):
        where = f" {error.filename}" if error.filename else ""
        return (
            f"cannot use{where}: {error.strerror or text}; fix that, then {resume} "
            "continues the run"
        )
    died = next((e for e in chain if isinstance(e, ProcessDied)), None)
    if died is not None:  # its own last words (an abort's message) are on the terminal above
        return f"{died} (its own output is above); fix the cause, then {resume} continues the run"
    if any(_is_storage_error(e) for e in chain):
        return (
            f"the Optuna storage failed ({type(chain[-1]).__name__}: {text}); once it "
            f"works again, {resume} continues the run"
        )
    return None


def _full_text(error: BaseException) -> str | None:
    """The words of `error` that say a disk or a database is full, if any."""
    return next((t for t in _FULL_TEXT if t in str(error)), None)


def _chain(error: BaseException) -> list[BaseException]:
    """The error and the errors it was raised from, outermost first."""
    found = [error]
    while len(found) < 10:
        cause = found[-1].__cause__ or found[-1].__context__
        if cause is None:
            break
        found.append(cause)
    return found


def _is_storage_error(error: BaseException) -> bool:
    if isinstance(error, sqlite3.Error):
        return True
    try:
        import optuna
    except ImportError:
        return False
    if isinstance(error, optuna.exceptions.StorageInternalError):
        return True
    try:
        import sqlalchemy.exc
    except ImportError:
        return False
    return isinstance(error, sqlalchemy.exc.SQLAlchemyError)


def _first_line(error: BaseException) -> str:
    return redact((str(error).strip().splitlines() or [type(error).__name__])[0][:200])
