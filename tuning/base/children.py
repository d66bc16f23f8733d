"""Child processes that never outlive the run that started them.

Every child (builder pool, measuring process, trial process, `--workers` worker, RPC runner worker)
calls `die_with_parent` first: Linux kills it when its parent exits, however it ends (SIGKILL
included), and one started after its parent died exits at once. It ignores Ctrl-C, which the
terminal sends to the whole group: the parent alone stops its children and prints one line. On an
exception the parent stops its children itself (`kill_pool`, `stop`), not waiting for work in
flight.

A child running no PyTorch starts without it (`leave_torch_out`): TVM's FFI imports PyTorch wherever
installed, half of a child's start (3.5 s of CPU on 2 cores). Every process of ours imports TVM
without ml_dtypes (`import_tvm`), which TVM's FFI also imports at once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

_PR_SET_PDEATHSIG = 1


def module_command(module: str, *args: str) -> list[str]:
    """`python -m MODULE ARGS` for a child without the current folder on its import path, so a
    local `tuning.py` or `tuning/` cannot shadow the installed package. PYTHONPATH is kept."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", module, *args]
    start = f"import runpy, sys; del sys.path[0]; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"  # noqa: E501
    return [sys.executable, "-c", start, *args]


def die_with_parent(parent_pid: int) -> None:
    """In a child: be killed when the parent exits (`parent_pid` as the parent gave it, the child's
    own view may already be its adopter's), and leave Ctrl-C to the parent.

    Linux signals when the thread that started the child ends (the main thread, or a tuner's
    thread, which closes its children first). Without prctl (not Linux), a thread watches the
    parent's pid."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _set_parent_death_signal(signal.SIGKILL):
        threading.Thread(target=_watch, args=(parent_pid,), daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


def _set_parent_death_signal(signum: int) -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def leave_torch_out() -> None:
    """In a fresh child, before anything imports TVM: PyTorch marked absent, so that TVM's FFI
    (which imports it where installed) goes without it, and an `import torch` fails."""
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]


# Imported by TVM's FFI at its start, and by `export_library`, for NumPy's bfloat16 and float8
# types: about 1 s of CPU a process on 2 cores. Nothing here makes such arrays; `relax.const`
# imports it when called.
IMPORTED_WHEN_USED = ("ml_dtypes",)


def import_tvm(without_torch: bool = False) -> None:
    """TVM imported with ml_dtypes (and `without_torch`, PyTorch) marked absent, then unmarked:
    TVM's FFI goes without them, a later import still works, and a library looking for PyTorch
    among imported modules (SciPy's array API) finds none rather than the mark."""
    left_out = (*IMPORTED_WHEN_USED, *(("torch",) if without_torch else ()))
    marked = [name for name in left_out if sys.modules.setdefault(name, None) is None]  # type: ignore[arg-type]
    import tvm  # noqa: F401
    import tvm.contrib.tvmjs  # noqa: F401

    for name in marked:
        if sys.modules.get(name, 0) is None:
            del sys.modules[name]


def _start_pool_child(parent_pid: int, torch: bool) -> None:
    die_with_parent(parent_pid)
    if not torch:
        leave_torch_out()  # for good: its tasks run no PyTorch
    import_tvm()


def process_pool(workers: int, torch: bool = True) -> ProcessPoolExecutor:
    """A pool of fresh (spawned) processes that die with this one; `torch`: whether its tasks
    may run PyTorch (otherwise the processes start without it)."""
    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_pool_child,
        initargs=(os.getpid(), torch),
    )


def stop(process) -> None:
    """Kill a multiprocessing.Process or a Popen now and reap it."""
    if isinstance(process, subprocess.Popen):
        if process.poll() is None:
            process.kill()
        process.wait()
    else:
        if process.is_alive():
            process.kill()
        process.join()


def kill_pool(pool) -> None:
    """Kill a ProcessPoolExecutor's processes mid-task and shut it down without waiting."""
    kill = getattr(pool, "kill_workers", None)  # Python 3.14
    if kill is not None:
        kill()
    else:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
