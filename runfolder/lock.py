"""One writer per run folder: an OS file lock on `DIR/tune.lock`, held for the process's life.

Two commands writing one run folder at once would fail each other's trials in flight and lose
measurements; the second is refused in one line naming the process that holds the folder. The
kernel drops the lock when that process ends, however it ends, so a lock is never stale.

The lock file is written in place, so it is opened as every such file is (`files.open_in_place`:
never through a symbolic or hard link, never a FIFO) and never truncated: the pid is written
over its first line, and only that line is read back.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .files import RunError, open_in_place

LOCK_FILE = "tune.lock"

# Folder -> descriptor, open for the life of the process: closing it would drop the lock.
_held: dict[str, int] = {}


class FolderBusy(RunError):
    """Another process writes this folder; the message names it (a `RunError`: said in one
    line where it reaches the command line)."""


def hold(folder: Path) -> None:
    """Take the folder's lock, or raise FolderBusy naming the process that holds it."""
    folder = Path(folder)
    name = str(folder.resolve())
    if name in _held:
        return
    try:
        fd = open_in_place(folder / LOCK_FILE, os.O_RDWR)
    except RunError as error:
        raise FolderBusy(str(error)) from None
    except OSError as error:
        raise FolderBusy(f"cannot lock {folder / LOCK_FILE}: {error.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        first = os.pread(fd, 32, 0).decode(errors="replace").split("\n")[0].strip()
        holder = first if first.isdigit() else "unknown"
        os.close(fd)
        raise FolderBusy(
            f"{folder} is in use by another tune (process {holder}); wait for it "
            f"to end, or stop it (kill {holder}) and run the command again"
        ) from None
    _held[name] = fd
    try:  # the pid is for the message only: a full disk must not stop the lock
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass


def release(folder: Path) -> None:
    """Drop the folder's lock and its file (a run folder that could not be created)."""
    fd = _held.pop(str(Path(folder).resolve()), None)
    if fd is not None:
        os.unlink(Path(folder) / LOCK_FILE)
        os.close(fd)


def release_all() -> None:
    """Drop every lock this process holds (the command is over; the files stay)."""
    while _held:
        os.close(_held.popitem()[1])
