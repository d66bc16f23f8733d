"""The run folder's files, one by one: written atomically, read as untrusted (below `lock` and
`store`, which both use it).

A run folder may come from elsewhere (an upload, a crafted archive): a missing, truncated or garbled
file is named in one line with what to do. Every file is written through a fresh temporary file and
an atomic replace, which never follows a link planted at the name and never leaves half a file.

Every file the tool reads (run folder, sweep folder, Cases file) goes through `read_bytes`: opened
without blocking and checked to be a regular file first, since a FIFO would hang the reader
(ignoring Ctrl-C) and a device would feed it for ever. JSON is read strictly: NaN, Infinity and
excessive nesting are damage, said in one line. The few files written in place (the lock, appended
logs) are opened by `open_in_place`, which refuses a link of any kind.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from pool_fusion_tuning.baselines.user_error import UserError

from .checker import file_problem, problem

RUN_FILE = "run.json"
TMP_SUFFIX = ".tmp"

# Read once, while the process has one thread: files are created with the user's usual mode.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


# The largest file read whole (a journal of a long study is a few MB; a trial file, KB).
LARGEST_READ = 256 * 2**20


class RunError(UserError):
    """A run folder that cannot be used as asked; the message says why and what to do."""


def write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` by `data` atomically, never following a link planted at `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_UMASK)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:  # a full disk or a kill: no temporary file is left behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8", errors="backslashreplace"))


def folder_writer(folder: Path) -> Callable[[str, str], None]:
    """Writes files into one folder of the run (an arm's IR dumps), each as `write_text` does."""
    folder.mkdir(parents=True, exist_ok=True)
    return lambda name, text: write_text(folder / name, text)


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, default=str))


class NotRegular(RunError):
    """A FIFO, socket, device or folder where a file is read or written, or a file too large to
    be a run's; the message names it (callers add what to do)."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def _not_regular(path: Path, mode: int | None = None) -> NotRegular:
    """The error for a name that does not hold a regular file (`mode`: what stat found)."""
    if mode is None:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = 0
    return NotRegular(f"{path} is {file_kind(mode)}, not a regular file")


def not_regular(path: Path) -> str | None:
    """What is at `path` where it is not a regular file (links followed), for a file another
    library opens: "X is a FIFO, not a regular file"."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    return None if stat.S_ISREG(mode) else str(_not_regular(path, mode))


