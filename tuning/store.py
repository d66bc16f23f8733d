"""The run folder: everything a run measured, written as it is measured, re-readable later."""

from __future__ import annotations

import json
import os
from pathlib import Path

RUN_FILE = "run.json"
FORMAT = 1


class RunError(ValueError):
    """A run folder that cannot be used as asked; the message says why and what to do."""


def write_json(path: Path, data) -> None:
    """Write atomically, so a run killed mid-write never leaves a half file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, path)


def read_json(path: Path):
    return json.loads(Path(path).read_text())


def _short(value) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


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
        if path.exists() and any(path.iterdir()):
            if (path / RUN_FILE).exists():
                raise RunError(f"{path} already holds a run; continue it with --resume {path}")
            raise RunError(f"{path} exists and is not a run folder; choose another --out")
        try:
            path.mkdir(parents=True, exist_ok=True)
            write_json(path / RUN_FILE, {"format": FORMAT, **meta})
        except OSError as error:
            raise RunError(f"cannot write the run folder {path}: {error.strerror}") from None
        return cls(path)

    @classmethod
    def open(cls, path: Path, identity: dict | None = None) -> "Run":
        """Open an existing run; refuse one made for another Case, target or device."""
        path = Path(path)
        if not (path / RUN_FILE).exists():
            raise RunError(f"{path} is not a run folder (no {RUN_FILE})")
        run = cls(path)
        if identity is not None:
            stored = run.meta.get("identity", {})
            for key, value in identity.items():
                if stored.get(key) != value:
                    raise RunError(f"{path} was made for another {key} ({_short(stored.get(key))}"
                                   f", not {_short(value)}); start a new run with --out")
        if not os.access(path, os.W_OK):
            raise RunError(f"cannot write the run folder {path}")
        return run

    def update_meta(self, **changes) -> None:
        write_json(self.path / RUN_FILE, {**self.meta, **changes})

    # Trials of the end-to-end harness, one file each, written when the trial ends.
    def trial_path(self, index: int) -> Path:
        return self.path / "trials" / f"trial_{index}.json"

    def trials(self) -> list[dict]:
        found = sorted((self.path / "trials").glob("trial_*.json"),
                       key=lambda p: int(p.stem.split("_")[1]))
        return [read_json(p) for p in found]

    def save_trial(self, result: dict) -> None:
        write_json(self.trial_path(result["trial"]), result)

    def tuner_dir(self, name: str) -> Path:
        path = self.path / "tuners" / name
        path.mkdir(parents=True, exist_ok=True)
        return path
