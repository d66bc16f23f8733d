"""The run folder: everything a run measured, written as it is measured, re-readable later.

A run folder may come from elsewhere (a colleague's upload, a crafted archive), so it is read as
untrusted: a file that is missing, truncated or garbled is named in one line with what to do,
a symbolic link or a special file inside it is refused, and every file is written through a
fresh temporary file and an atomic replace, which never follows a link planted at the name and
never leaves half a file (a kill or a full disk mid-write keeps the old file, or none).

Every file the tool reads (of a run folder, a sweep folder, a Cases file) is read by
`read_bytes` here: opened without blocking and checked to be a regular file before a byte is
read, since a FIFO would hang the reader (and a thread stuck opening one ignores Ctrl-C) and a
device would feed it for ever. JSON is read strictly: NaN, Infinity and nesting deeper than a
file of the run has are damage, said in one line, never a traceback or a "nan us" report. The
few files written in place rather than replaced (the lock, the appended logs) are opened by
`open_in_place`, which refuses a link of any kind.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .shapes import file_problem, run_problem

RUN_FILE = "run.json"
FORMAT = 1
TMP_SUFFIX = ".tmp"
# The longest path a run writes below its folder (tuners/ms-default/database_tuning_record.json
# and its temporary name), so that an --out too long for the file system is refused up front.
LONGEST_INSIDE = 96
# The largest file read whole (a journal of a long study is a few MB; a trial file, KB).
LARGEST_READ = 256 * 2**20
# The figures a trial records per arm (`block_samples_us`), in the order reports give them.
FIGURES = ("call_path", "python_call", "gpu_queued")

# Read once, while the process has one thread: files are created with the user's usual mode.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


class RunError(ValueError):
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


_META_LOCK = threading.Lock()


def write_json(path: Path, data) -> None:
    write_text(path, json.dumps(data, indent=2, default=str))


class NotRegular(RunError):
    """A FIFO, socket, device or folder where a file is read or written, or a file too large to
    be one of a run's; the message names it (callers add what to do)."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
)


def _kind(mode: int) -> str:
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def _not_regular(path: Path, mode: int | None = None) -> NotRegular:
    """The error for a name that does not hold a regular file (`mode`: what stat found)."""
    if mode is None:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = 0
    return NotRegular(f"{path} is {_kind(mode)}, not a regular file")


def not_regular(path: Path) -> str | None:
    """What is at `path` where it is there and is not a regular file (a link to one is
    followed), for a file another library opens: "X is a FIFO, not a regular file"."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    return None if stat.S_ISREG(mode) else str(_not_regular(path, mode))


def read_bytes(path: Path) -> bytes:
    """The bytes of the regular file at `path` (a link to one is followed). Opened without
    blocking, then checked, then read: a FIFO, socket, device or folder raises NotRegular at
    once. FileNotFoundError and other OSErrors are the caller's to say."""
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
    if found.st_size > LARGEST_READ:  # a crafted (sparse) file would be read whole
        os.close(fd)
        raise NotRegular(f"{path} holds {found.st_size} bytes, more than any file of a run")
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def read_text(path: Path) -> str:
    """The UTF-8 text of the regular file at `path` (`read_bytes`)."""
    return read_bytes(path).decode("utf-8")


def loads(text: str | bytes) -> Any:
    """JSON as the tool writes it: ValueError for NaN, Infinity, a number too large for a
    float, a key given twice in one object (which Python would keep the last of, silently),
    and nesting deeper than Python's parser follows (its RecursionError, said as damage)."""
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


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def read_json(path: Path) -> Any:
    """The file's data; RunError naming the file and what to do when it is missing, damaged or
    not a regular file."""
    path = Path(path)
    try:
        data = loads(read_bytes(path).decode("utf-8"))
    except FileNotFoundError:
        raise RunError(f"{path} is missing; {_repair(path, missing=True)}") from None
    except NotRegular as error:
        raise RunError(f"{error}; {_repair(path)}") from None
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError
        detail = str(error).splitlines()[0][:120] if str(error) else "empty"
        raise RunError(f"{path} is damaged ({detail}); {_repair(path)}") from None
    except OSError as error:
        raise RunError(f"cannot read {path}: {error.strerror}") from None
    found = file_problem(path, data)
    if found:  # valid JSON, but not what the commands read from this file
        raise RunError(f"{path} is damaged ({found}); {_repair(path)}")
    return data


