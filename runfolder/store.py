"""The run folder: everything a run measured, written as it is measured, re-readable later.

A run is opened (`Run.open`) only where its run file is whole, no link or special file was planted
in it, and it was made for this Case, target and device; files go through `files.py`, one writer at
a time (`lock.py`).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import threading
from pathlib import Path
from typing import Any, cast

from .checker import run_problem
from .files import (  # noqa: F401  (re-exported: the run folder's file functions, used by many)
    RUN_FILE,
    TMP_SUFFIX,
    NotRegular,
    RunError,
    check_in_place,
    file_kind,
    folder_writer,
    in_place_problem,
    loads,
    not_regular,
    open_in_place,
    read_bytes,
    read_json,
    read_record,
    read_text,
    repair_advice,
    write_bytes,
    write_json,
    write_text,
)
from .lock import hold, release
from .model_records import MODEL_KIND, ModelRunMeta
from .records import RunMeta, Trial

FORMAT = 1
# The longest path a run writes below its folder (with its temporary name), so an --out too long for
# the file system is refused up front.
LONGEST_INSIDE = 96
# The figures a trial records per arm (`block_samples_us`), in the order reports give them.
FIGURES = ("call_path", "python_call", "gpu_queued")

_META_LOCK = threading.Lock()


def _short(value: object) -> str:
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


def _holds_a_run(path: Path) -> RunError:
    """A new run's folder that holds one: both ways on, as a user may want either."""
    return RunError(
        f"{path} already holds a run: finish it with --resume {shlex.quote(str(path))}, or "
        "start a new run in another folder with --out NEWDIR"
    )


def unsafe_entries(path: Path) -> list[tuple[Path, str]]:
    """Symbolic links and special files inside a run folder, with what each is: a run writes
    none, so one was planted."""
    found = []
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            mode = os.lstat(os.path.join(root, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                found.append((Path(root, name), file_kind(mode)))
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
    def meta(self) -> RunMeta:
        """The study's run file; its type and Case are checked when the run is opened, so readers
        open it first."""
        return cast(RunMeta, read_json(self.path / RUN_FILE))

    @property
    def model_meta(self) -> ModelRunMeta:
        """A model run's run file (`kind` "model"), checked as `meta` is."""
        return cast(ModelRunMeta, read_json(self.path / RUN_FILE))

    @property
    def fields(self) -> dict[str, Any]:
        """The run file's fields, of a run of either kind, for what serves both (opening,
        updating, refusing a resume)."""
        return cast(dict[str, Any], read_json(self.path / RUN_FILE))

    @property
    def is_model(self) -> bool:
        """Whether the run is a real network's (`tune model`) rather than a study's."""
        return self.fields.get("kind") == MODEL_KIND

    @classmethod
    def create(cls, path: Path, meta: dict) -> "Run":
        """A new run in `path` (missing or empty), locked, its run file holding `meta`; a folder
        holding anything else is refused, and one this call made is removed where the run file
        cannot be written."""
        path = Path(path)
        check_folder_name(path)
        if path.exists() and any(path.iterdir()):
            if (path / RUN_FILE).exists():
                raise _holds_a_run(path)
            raise RunError(f"{path} exists and is not a run folder; choose another --out")
        made = not path.exists()
        try:
            path.mkdir(parents=True, exist_ok=True)
            run = cls(path)
            run.lock()
            if (path / RUN_FILE).exists():  # another command created it meanwhile
                raise _holds_a_run(path)
            write_json(path / RUN_FILE, {"format": FORMAT, **meta})
        except OSError as error:
            if made:  # leave nothing that would stop the same command from starting again
                with contextlib.suppress(OSError):
                    release(path)
                    path.rmdir()
            raise RunError(f"cannot write the run folder {path}: {error.strerror}") from None
        return run

    @classmethod
    def open(cls, path: Path, identity: dict | None = None) -> "Run":
        """Open an existing run; refuse one for another Case, target or device, a damaged run
        file, or a symbolic link inside."""
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
        meta = run.fields
        if meta.get("format", FORMAT) != FORMAT:
            raise RunError(
                f"{path / RUN_FILE} has format {meta.get('format')!r}, and this tune "
                f"reads format {FORMAT}: use the tune that made the run"
            )
        found = run_problem(meta)
        if found:
            raise RunError(
                f"{path / RUN_FILE} is damaged ({found}); {repair_advice(path / RUN_FILE)}"
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
        hold(self.path)  # FolderBusy is a RunError
        self._remove_stale_temporaries()

    def _remove_stale_temporaries(self) -> None:
        for root, _, files in os.walk(self.path):
            for name in files:
                if name.startswith(".") and name.endswith(TMP_SUFFIX):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(root, name))

    def update_meta(self, **changes: Any) -> None:
        with _META_LOCK:  # tuners in threads update it side by side
            write_json(self.path / RUN_FILE, {**self.fields, **changes})

    def drop_meta(self, *keys: str) -> None:
        with _META_LOCK:
            kept = {key: value for key, value in self.fields.items() if key not in keys}
            write_json(self.path / RUN_FILE, kept)

    def add_wall(self, phase: str, seconds: float) -> float:
        """Add `seconds` to `phase`'s wall time (a tuner, the comparison, the whole run), summed
        over resumes; returns the sum."""
        with _META_LOCK:
            meta = self.fields
            walls = meta.get("phase_wall_s", {})
            walls[phase] = walls.get(phase, 0.0) + seconds
            write_json(self.path / RUN_FILE, {**meta, "phase_wall_s": walls})
            return walls[phase]

    # Trials of the end-to-end harness, one file each, written when the trial ends.
    def trial_path(self, index: int) -> Path:
        return self.path / "trials" / f"trial_{index}.json"

    def trials(self) -> list[Trial]:
        found = [
            p
            for p in (self.path / "trials").glob("trial_*.json")
            if p.stem.split("_", 1)[1].isdigit()
        ]
        ordered = sorted(found, key=lambda p: int(p.stem.split("_")[1]))
        return [read_record(p, Trial) for p in ordered]

    def save_trial(self, result: Trial) -> None:
        write_json(self.trial_path(result["trial"]), result)

    def tuner_dir(self, name: str) -> Path:
        path = self.path / "tuners" / name
        path.mkdir(parents=True, exist_ok=True)
        return path
