"""A sweep's folder (`tune sweep`): its own file (sweep.json: its marker, its settings, what the
sweep records beside them) and one run folder per Case; written only where it is the sweep's
own, one sweep at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .checker import problem
from .files import RunError, loads, read_bytes, read_json, write_json
from .lock import LOCK_FILE, hold
from .records import SWEEP_KIND, Sweep
from .store import check_folder_name

SWEEP_JSON = "sweep.json"  # as `reports.sweep_report` reads it


def open_sweep_folder(out: Path, settings: dict, recorded: Callable[[], dict]) -> None:
    """The sweep's folder, this process its only writer: refused where it is not a sweep's
    (`check_sweep_folder`) or holds a sweep with other settings; its sweep.json written with
    the settings and what `recorded()` gives."""
    check_sweep_folder(out)
    stored_path = out / SWEEP_JSON
    if stored_path.exists() and read_json(stored_path)["settings"] != settings:
        raise RunError(f"{out} holds a sweep with other settings; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    hold(out)  # one sweep per folder at a time
    write_json(stored_path, {"kind": SWEEP_KIND, "settings": settings, **recorded()})


def check_sweep_folder(out: Path) -> None:
    """Refuse an --out the sweep does not own: only a new or empty folder, or one whose
    sweep.json is a sweep's (its marker, or the shape of one made before the marker), is
    written into. (A folder that holds only the lock is a sweep stopped before its first
    file.) `tune --out` refuses a folder that is not a run just the same."""
    check_folder_name(out)
    if not out.exists():
        return
    entries = sorted(entry.name for entry in out.iterdir())
    if set(entries) <= {LOCK_FILE} or (SWEEP_JSON in entries and _is_sweep(out / SWEEP_JSON)):
        return
    held = ", ".join(repr(name) for name in entries[:3]) + (", ..." if len(entries) > 3 else "")
    raise RunError(
        f"{out} exists and is not a sweep folder (it holds {held}); choose another --out"
    )


def _is_sweep(path: Path) -> bool:
    try:
        data = loads(read_bytes(path))
    except (OSError, ValueError):  # unreadable, not JSON, or not a regular file: not a sweep's
        return False
    if isinstance(data, dict) and data.get("kind") == SWEEP_KIND:
        return True  # read_json says later if it is damaged
    return problem(data, Sweep) is None
