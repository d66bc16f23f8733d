"""What the harness measures: the study's Case, or a real network (`model_workload.py`).

The harness asks four things of it: a draw's input (`input`), whether a built arm's outputs are
right (`check`), how an arm is built (`build`), and the computation in PyTorch (`peer`). A Case
answers from its NumPy reference and torch graph, a model from PyTorch eager and its module.
Everything else is the harness's own, the same for both.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from tvm import relax

from pool_fusion_tuning.baselines.anatomy import captured_launches, kernel_table
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.pipeline import lower
from pool_fusion_tuning.baselines.protocols import TimedArm
from pool_fusion_tuning.baselines.reference import matches, random_input, reference
from pool_fusion_tuning.runfolder.store import folder_writer


class Workload(Protocol):
    """Picklable: trial and builder processes take it."""

    def input(self, seed: int) -> object:
        """The arms' input for draw `seed`: one array, or a sequence of arrays."""

    def check(self, arm: TimedArm, checks: int) -> dict:
        """`correct` (and the worst error) of `arm`'s outputs over `checks` draws."""

    def build(self, arm, target, ir_dir, library: Path | None, kernels: bool) -> tuple:
        """(executable, what building found: `build_s`, ...), exported to `library` if given."""

    def peer(self, name: str, target_kind: str) -> TimedArm:
        """The PyTorch peer `name` of the computation."""


def export(executable, library: Path) -> None:
    """Write the library whole or not at all: a process killed mid-export leaves no half of it."""
    partial = library.with_name(library.name + ".partial.so")
    executable.export_library(str(partial))
    os.replace(partial, library)


@functools.lru_cache(maxsize=2)
def _draws(case: Case, checks: int) -> tuple:
    """The `checks` input draws and the reference's outputs for each, computed once a trial for
    every arm's check."""
    return tuple(
        (x, reference(case, x)) for x in map(lambda s: random_input(case, s), range(checks))
    )


@dataclass(frozen=True)
class CaseWorkload:
    """The study's graph of one Case, against its independent NumPy reference."""

    case: Case

    def input(self, seed: int) -> np.ndarray:
        return random_input(self.case, seed)

    def check(self, arm: TimedArm, checks: int) -> dict:
        """Max abs error over `checks` input draws; `correct` if every output is within
        tolerance."""
        worst, correct = 0.0, True
        for x, want in _draws(self.case, checks):
            got = arm.outputs(x)
            if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
                return {"correct": False, "max_abs_err": None, "reason": "output shapes differ"}
            for g, w in zip(got, want):
                worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w))))
                correct = correct and matches(g, w)
        return {"correct": correct, "max_abs_err": worst}

    def build(self, arm, target, ir_dir, library: Path | None, kernels: bool) -> tuple:
        """Lower and build one arm (IR dumped under `ir_dir/<arm>` if given), exported to
        `library` if given. What building found: `build_s`, the CUDA kernel table (if `kernels`)
        and the launches a CUDA graph captures (`cuda_graph` arms)."""
        started = time.monotonic()
        dump = folder_writer(Path(ir_dir) / arm.name) if ir_dir else None
        mod = lower(self.case, arm, target, dump)
        executable = relax.build(mod, target=target, relax_pipeline=None, tir_pipeline="default")
        found: dict[str, object] = {}
        if kernels and target.kind.name == "cuda":
            found["kernels"] = kernel_table(mod, executable, target.attrs["arch"])
        if arm.cuda_graph:
            found["cuda_graph_launches"] = captured_launches(mod)
        if library is not None:
            export(executable, library)
        return executable, {**found, "build_s": time.monotonic() - started}

    def peer(self, name: str, target_kind: str) -> TimedArm:
        from pool_fusion_tuning.baselines.torch_peer import peer_arm

        return peer_arm(name, self.case, target_kind)


def as_workload(subject: Case | Workload) -> Workload:
    """A Case as its workload; a workload as it is."""
    return CaseWorkload(subject) if isinstance(subject, Case) else subject
