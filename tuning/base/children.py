"""Child processes that never outlive the run that started them.

Every child (builder pool, measuring process, trial process, `--workers` worker, RPC runner
worker) calls `die_with_parent` first, with the pid its parent gave it: Linux kills it when its
parent exits, however the parent ends (SIGKILL included), and a child that starts after its
parent died exits at once. It ignores Ctrl-C, which the terminal sends to the whole process
group: the parent alone handles that, stops its children and prints one line.
The parent stops its children itself on an exception (`kill_pool`, `stop`), without waiting
for the work in flight, since a child that ignores Ctrl-C would otherwise finish it first.

A child that runs no PyTorch (a builder, a measuring process without a GPU) starts without it
(`leave_torch_out`): TVM's FFI imports PyTorch wherever it is installed, 3.5 s of CPU of each
child's start on a 2-core machine, half of it. Every process of ours imports TVM without
ml_dtypes (`import_tvm`), which TVM's FFI also imports at once.
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
    """`python -m MODULE ARGS` for a child, without the current folder on its import path
    (`python -m` puts it first): a `tuning.py` or `tuning/` in the folder the user runs from
    would be imported in place of the installed package. PYTHONPATH is kept."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", module, *args]
    start = f"import runpy, sys; del sys.path[0]; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"  # noqa: E501
    return [sys.executable, "-c", start, *args]


def die_with_parent(parent_pid: int) -> None:
    """In a child: be killed when the parent (`parent_pid`, as the parent gave it: the child's
    own view may already be whoever adopted it) exits, and leave Ctrl-C to the parent.

    Linux sends the signal when the thread that started the child ends: the main thread, or a
    tuner's thread, which closes its children before it ends. Where prctl is missing (not
    Linux), a thread watches the parent's pid."""
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


# Imported by TVM's FFI at its start, and by `export_library` (through tvm.contrib.tvmjs), for
# NumPy's bfloat16 and float8 types: about 1 s of CPU of each process on a 2-core machine.
# Nothing here makes such arrays (baselines/models/model_spec.py's DTYPES); `relax.const`, which
# wants it, imports it when called.
IMPORTED_WHEN_USED = ("ml_dtypes",)


def import_tvm(without_torch: bool = False) -> None:
    """TVM imported with ml_dtypes (and `without_torch`, PyTorch) marked absent, then the marks
    taken away: TVM's FFI goes without them, a later import of either imports it, and a library
    that looks for PyTorch among the imported modules (SciPy's array API does) finds none
    rather than the mark."""
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
