"""PR.md's figures where no folder is given: the H200 runs committed under reports/h200/, each
read from the archive its run folder is kept in, with the date its run
recorded (the environment.json of a run it holds where the file itself has none)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

H200 = Path(__file__).resolve().parents[2] / "reports" / "h200"
# option -> (the file, or archive and member, holding the figures; where the run's date is).
SOURCES = {
    # The study and the benchmark measured with the shipped rule, its hash recorded
    # (evidence/, H200 2026-12-04: EVIDENCE_COMMAND); the sweep and the models predate the stamp.
    "--run": (
        ("evidence/run.tar.xz", "run/report.json"),
        ("evidence/run.tar.xz", "run/environment.json"),
    ),
    "--sweep": (
        ("sweep/cases.tar.xz", "sweep/sweep.json"),
        ("sweep/cases.tar.xz", "sweep/issue/environment.json"),
    ),
    "--models": (
        ("models/models.tar.xz", "models/models.json"),
        ("models/models.tar.xz", "models/resnet50/environment.json"),
    ),
    "--bench": (
        ("evidence/window_bench.tar.xz", "window/window_bench.json"),
        ("evidence/window_bench.tar.xz", "window/window_bench.json"),
    ),
}


def _read(file: str, member: str) -> dict:
    with tarfile.open(H200 / file) as archive:
        found = archive.extractfile(member)
        if found is None:
            raise RuntimeError(f"{file} holds no file {member}")
        return json.loads(found.read())


def committed(option: str) -> tuple[dict, Path, str]:
    """The figures' data for `option`, where they are (relative to the project), and the date
    of the run (YYYY-MM-DD)."""
    (file, member), (dated, dated_member) = SOURCES[option]
    data = _read(file, member)
    environment = _read(dated, dated_member)
    date = str(environment.get("date") or environment.get("environment", {}).get("date", ""))
    where = H200.relative_to(H200.parents[1]) / file
    return data, where / member, date[:10] or "date not recorded"


def committed_environments(option: str) -> list[dict]:
    """Every environment.json in the archive that holds `option`'s figures."""
    (file, _), _ = SOURCES[option]
    found = []
    with tarfile.open(H200 / file) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.endswith("/environment.json"):
                handle = archive.extractfile(member)
                data = json.loads(handle.read()) if handle is not None else None
                found += [data] if isinstance(data, dict) else []
    return found
