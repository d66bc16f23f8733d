"""TVMScript's parser made fast where its frames have no source file, and TVM's tensor
intrinsics parsed only for the target that uses them: TVM's, not ours, to fix.

Each `T.prim_func` and `I.ir_module` calls `inspect.stack()`, and `inspect` looks up the module of
every frame. A frame whose "file" is a pseudo-file (`<frozen importlib._bootstrap>` while a
module imports, `<string>` at the bottom of a spawned child, `<ast>` inside the parser's own
evaluation) is in no module, and `inspect.getmodule` learns that by scanning all of `sys.modules`
again on every call. MetaSchedule's `TuneContext` and dlight's matmul rule import TVM's tensor
intrinsics, 248 TVMScript functions parsed at import: 33 to 40 s of CPU on a 2-core machine, 5
to 6 s once these pseudo-files are known. Seeding `inspect`'s own file-to-module cache with them,
mapped to a name no module has, makes `getmodule` answer what its scan would (None) at once.

Those 248 functions are every target's (CUDA, x86, Arm, ROCm, Hexagon, RISC-V): the package's
`__init__` imports them all, 8 s of CPU per process on 2 cores even with the frames known. Here
the package is found with its `__init__` left out, so each target's module is imported (and
registers its intrinsics) when something asks for it: dlight's matmul rule asks for `.cuda`,
and MetaSchedule's tuner for the module of the target it tunes for
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
    """TVM's tensor-intrinsics package imported without its `__init__` from now on: each
    target's module when asked for (idempotent; no effect where the package is imported)."""
    if not any(isinstance(finder, _IntrinsicsOnDemand) for finder in sys.meta_path):
        sys.meta_path.insert(0, _IntrinsicsOnDemand())


# The package's `__init__`: CUDA's module, and with LLVM (TVM's wheel has it) these.
_EVERY_TARGET = ("cuda", "arm_cpu", "x86", "rocm", "hexagon", "riscv_cpu")


def import_intrinsics_for(target) -> None:
    """Register the tensor intrinsics that MetaSchedule's rules for `target` may ask for:
    CUDA's for cuda, none for llvm without an `mcpu` (its rules tensorize nothing), else every
    target's, as the package's `__init__` would."""
    kind = target.kind.name
    plain_llvm = kind == "llvm" and "mcpu" not in target.attrs
    for module in ("cuda",) if kind == "cuda" else () if plain_llvm else _EVERY_TARGET:
        importlib.import_module(f"{INTRINSICS}.{module}")
