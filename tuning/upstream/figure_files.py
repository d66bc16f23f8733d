"""The figure files `tune upstream --run/--sweep/--models/--bench` read, read as the run folder's
files are: through `runfolder.files` (a regular file of bounded size, strict JSON: no NaN or
Infinity), then checked against the shape of what the PR text reads of each (`matching`), so a
crafted or damaged file is one line naming it, never a traceback or "nan us" in PR.md.
"""

from __future__ import annotations

from pathlib import Path

from tuning.base.errors import UsageError
from tuning.runfolder.files import NotRegular, loads, read_bytes
from tuning.runfolder.matching import NUMBER, Each, mismatch
from tuning.runfolder.shapes import TIME, TIME_OR_NONE

# A ratio as reports/comparisons.py writes it: `ratio_text` reads these.
RATIO = (
    {"ratio": NUMBER, "low": NUMBER, "high": NUMBER, "confidence": NUMBER},
    {"ratio": NUMBER, "low?": None},
    None,
)
TEXT = (str, int, None)
LAUNCH = (int, [int], str, None)
REPORT = {
    "command?": TEXT,
    "device?": TEXT,
    "trials?": TEXT,
    "environment?": {"gpu?": TEXT, "tvm?": TEXT},
    "arms?": Each(
        {
            "kernel_us?": TIME_OR_NONE,
            "queued_gpu_us?": TIME_OR_NONE,
            "median_us?": TIME_OR_NONE,
            "q1_us?": TIME_OR_NONE,
            "q3_us?": TIME_OR_NONE,
        }
    ),
    "fused_kernel?": [{"arm?": TEXT, "grid?": LAUNCH, "block?": LAUNCH}],
    "ratios?": Each(RATIO),
}
SWEEP = {
    "command?": TEXT,
    "device?": TEXT,
    "cases?": [
        {
            "case?": TEXT,
            "kernel_us?": Each(TIME_OR_NONE),
            "end_to_end_us?": Each(TIME_OR_NONE),
            "fixed_over_on?": RATIO,
        }
    ],
    "fixed_slower_than_on?": ([TEXT], None),
}
MS = (NUMBER, None)
MODELS = {
    "command?": TEXT,
    "device?": TEXT,
    "rows?": [
        {
            "model?": TEXT,
            "label?": TEXT,
            "kernels?": TEXT,
            "correct?": (bool, None),
            "pattern?": ({"kernels?": TEXT, "by_list_ms?": (Each(MS), None)}, None),
            "gpu_ms?": (Each(MS), None),
            "call_path_ms?": (Each(MS), None),
            "recovered?": (Each(({"ratios?": (Each(RATIO), None)}, None)), None),
        }
    ],
}
BENCH_ENTRY = {
    "rule": str,
    "grid": LAUNCH,
    "block": LAUNCH,
    "correct": bool,
    "median_us?": TIME,
    "q1_us?": TIME,
    "q3_us?": TIME,
}
BENCH = {
    "environment?": {"gpu?": TEXT, "tvm?": TEXT},
    "kernels?": [{"kernel": str, "where": str, "lists": Each(BENCH_ENTRY)}],
}
SHAPES = {
    "report.json": REPORT,
    "sweep.json": SWEEP,
    "models.json": MODELS,
    "window_bench.json": BENCH,
}


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
    found = mismatch(data, dict) or mismatch(data, SHAPES[name])
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
