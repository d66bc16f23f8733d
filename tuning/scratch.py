"""A temporary folder of the command's own, for it and its children, removed when it ends.

TVM's `export_library` (a `tmpXXXX/lib0.o` per library), MetaSchedule's builders (their
`tvm_tmp_mod.tar` artifacts) and the arms' builds write temporary folders; a builder killed
mid-build, as a stopped run kills them (Ctrl-C, SIGTERM), never removes its own, and it stays in
the user's TMPDIR. So the command makes one folder, points TMPDIR (and Python's `tempfile`) at
it for itself and every child it starts (they inherit the environment), and removes it whole
on its way out, however it ends short of SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV = "TMPDIR"


@contextlib.contextmanager
def own_tmpdir() -> Iterator[Path | None]:
    """Yield the command's temporary folder (None where none could be made: the temporary
    files then go where they went before)."""
    try:
        folder = tempfile.mkdtemp(prefix="tune-")
    except OSError:  # an unwritable or full TMPDIR: the run says so where it writes
        yield None
        return
    saved = os.environ.get(ENV), tempfile.tempdir
    os.environ[ENV], tempfile.tempdir = folder, folder
    try:
        yield Path(folder)
    finally:
        if saved[0] is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = saved[0]
        tempfile.tempdir = saved[1]
        shutil.rmtree(folder, ignore_errors=True)