def read_bytes(path: Path, largest: int = LARGEST_READ) -> bytes:
    """The bytes of the regular file at `path` (links followed), at most `largest`. Opened
    without blocking, then checked, then read: a FIFO, socket, device or folder raises NotRegular
    at once; other OSErrors are the caller's to say."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno in (errno.ENXIO, errno.EISDIR):  # a socket cannot be opened
            raise _not_regular(path) from None
        raise
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        raise _not_regular(path, found.st_mode)
    if found.st_size > largest:  # a crafted (sparse) file would be read whole
        os.close(fd)
        limit = "any file of a run" if largest == LARGEST_READ else f"the {largest:,} allowed"
        raise NotRegular(f"{path} holds {found.st_size:,} bytes, more than {limit}")
    with os.fdopen(fd, "rb") as handle:
        return handle.read(largest + 1)


def read_text(path: Path, largest: int = LARGEST_READ) -> str:
    """The UTF-8 text of the regular file at `path` (`read_bytes`)."""
    return read_bytes(path, largest).decode("utf-8")


def loads(text: str | bytes) -> Any:
    """JSON as the tool writes it: ValueError for NaN, Infinity, a number too large for a float,
    a duplicate key (Python would silently keep the last), and nesting deeper than Python's
    parser follows."""
    try:
        return json.loads(
            text, parse_constant=_no_constant, parse_float=_finite, object_pairs_hook=_unique
        )
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _unique(pairs: list) -> dict:
    found = dict(pairs)
    if len(found) < len(pairs):
        twice = next(key for i, (key, _) in enumerate(pairs) if key in dict(pairs[:i]))
        raise ValueError(f"key {twice!r} is given twice")
    return found


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


Record = TypeVar("Record")


def read_record(path: Path, kind: type[Record]) -> Record:
    """The file's data, checked to be a `kind` (of `records.py`); RunError naming the file and
    what to do when it is missing, damaged, not regular or not a `kind`."""
    path = Path(path)
    data = _load(path)
    return _checked(path, data, problem(data, kind))


def read_json(path: Path) -> Any:
    """The file's data, checked against its name's type (`checker.record_type`); RunError naming
    the file and what to do when it is missing, damaged or not regular."""
    path = Path(path)
    data = _load(path)
    return _checked(path, data, file_problem(path, data))


def _checked(path: Path, data: Any, found: str | None) -> Any:
    if found:  # valid JSON, but not what the commands read from this file
        raise RunError(f"{path} is damaged ({found}); {repair_advice(path)}")
    return data


def _load(path: Path) -> Any:
    try:
        data = loads(read_bytes(path).decode("utf-8"))
    except FileNotFoundError:
        raise RunError(f"{path} is missing; {repair_advice(path, missing=True)}") from None
    except NotRegular as error:
        raise RunError(f"{error}; {repair_advice(path)}") from None
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError
        detail = str(error).splitlines()[0][:120] if str(error) else "empty"
        raise RunError(f"{path} is damaged ({detail}); {repair_advice(path)}") from None
    except OSError as error:
        raise RunError(f"cannot read {path}: {error.strerror}") from None
    return data


def in_place_problem(path: Path) -> str | None:
    """Why the file at `path` must not be written in place (by this tool, TVM or Optuna): a link
    of any kind, or not a regular file. None where it is missing or a regular file of one name."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    return _in_place_problem(path, found)


def _in_place_problem(path: Path, found: os.stat_result) -> str | None:
    if not stat.S_ISREG(found.st_mode):
        return f"{path} is {file_kind(found.st_mode)}, not a regular file"
    if found.st_nlink > 1:
        return f"{path} has {found.st_nlink} hard links: it is also a file outside the run"
    return None


def check_in_place(path: Path) -> None:
    """Refuse a file that TVM or Optuna would open and write in place (`in_place_problem`)."""
    found = in_place_problem(path)
    if found:
        raise RunError(f"{found}; a run folder holds only its own files: remove it")


def open_in_place(path: Path, flags: int) -> int:
    """A descriptor to write the file at `path` in place (a log, the lock), created if missing,
    never truncated; refused in one line: a symbolic link (O_NOFOLLOW), a hard link (writing
    would change a file outside the folder), a FIFO (the open would block) or another special
    file."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            check_in_place(path)  # says which
        raise
    found = _in_place_problem(path, os.fstat(fd))
    if found:
        os.close(fd)
        raise RunError(f"{found}; a run folder holds only its own files: remove it")
    os.set_blocking(fd, True)
    return fd


def repair_advice(path: Path, missing: bool = False) -> str:
    """What to do about a file: the run file cannot be rebuilt, the rest can by a resume."""
    folder = next((p for p in path.parents if (p / RUN_FILE).is_file()), None)
    if path.name == RUN_FILE or folder is None:
        return "the run cannot be continued from it: start a new run with --out"
    finish = _finishing_command(folder)
    if missing:
        return f"{finish} measures or rebuilds it"
    return f"delete it, then {finish} measures or rebuilds it"


def _finishing_command(folder: Path) -> str:
    """What finishes the run in `folder`: `tune --resume` for a study's; for a model's (which
    `tune --resume` refuses), its `tune model` command again."""
    try:
        meta = loads(read_bytes(folder / RUN_FILE))
    except (OSError, ValueError, UnicodeDecodeError):
        meta = None
    if not isinstance(meta, dict) or meta.get("kind") != "model":
        return f"tune --resume {folder}"
    command = meta.get("command")
    if isinstance(command, str) and command.startswith("tune model") and command.isprintable():
        return f"the same command ({command})"
    return f"the same tune model command with --out {folder}"
