"""TVMScript's parser made fast where its frames have no source file: TVM's, not ours, to fix.

Each `T.prim_func` and `I.ir_module` calls `inspect.stack()`, and `inspect` looks up the module of
every frame. A frame whose "file" is a pseudo-file (`<frozen importlib._bootstrap>` while a
module imports, `<string>` at the bottom of a spawned child, `<ast>` inside the parser's own
evaluation) is in no module, and `inspect.getmodule` learns that by scanning all of `sys.modules`
again on every call. MetaSchedule's `TuneContext` and dlight's matmul rule import TVM's tensor
intrinsics, 248 TVMScript functions parsed at import: 33 to 40 s of CPU on a 2-core machine, 5
to 6 s once these pseudo-files are known. Seeding `inspect`'s own file-to-module cache with them,
mapped to a name no module has, makes `getmodule` answer what its scan would (None) at once.
"""

from __future__ import annotations

import inspect

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
