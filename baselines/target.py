"""The target of a run in its one form (`TargetSpec`): built once from the command line (or read
back from run.json) and handed down the data path whole, so that no layer re-derives a kind
string, a device string or a tvm Target from another form.

It is plain data (it crosses into child processes by pickling; the command line holds it before
TVM is imported), and the tvm Target it names is made on demand (`tvm()`), one per (kind, arch)
in a process. Its JSON form (`to_json`) is what
run.json has always stored as `target_spec`; the device string is the run's identity's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tvm

KINDS = ("cuda", "llvm")
DEFAULT_ARCH = "sm_90"


@dataclass(frozen=True)
class TargetSpec:
    kind: str  # "cuda" or "llvm"
    arch: str | None = None  # the CUDA arch (e.g. "sm_90"); None on llvm
    device: str = ""  # what the run measured on, as its identity records it

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown target {self.kind!r}: use cuda or llvm")
        if self.kind == "cuda" and self.arch is None:
            object.__setattr__(self, "arch", DEFAULT_ARCH)
        if self.kind != "cuda" and self.arch is not None:
            raise ValueError(f"an arch ({self.arch}) is for a cuda target, not {self.kind}")

    @property
    def is_cuda(self) -> bool:
        """The kernels run on a CUDA GPU (GPU timers, CUDA graphs, PyTorch on the GPU)."""
        return self.kind == "cuda"

    def tvm(self) -> tvm.target.Target:
        """The tvm Target every build of this run uses (`pipeline.make_target`)."""
        return _tvm_target(self.kind, self.arch)

    def to_json(self) -> dict:
        """run.json's `target_spec` (the device is stored in its identity)."""
        return {"kind": self.kind, "arch": self.arch} if self.is_cuda else {"kind": self.kind}

    @classmethod
    def of_json(cls, spec: Mapping[str, Any], device: str = "") -> TargetSpec:
        """The spec a run.json's `target_spec` (and its identity's device) records."""
        return cls(spec["kind"], spec.get("arch"), device)


@functools.cache
def _tvm_target(kind: str, arch: str | None) -> tvm.target.Target:
    from .pipeline import make_target  # TVM's import, once a build needs it

    return make_target(kind, arch) if arch is not None else make_target(kind)
