"""What the tuners tune: one kernel, the arguments of a check, and the reference it must match.

A kernel task gives the unscheduled PrimFunc for a target (`function`), one check's arguments on a
device (`upload`: inputs by seed, outputs NaN so an unwritten element shows), the outputs the kernel
must write (`expected`), and whether an output is right (`matches`). Builders, the measuring process
and both tuners take a task, so one search runs on the study's fused pool kernel (`PoolKernel`,
NumPy reference) and any network kernel (`ModelKernel`, the unscheduled kernel on the host). Tasks
are picklable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import tvm
import tvm_ffi

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.reference import matches
from pool_fusion_tuning.baselines.target import TargetSpec

from .kernel_check import expected_outputs, upload_inputs


class KernelTask(Protocol):
    def function(self, target: TargetSpec) -> tvm.tirx.PrimFunc:
        """The kernel before any schedule, as the backend's passes make it for the target."""

    def upload(self, seed: int, device) -> list:
        """One check's arguments on `device`: inputs of draw `seed`, outputs NaN."""

    def expected(self, seed: int) -> list[np.ndarray]:
        """What the kernel must write for draw `seed`, output by output."""

    def matches(self, got: np.ndarray, want: np.ndarray) -> bool:
        """Whether one output is right."""


@dataclass(frozen=True)
class PoolKernel:
    """The Case's fused pool kernel (with `whole`, the one kernel of the whole graph), whose
    `biases` 0-d inputs FuseOps lifted into parameters (none where they are bound into it)."""

    case: Case
    biases: int
    whole: bool = False

    @classmethod
    def of(cls, case: Case, target: TargetSpec, whole: bool = False) -> "PoolKernel":
        from .kernel import bias_count, fused_function

        _, func = fused_function(case, target, whole)
        return cls(case, bias_count(func), whole)

    def function(self, target: TargetSpec) -> tvm.tirx.PrimFunc:
        from .kernel import fused_function

        return fused_function(self.case, target, self.whole)[1]

    def upload(self, seed: int, device) -> list:
        return upload_inputs(self.case, self.biases, seed, device, self.whole)

    def expected(self, seed: int) -> list[np.ndarray]:
        return expected_outputs(self.case, self.biases, seed, self.whole)

    def matches(self, got: np.ndarray, want: np.ndarray) -> bool:
        return matches(got, want)


_REFERENCES: dict = {}  # (kernel name, seed) -> its reference, once per process


@dataclass(frozen=True)
class ModelKernel:
    """One kernel of a real network: arguments by `kernel_arguments`, the reference its
    unscheduled self on the host, an output right within the model check's relative tolerance."""

    name: str
    func: tvm.tirx.PrimFunc
    dtype: str = "float32"

    def function(self, target: TargetSpec) -> tvm.tirx.PrimFunc:
        return self.func

    def upload(self, seed: int, device) -> list:
        from pool_fusion_tuning.baselines.models.kernels import kernel_arguments

        return [tvm.runtime.tensor(a, device=device) for a in kernel_arguments(self.func, seed)]

    def expected(self, seed: int) -> list[np.ndarray]:
        from pool_fusion_tuning.baselines.models.kernels import kernel_arguments, kernel_reference

        key = (self.name, tvm_ffi.structural_hash(self.func), seed)
        if key not in _REFERENCES:
            _REFERENCES[key] = kernel_reference(self.func, kernel_arguments(self.func, seed))
        return _REFERENCES[key]

    def matches(self, got: np.ndarray, want: np.ndarray) -> bool:
        from pool_fusion_tuning.baselines.models.eager_check import check_outputs

        return check_outputs([got], [want], self.dtype).correct


def as_task(subject: Case | KernelTask, target: TargetSpec, whole: bool = False) -> KernelTask:
    """A Case as its fused pool kernel's task (with `whole`, its one kernel's); a task as it
    is."""
    return PoolKernel.of(subject, target, whole) if isinstance(subject, Case) else subject
