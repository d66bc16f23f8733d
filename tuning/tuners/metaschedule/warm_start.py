"""Warm start (`tune model --warm-start DIR`): a kernel's new MetaSchedule search begins with the
best records that the run folder DIR holds of the same kernel (another card, another network or
budget), found by its workload as MetaSchedule's database compares it, whatever it is called.
DIR's times only choose the records: each is built, checked and timed by this search's evaluator,
is a trial row counted in --budget, and goes into its database with the time measured here,
where the evolutionary search takes its first population from. DIR is only read (copied first).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import tvm_ffi
from tvm import s_tir
from tvm.s_tir import meta_schedule as ms

from pool_fusion_tuning.runfolder.records import WarmStart
from pool_fusion_tuning.runfolder.store import RunError, read_bytes, read_json, write_bytes
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.kernel import kernel_module
from pool_fusion_tuning.tuning.candidates.outcome import Status

from .bridge import ScheduledModule, trial_row
from .database import FILES, open_database

# Records taken per kernel: 32 build in about 12 s on 8 cores (3 s of CPU each on the H100
# machine), a tenth of a search of 256.
TOP = 32
# MetaSchedule's time for a candidate that failed (`AddToDatabase`): never among the best.
FAILED_SECS = 1e10


def databases(folder: Path) -> list[Path]:
    """The MetaSchedule databases of a `tune model --tune-top` run folder, one per kernel."""
    found = Path(folder).glob(f"tuners/*/metaschedule/{FILES[1]}")
    return sorted(path.parent for path in found if (path.parent / FILES[0]).is_file())


def environment_of(folder: Path) -> dict:
    """The run folder's environment.json (its target kind, its GPU); {} where it has none."""
    path = Path(folder) / "environment.json"
    found = read_json(path) if path.exists() else {}
    return found if isinstance(found, dict) else {}


def start_from(
    folder: Path,
    func,
    target,
    database: ms.database.JSONDatabase,
    evaluator: CandidateEvaluator,
    rows: list,
    budget: int,
    each=None,
) -> WarmStart:
    """Measure here the best records of `func` that `folder` holds (at most TOP and `budget`),
    each as a trial row appended to `rows` and a record of `database` with its time here;
    `each(done)` follows each measurement. What was taken, and from where."""
    mod = kernel_module(func)
    found, records = _best_records(folder, mod, min(TOP, budget))
    replayed = [_replay(record) for record in records]
    outcomes = evaluator.evaluate([ScheduledModule(scheduled) for scheduled in replayed], each)
    workload = database.commit_workload(mod)
    for record, scheduled, outcome in zip(records, replayed, outcomes):
        ok = outcome["status"] == Status.OK
        secs = outcome["kernel_us"] * 1e-6 if ok else FAILED_SECS
        database.commit_tuning_record(
            ms.database.TuningRecord(record.trace, workload, [secs], target, record.args_info)
        )
        rows.append(trial_row(rows, scheduled, outcome, warm_start=True))
    return {
        "folder": str(folder),
        "kernel": found.parent.name if found else None,
        "gpu": _gpu(folder),
        "records": len(records),
    }


def _gpu(folder: Path) -> str | None:
    gpu = environment_of(folder).get("gpu")
    return gpu if isinstance(gpu, str) else None


def _best_records(folder: Path, mod, top: int) -> tuple[Path | None, list]:
    """The first of `folder`'s databases that holds `mod`, and its best `top` records. A
    database is opened (a second or more) only where its workload file lists `mod`'s
    structural hash, which MetaSchedule writes first on each line."""
    shash = str(tvm_ffi.structural_hash(mod))
    for source in databases(folder):
        if shash not in _hashes(source / FILES[0]):
            continue
        with tempfile.TemporaryDirectory(prefix="warm-start-") as copy:
            for name in FILES:
                write_bytes(Path(copy) / name, read_bytes(source / name))
            try:
                database = open_database(Path(copy), lambda line: None)
            except RunError as error:  # said of the copy: say it of the source
                raise RunError(str(error).replace(copy, str(source))) from None
            if database.has_workload(mod):
                return source, list(database.get_top_k(database.commit_workload(mod), top))
    return None, []


def _hashes(path: Path) -> set[str]:
    found = set()
    for line in read_bytes(path).splitlines():
        with contextlib.suppress(ValueError, TypeError, IndexError):
            found.add(str(json.loads(line)[0]))
    return found


def _replay(record: ms.database.TuningRecord):
    """The record's schedule applied to its workload, its postprocessing too (as MetaSchedule
    built it)."""
    sch = s_tir.Schedule(record.workload.mod)
    record.trace.apply_to_schedule(sch, remove_postproc=False)
    return sch.mod
