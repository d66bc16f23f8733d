"""MetaSchedule's JSON database in a run folder, repaired where a stopped write left it.

TVM appends one JSON line per workload and per measured record, and cannot read a file whose
last line is cut short, which is what a kill or a full disk in the middle of an append leaves.
That line is the record being written when the run stopped, and the run's own trial rows are
written after it, so the resume drops it (keeping the original as `<name>.damaged`) and
measures on. Damage anywhere else is refused in one line, and the file left as it is.

TVM opens and appends these files itself, so each is checked before TVM sees it: a link of any
kind (TVM would append to the file outside the folder) or a FIFO (TVM would hang opening it)
is refused in one line (`store.check_in_place`).
"""

from __future__ import annotations

import json
from pathlib import Path

from tvm.s_tir import meta_schedule as ms

from pool_fusion_tuning.runfolder.store import RunError, check_in_place, read_bytes, write_bytes
from pool_fusion_tuning.tuning.candidates.builder import error_line

FILES = ("database_workload.json", "database_tuning_record.json")
DAMAGED_SUFFIX = ".damaged"


def open_database(directory: Path, say) -> ms.database.JSONDatabase:
    """The database in `directory`, repaired where a stopped append cut its last line short;
    `say(line)` hears each repair. A database the repair does not make readable is put back
    as it was and refused."""
    for name in FILES:
        check_in_place(directory / name)
    try:
        return _open(directory)
    except RunError:
        repaired = [name for name in FILES if _drop_partial_last_line(directory / name)]
        if not repaired:
            raise
    try:
        database = _open(directory)
    except RunError:
        for name in repaired:
            damaged = directory / (name + DAMAGED_SUFFIX)
            write_bytes(directory / name, read_bytes(damaged))
            damaged.unlink()
        raise
    for name in repaired:
        say(
            f"{directory / name}: dropped its last line, cut short when the run stopped (the "
            f"original is kept as {name}{DAMAGED_SUFFIX})"
        )
    return database


def _open(directory: Path) -> ms.database.JSONDatabase:
    try:
        return ms.database.JSONDatabase(work_dir=str(directory))
    except Exception as error:  # a corrupt file: said in one line, never overwritten
        raise RunError(
            f"cannot read the MetaSchedule database in {directory} "
            f"({error_line(str(error))}); it was left as it is"
        ) from None


def _drop_partial_last_line(path: Path) -> bool:
    """Cut a file of JSON lines after its last whole line, where only the last one is cut
    short (the original kept beside it); True where it did."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        return False
    if not data or data.endswith(b"\n"):
        return False
    whole = data[: data.rfind(b"\n") + 1]
    try:
        for line in whole.splitlines():
            json.loads(line)
    except ValueError:  # damaged before its last line: not a stopped append
        return False
    write_bytes(path.with_name(path.name + DAMAGED_SUFFIX), data)
    write_bytes(path, whole)
    return True
