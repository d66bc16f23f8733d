"""TVMScript's parser made fast where its frames have no source file, and TVM's tensor intrinsics
parsed only for the target that uses them: TVM's, not ours, to fix.

Each `T.prim_func` and `I.ir_module` calls `inspect.stack()`, which looks up every frame's module. A
frame of a pseudo-file (`<frozen importlib._bootstrap>`, `<string>`, `<ast>`) is in no module, and
`inspect.getmodule` learns that by rescanning `sys.modules` on every call. TVM's tensor intrinsics
(248 TVMScript functions, imported by MetaSchedule's `TuneContext` and dlight's matmul rule) then
take 33 to 40 s of CPU on 2 cores, 5 to 6 s once `inspect`'s file-to-module cache is seeded with
these pseudo-files.

Those 248 functions are every target's, all imported by the package's `__init__` (8 s of CPU a
process even so). Here the package is loaded without its `__init__`, so each target's module is
imported when asked for: `.cuda` by dlight's matmul rule, the tuned target's by MetaSchedule's tuner
(`tuning/tuners/metaschedule/tune.py`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys

# The pseudo-files Python and TVM's parser give frames; none is the file of a module.
PSEUDO_FILES = (
    "<frozen importlib._bootstrap>",
    "<frozen importlib._bootstrap_external>",
    "<string>",
    "<stdin>",
    "<ast>",
)
_NO_MODULE = ""  # `sys.modules.get("")` is None: no module has an empty name


def know_pseudo_files() -> None:
    """Tell `inspect` once that the pseudo-files are in no module (idempotent)."""
    for name in PSEUDO_FILES:
        inspect.modulesbyfile.setdefault(name, _NO_MODULE)


INTRINSICS = "tvm.s_tir.tensor_intrin"


class _PackageAlone(importlib.abc.Loader):
    """Loads a package as its folder of modules: its `__init__` is not run."""

    def create_module(self, spec):
        return None  # the default module, with `__path__` from the spec

    def exec_module(self, module) -> None:
        pass


class _IntrinsicsOnDemand(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != INTRINSICS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _PackageAlone()
        return spec


def intrinsics_on_demand() -> None:
    """TVM's tensor-intrinsics package imported without its `__init__` from now on, each target's
    module when asked for (idempotent; no effect where the package is imported already)."""
    if not any(isinstance(finder, _IntrinsicsOnDemand) for finder in sys.meta_path):
        sys.meta_path.insert(0, _IntrinsicsOnDemand())


# The package's `__init__`: CUDA's module, and with LLVM (TVM's wheel has it) these.
_EVERY_TARGET = ("cuda", "arm_cpu", "x86", "rocm", "hexagon", "riscv_cpu")


def import_intrinsics_for(target) -> None:
    """Register the tensor intrinsics MetaSchedule's rules for `target` may ask for: CUDA's for
    cuda, none for llvm without an `mcpu`, else every target's, as the package's `__init__`
    would."""
    kind = target.kind.name
    plain_llvm = kind == "llvm" and "mcpu" not in target.attrs
    for module in ("cuda",) if kind == "cuda" else () if plain_llvm else _EVERY_TARGET:
        importlib.import_module(f"{INTRINSICS}.{module}")
