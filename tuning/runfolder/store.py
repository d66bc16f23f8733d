"""The run folder: everything a run measured, written as it is measured, re-readable later.

A run folder may come from elsewhere (a colleague's upload, a crafted archive), so it is read as
untrusted: a file that is missing, truncated or garbled is named in one line with what to do,
a symbolic link inside it is refused, and every file is written through a fresh temporary file
and an atomic replace, which never follows a link planted at the name and never leaves half a
file (a kill or a full disk mid-write keeps the old file, or none).
"""

from __future__ import annotations

import contextlib
import json
import os
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


def read_json(path: Path) -> Any:
    """The file's data; RunError naming the file and what to do when it is missing or damaged."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise RunError(f"{path} is missing; {_repair(path, missing=True)}") from None
    except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError
        detail = str(error).splitlines()[0][:120] if str(error) else "empty"
        raise RunError(f"{path} is damaged ({detail}); {_repair(path)}") from None
    except OSError as error:
        raise RunError(f"cannot read {path}: {error.strerror}") from None
    found = file_problem(path, data)
    if found:  # valid JSON, but not what the commands read from this file
        raise RunError(f"{path} is damaged ({found}); {_repair(path)}")
    return data


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


def unsafe_entries(path: Path) -> list[Path]:
    """Symbolic links inside a run folder: a run writes none, so one was planted."""
    found = []
    for root, dirs, files in os.walk(path):
        found += [Path(root, name) for name in dirs + files if Path(root, name).is_symlink()]
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
        if not (path / RUN_FILE).is_file():
            raise RunError(
                f"{path} is not a run folder (no {RUN_FILE}): name the folder of a "
                "run, or start a new run with --out"
            )
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
        links = unsafe_entries(path)
        if links:
            raise RunError(
                f"{links[0]} is a symbolic link; a run folder holds only its own "
                "files: remove the link"
            )
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
