"""The figure files `tune upstream --run/--sweep/--models/--bench` read, read as the run folder's
files are: through `runfolder.files` (a regular file of bounded size, strict JSON: no NaN or
Infinity), then checked against the type of what the PR text reads of each (`figure_records.py`),
so a crafted or damaged file is one line naming it, never a traceback or "nan us" in PR.md.
"""

from __future__ import annotations

from pathlib import Path

from pool_fusion_tuning.runfolder.checker import problem
from pool_fusion_tuning.runfolder.files import NotRegular, loads, read_bytes
from pool_fusion_tuning.tuning.base.errors import UsageError

from .figure_records import FIGURE_RECORDS


def read_figures(given: Path, name: str, option: str, written_by: str) -> dict:
    """The JSON file `name` in the folder `given` (or `given` itself, the file), checked
    against the shape the PR text reads; one line naming it and what to give instead where it
    is missing, not a regular file, damaged or of another shape."""
    path = given / name if given.is_dir() else given
    try:
        data = loads(read_bytes(path))
    except FileNotFoundError:
        raise UsageError(
            f"{path} is missing; {option} takes a folder holding {name}, or the file ({written_by})"
        ) from None
    except NotRegular as error:
        raise UsageError(f"{error}; {option} takes a folder holding {name}, or the file") from None
    except (ValueError, UnicodeDecodeError) as error:
        detail = str(error).splitlines()[0][:120] if str(error) else "empty"
        raise UsageError(f"{path} is damaged ({detail}); give {option} another {name}") from None
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    found = problem(data, FIGURE_RECORDS[name])
    if found:
        raise UsageError(f"{path} is not a {name} ({found[:200]}); give {option} another")
    bench_lists = [sorted(row["lists"]) for row in data.get("kernels", [])]
    if name == "window_bench.json" and (
        any(not lists or lists != bench_lists[0] for lists in bench_lists)
        or len({_timed(e) for r in data["kernels"] for e in r["lists"].values()} - {None}) > 1
        or any(_timed(e) is None for r in data["kernels"] for e in r["lists"].values())
    ):
        raise UsageError(
            f"{path}'s kernels are not all timed (median and quartiles) under the same lists; "
            f"give {option} another"
        )
    return data


def _timed(entry: dict) -> bool | None:
    """Whether a bench entry is timed (its median and quartiles), None for one half timed."""
    found = {key in entry for key in ("median_us", "q1_us", "q3_us")}
    return found.pop() if len(found) == 1 else None


def recorded_environments(given: Path) -> list[dict]:
    """The environments a run folder recorded: its environment.json, then those of the runs in
    it (each read as above: regular files only, capped, strict JSON; a damaged one is passed
    over)."""
    folder = given if given.is_dir() else given.parent
    found = []
    for path in [folder / "environment.json", *sorted(folder.glob("*/environment.json"))[:100]]:
        try:
            data = loads(read_bytes(path))
        except (OSError, ValueError, UnicodeDecodeError):  # NotRegular is a ValueError
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def recorded_date(given: Path) -> str:
    """The date a run folder recorded: its own environment's, or that of the first run in it."""
    for environment in recorded_environments(given):
        date = environment.get("date")
        if isinstance(date, str) and date.strip():
            return date[:10]
    return "date not recorded"
