"""The measuring process of the tuners' candidates, replaced when a candidate kills it.

A process of its own because a bad kernel (an illegal address) poisons the CUDA context: it is
replaced, and the candidate recorded as failed.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import time
from multiprocessing.process import BaseProcess

from pool_fusion_tuning.tuning.base.children import (
    die_with_parent,
    import_tvm,
    leave_torch_out,
    stop,
)
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol

from .outcome import Outcome, Reason, failed
from .time_book import TimeBook


def _runner_loop(requests, replies, parent: int, target_kind: str):
    die_with_parent(parent)
    if target_kind != "cuda":  # PyTorch times CUDA kernels (`gpu_timer`); nothing else here
        leave_torch_out()
    import_tvm()
    # Imported here, after the line to the parent is set: TVM is most of a new runner's
    # start-up, which no candidate is charged for (the time limit starts after "ready").
    from .kernel_check import measure_library

    replies.put((None, "ready"))
    while True:
        job = requests.get()
        if job is None:
            return
        key, args = job
        try:
            replies.put((key, measure_library(*args)))
        except Exception as error:  # a runtime error is a failed candidate, not a dead runner
            replies.put(
                (key, failed(Reason.RUN_ERROR, f"{type(error).__name__}: {str(error)[:300]}"))
            )


# A new measuring process imports TVM (seconds on a loaded machine) before it is ready.
STARTUP_LIMIT_S = 300


class KernelRunner:
    """One measuring process, replaced when a candidate kills it or runs past the time limit."""

    def __init__(
        self, task, target_kind: str, protocol: KernelProtocol, book: TimeBook | None = None
    ):
        """`task`: what the candidates are kernels of (`task.KernelTask`); `book`: where the time
        starting measuring processes is added (`runner_start_s`)."""
        self.task, self.kind, self.protocol = task, target_kind, protocol
        self.book = book if book is not None else TimeBook()
        self._context = multiprocessing.get_context("spawn")
        self._process: BaseProcess | None = None
        self.restarts = 0

    def _start(self) -> BaseProcess:
        """A new measuring process, once it is ready."""
        self._requests, self._replies = self._context.Queue(), self._context.Queue()
        process = self._process = self._context.Process(
            target=_runner_loop,
            args=(self._requests, self._replies, os.getpid(), self.kind),
            daemon=True,
        )
        process.start()
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while process.is_alive() and time.monotonic() < deadline:
            try:
                self._replies.get(timeout=0.5)  # ready: the time limit starts with the candidate
                return process
            except queue_module.Empty:
                continue
        raise RuntimeError(
            f"the measuring process did not start within {STARTUP_LIMIT_S} s "
            f"(exit code {process.exitcode})"
        )

    def measure(self, path: str) -> Outcome:
        """The library at `path` checked and timed in the measuring process (started where
        none is alive); failed where the process dies or runs past the time limit, then
        replaced."""
        process = self._process
        if process is None or not process.is_alive():
            with self.book.timing("runner_start_s"):
                process = self._start()
        key = str(path)
        started = time.monotonic()
        self._requests.put((key, (key, self.task, self.kind, self.protocol)))
        while True:
            try:
                _, result = self._replies.get(timeout=0.5)
                result["run_s"] = time.monotonic() - started
                return result
            except queue_module.Empty:
                if not process.is_alive():
                    code = process.exitcode
                    self._replace(process)
                    return failed(Reason.RUNNER_CRASHED, f"exit code {code}")
                if time.monotonic() - started > self.protocol.time_limit_s:
                    self._replace(process, kill=True)
                    return failed(
                        Reason.TIME_LIMIT, f"no result within {self.protocol.time_limit_s:.0f} s"
                    )

    def _replace(self, process: BaseProcess, kill: bool = False) -> None:
        if kill and process.is_alive():
            process.kill()
        process.join()
        self._process = None
        self.restarts += 1

    def close(self, kill: bool = False) -> None:
        if self._process is not None and self._process.is_alive() and not kill:
            self._requests.put(None)
            self._process.join(timeout=10)
        if self._process is not None:
            stop(self._process)
