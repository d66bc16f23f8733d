"""A temporary folder of the command's own, for it and its children, removed when it ends.

TVM's `export_library` (a `tmpXXXX/lib0.o` per library), MetaSchedule's builders (their
`tvm_tmp_mod.tar` artifacts) and the arms' builds write temporary folders; a builder killed
mid-build, as a stopped run kills them (Ctrl-C, SIGTERM), never removes its own, and it stays in
the user's TMPDIR. So the command makes one folder, points TMPDIR (and Python's `tempfile`) at
it for itself and every child it starts (they inherit the environment), and removes it whole
on its way out, however it ends short of SIGKILL.

matplotlib, where the user's config or cache folder cannot be written (a read-only HOME, HOME a
file, or XDG_CACHE_HOME unwritable),
makes a temporary one of its own and removes it at exit: in that folder, already gone by then,
which printed a traceback after every command that draws. It is given one inside the folder
instead (MPLCONFIGDIR), which it leaves to its owner.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV = "TMPDIR"
MATPLOTLIB = "MPLCONFIGDIR"


@contextlib.contextmanager
def own_tmpdir() -> Iterator[Path | None]:
    """Yield the command's temporary folder (None where none could be made: the temporary
    files then go where they went before)."""
    try:
        folder = tempfile.mkdtemp(prefix="tune-")
    except OSError:  # an unwritable or full TMPDIR: the run says so where it writes
        yield None
        return
    saved = {name: os.environ.get(name) for name in (ENV, MATPLOTLIB)}
    saved_tempdir = tempfile.tempdir
    os.environ[ENV], tempfile.tempdir = folder, folder
    if saved[MATPLOTLIB] is None and not _config_writable():
        os.environ[MATPLOTLIB] = os.path.join(folder, "matplotlib")
    try:
        yield Path(folder)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        tempfile.tempdir = saved_tempdir
        shutil.rmtree(folder, ignore_errors=True)


def _config_writable() -> bool:
    """Whether matplotlib's own config and cache folders (as it finds them: each falls back to
    a temporary folder of its own where it cannot be written) can be made and written."""
    home = os.path.expanduser("~")
    for variable, default in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache")):
        folder = os.path.join(os.environ.get(variable) or os.path.join(home, default), "matplotlib")
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            return False
        if not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
            return False
    return True