def in_place_problem(path: Path) -> str | None:
    """Why the run folder's file at `path` must not be written in place (by this tool, TVM or
    Optuna), if it must not: a link of any kind, or not a regular file. None where it is
    missing or a regular file of one name."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    return _in_place_problem(path, found)


def _in_place_problem(path: Path, found: os.stat_result) -> str | None:
    if not stat.S_ISREG(found.st_mode):
        return f"{path} is {_kind(found.st_mode)}, not a regular file"
    if found.st_nlink > 1:
        return f"{path} has {found.st_nlink} hard links: it is also a file outside the run"
    return None


def check_in_place(path: Path) -> None:
    """Refuse a file that TVM or Optuna would open and write in place (`in_place_problem`)."""
    found = in_place_problem(path)
    if found:
        raise RunError(f"{found}; a run folder holds only its own files: remove it")


def open_in_place(path: Path, flags: int) -> int:
    """A descriptor to write the run folder's file at `path` in place (append to a log, take
    the lock), created if missing and never truncated here: a symbolic link (O_NOFOLLOW), a
    hard link (another name of the same file, which writing would change outside the folder),
    a FIFO (which would block the open) or any other special file is refused in one line."""
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


def _repair(path: Path, missing: bool = False) -> str:
    """What to do about a file: the run file cannot be rebuilt, the rest can by a resume."""
    folder = next((p for p in path.parents if (p / RUN_FILE).is_file()), None)
    if path.name == RUN_FILE or folder is None:
        return "the run cannot be continued from it: start a new run with --out"
    if missing:
        return f"tune --resume {folder} measures or rebuilds it"
    return f"delete it, then tune --resume {folder} measures or rebuilds it"


def _short(value) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def check_folder_name(path: Path) -> None:
    """Refuse, before anything is measured, an --out no file of the run could be written to."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RunError(
            f"the run folder name {text!r} is not valid UTF-8; choose another --out"
        ) from None
    longest = max(len(os.fsencode(part)) for part in path.absolute().parts)
    total = len(os.fsencode(str(path.absolute()))) + LONGEST_INSIDE
    if longest > 255 or total > 4096:
        raise RunError(
            f"the run folder name is too long ({longest} bytes in one part, "
            f"{total} with the run's own files; at most 255 and 4096); choose a "
            "shorter --out"
        )
    if path.exists() and not path.is_dir():
        raise RunError(f"{path} exists and is not a folder; choose another --out")


