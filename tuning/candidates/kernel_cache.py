"""Measurements keyed by the kernel a candidate compiles to, so that no kernel is timed twice.

Different schedules often compile to the same kernel: Optuna's template space and MetaSchedule's
`ms-space` are the same space, and evolutionary search revisits points. The key hashes what runs
on the device (the CUDA source and every kernel's launch extents; on a CPU the whole compiled
module's source), so two candidates share a measurement only where the device would run the same
code the same way. The cache lives in the run folder, so it also serves `--resume` and later
tuners of the same run; a reused record says so (`reused`).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Mapping
from pathlib import Path

from pool_fusion_tuning.runfolder.records import KernelMeasurements
from pool_fusion_tuning.runfolder.store import read_record, write_json

from .outcome import Outcome, Status

# Fields of a measurement that describe the kernel's behaviour; the rest (build and run times,
# the library's path) belong to the candidate that was measured.
MEASURED_FIELDS = ("status", "reason", "detail", "kernel_us", "samples_us", "max_abs_err", "timer")


# LLVM's alias metadata names buffers by their address in the compiling process.
_ADDRESS = re.compile(r"0x[0-9a-f]{6,}")


def kernel_key(executable, launches: dict) -> str:
    """A hash of the device code of `executable` (a `tvm.compile` result) and its launches."""
    module = executable.mod
    device = [sub for sub in module.imports if sub.kind != "llvm"]
    sources = [_ADDRESS.sub("0x", sub.inspect_source()) for sub in (device or [module])]
    text = json.dumps({"sources": sources, "launches": launches}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class KernelCache:
    """Kernel key -> measurement; shared by every evaluator of a run (thread-safe)."""

    _of_run: dict = {}
    _of_run_lock = threading.Lock()

    @classmethod
    def of_run(cls, folder: Path) -> "KernelCache":
        """The one cache of a run folder: tuners in threads of one process share it."""
        path = Path(folder) / "kernels.json"
        with cls._of_run_lock:
            return cls._of_run.setdefault(path.resolve(), cls(path))

    def __init__(self, path: Path | None = None):
        self.path = path
        self._records: dict = (
            read_record(path, KernelMeasurements) if path is not None and path.exists() else {}
        )
        self._lock = threading.Lock()

    def get(self, key: str | None) -> Outcome | None:
        with self._lock:
            found = self._records.get(key) if key else None
        return {**found, "reused": True} if found else None

    def put(self, key: str | None, record: Mapping[str, object]) -> None:
        """Keep a kernel's outcome where the kernel decided it: timed, or wrong. A crash or a
        time limit may be the measuring process's fault, so that kernel is tried again."""
        if not key or record.get("status") not in (Status.OK, Status.WRONG):
            return
        with self._lock:
            self._records[key] = {k: record[k] for k in MEASURED_FIELDS if k in record}
            if self.path is not None:
                write_json(self.path, self._records)

    def __len__(self) -> int:
        return len(self._records)