def unsafe_entries(path: Path) -> list[tuple[Path, str]]:
    """Symbolic links and special files (FIFOs, sockets, devices) inside a run folder, with
    what each is: a run writes none, so one was planted."""
    found = []
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            mode = os.lstat(os.path.join(root, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                found.append((Path(root, name), _kind(mode)))
    return found


def run_identity(case: dict, target_kind: str, device: str) -> dict:
    """What a run, and its Optuna study, measure: a resume, or a worker joining the study, must
    match it."""
    return {"case": case, "target": target_kind, "device": device}


class Run:
    """A run folder. `identity` (case, target, device) decides whether a resume is allowed."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @property
    def meta(self) -> dict:
        return read_json(self.path / RUN_FILE)

    @classmethod
    def create(cls, path: Path, meta: dict) -> "Run":
        path = Path(path)
        check_folder_name(path)
        if path.exists() and any(path.iterdir()):
            if (path / RUN_FILE).exists():
                raise RunError(f"{path} already holds a run; continue it with --resume {path}")
            raise RunError(f"{path} exists and is not a run folder; choose another --out")
        made = not path.exists()
        try:
            path.mkdir(parents=True, exist_ok=True)
            run = cls(path)
            run.lock()
            if (path / RUN_FILE).exists():  # another command created it meanwhile
                raise RunError(f"{path} already holds a run; continue it with --resume {path}")
            write_json(path / RUN_FILE, {"format": FORMAT, **meta})
        except OSError as error:
            if made:  # leave nothing that would stop the same command from starting again
                from .lock import release

                with contextlib.suppress(OSError):
                    release(path)
                    path.rmdir()
            raise RunError(f"cannot write the run folder {path}: {error.strerror}") from None
        return run

    @classmethod
    def open(cls, path: Path, identity: dict | None = None) -> "Run":
        """Open an existing run; refuse one made for another Case, target or device, one
        whose run file is damaged, and one holding a symbolic link."""
        path = Path(path)
        if not os.path.lexists(path / RUN_FILE):
            raise RunError(
                f"{path} is not a run folder (no {RUN_FILE}): name the folder of a "
                "run, or start a new run with --out"
            )
        planted = unsafe_entries(path)
        if planted:
            entry, what = planted[0]
            raise RunError(f"{entry} is {what}; a run folder holds only its own files: remove it")
        run = cls(path)
        meta = run.meta
        if meta.get("format", FORMAT) != FORMAT:
            raise RunError(
                f"{path / RUN_FILE} has format {meta.get('format')!r}, and this tune "
                f"reads format {FORMAT}: use the tune that made the run"
            )
        found = run_problem(meta)
        if found:
            raise RunError(f"{path / RUN_FILE} is damaged ({found}); {_repair(path / RUN_FILE)}")
        if identity is not None:
            stored = meta["identity"]
            for key, value in identity.items():
                if stored.get(key) != value:
                    raise RunError(
                        f"{path} was made for another {key} ({_short(stored.get(key))}"
                        f", not {_short(value)}); start a new run with --out"
                    )
        if not os.access(path, os.W_OK):
            raise RunError(f"cannot write the run folder {path}")
        return run

    def lock(self) -> None:
        """Be the folder's only writer for the life of this process (`lock.py`), and clear
        the temporary files a killed writer left."""
        from .lock import FolderBusy, hold

        try:
            hold(self.path)
        except FolderBusy as error:
            raise RunError(str(error)) from None
        self._remove_stale_temporaries()

    def _remove_stale_temporaries(self) -> None:
        for root, _, files in os.walk(self.path):
            for name in files:
                if name.startswith(".") and name.endswith(TMP_SUFFIX):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(root, name))

    def update_meta(self, **changes) -> None:
        with _META_LOCK:  # tuners in threads update it side by side
            write_json(self.path / RUN_FILE, {**self.meta, **changes})

    def add_wall(self, phase: str, seconds: float) -> None:
        """Add `seconds` to the wall time of `phase` (a tuner, the comparison, the whole run),
        summed over the resumes that worked on it."""
        with _META_LOCK:
            meta = self.meta
            walls = meta.get("phase_wall_s", {})
            walls[phase] = walls.get(phase, 0.0) + seconds
            write_json(self.path / RUN_FILE, {**meta, "phase_wall_s": walls})

    # Trials of the end-to-end harness, one file each, written when the trial ends.
    def trial_path(self, index: int) -> Path:
        return self.path / "trials" / f"trial_{index}.json"

    def trials(self) -> list[dict]:
        found = [
            p
            for p in (self.path / "trials").glob("trial_*.json")
            if p.stem.split("_", 1)[1].isdigit()
        ]
        return [read_json(p) for p in sorted(found, key=lambda p: int(p.stem.split("_")[1]))]

    def save_trial(self, result: dict) -> None:
        write_json(self.trial_path(result["trial"]), result)

    def tuner_dir(self, name: str) -> Path:
        path = self.path / "tuners" / name
        path.mkdir(parents=True, exist_ok=True)
        return path
