"""Build many candidates in parallel on the CPU cores, measure them one at a time on the device.

Shared by both tuners: a candidate is a schedule (`baselines.protocols.Schedule`), its outcome an
`outcome.Outcome`. Each candidate is measured as soon as it is built, so the device never waits for
a batch's slowest build; tuners side by side take turns on the device (`DEVICE`, first come first
served), and a kernel any tuner measured in the run is not timed again (`KernelCache`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import (
    Future,
    InvalidStateError,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    as_completed,
)
from concurrent.futures.process import BrokenProcessPool

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.protocols import Schedule
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.base.children import kill_pool, process_pool
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol

from .builder import build_candidate
from .kernel_cache import KernelCache
from .outcome import Outcome, Reason, Status, failed
from .runner import KernelRunner
from .task import KernelTask, as_task
from .time_book import TimeBook
from .turns import TurnLock


class Stopped(Exception):
    """The run is stopping (Ctrl-C in the main thread): a tuner's thread ends here."""


def stopped_by_the_run(error: BaseException) -> bool:
    """Whether `error` ended a tuner because the run is stopping, not because of the kernel:
    MetaSchedule's builder raises `Stopped` inside TVM, which hands it back as a RuntimeError."""
    return isinstance(error, Stopped) or STOPPING.is_set()


# One candidate at a time on the device, whichever tuner's thread measures it, in turn.
DEVICE = TurnLock()
# Set by the main thread when the run stops; every evaluator stops at its next candidate.
STOPPING = threading.Event()
_LIVE: set[CandidateEvaluator] = set()  # evaluators open now, for `stop_all`


def stop_all() -> None:
    """Stop every tuner's evaluator: no new candidate, builders and runners killed."""
    STOPPING.set()
    for evaluator in list(_LIVE):
        evaluator.close(kill=True)


class CandidateEvaluator:
    """Parallel builders and one replaceable measuring process, for one kernel task and target: a
    Case's fused pool kernel (with `whole`, the whole graph's one kernel), or any
    `task.KernelTask`."""

    def __init__(
        self,
        subject: Case | KernelTask,
        target: TargetSpec,
        protocol: KernelProtocol | None = None,
        workers: int | None = None,
        whole: bool = False,
        cache: KernelCache | None = None,
    ):
        self.task = as_task(subject, target, whole)
        self.target = target
        self.protocol = protocol or KernelProtocol()
        self.cache = cache if cache is not None else KernelCache()
        self.book = TimeBook()  # where its time went (`time_book.SPENT`)
        self.runner = KernelRunner(self.task, target.kind, self.protocol, self.book)
        self.workers = workers or max(1, (os.cpu_count() or 2))
        self._pool_lock = threading.Lock()  # the pool is renewed from the measuring thread
        self._pool = self._new_pool()
        self._tmp = tempfile.TemporaryDirectory(prefix="pool-tuning-")
        # `submit`'s candidates are measured here as they are built, while the submitting thread
        # goes on.
        self._measuring = ThreadPoolExecutor(1, thread_name_prefix="measuring")
        self._pending: set[Future] = set()  # outcomes of `submit` not yet known
        _LIVE.add(self)

    def evaluate(
        self, schedules: Sequence[Schedule], each: Callable[[int], None] | None = None
    ) -> list[Outcome]:
        """Build all in parallel; check and time each as soon as it is built. Records come back
        in the order of `schedules`; `each(done)` follows each one (a progress bar moves per
        candidate)."""
        futures = self._submit(schedules)
        records: list[Outcome] = [{}] * len(futures)
        for done, future in enumerate(as_completed(futures), 1):
            index, path = futures[future]
            record = self._built(future, path)
            built = record["status"] == Status.BUILT
            records[index] = self._measure(record) if built else record
            if each is not None:
                each(done)
        self._renew_pool_if_broken(records)
        return records

    def submit(self, schedule: Schedule) -> Future:
        """Start building one candidate; the future's result is its outcome, checked and timed by
        the measuring thread once built, so a search asks for its next points while candidates
        build."""
        ((built, (_, path)),) = self._submit([schedule]).items()
        outcome: Future = Future()
        pool = self._pool
        self._pending.add(outcome)
        outcome.add_done_callback(self._pending.discard)

        def measure_when_built(done: Future) -> None:
            try:
                self._measuring.submit(self._finish_into, done, path, pool, outcome)
            except RuntimeError:  # the evaluator is closed: the run is stopping
                with contextlib.suppress(InvalidStateError):
                    outcome.set_exception(Stopped("the run is stopping"))

        built.add_done_callback(measure_when_built)
        return outcome

    def finish(self, future: Future) -> Outcome:
        """The outcome of a candidate `submit` started: its build, then its measurement."""
        return future.result()

    def _finish_into(self, built: Future, path: str, pool, outcome: Future) -> None:
        """In the measuring thread: the built candidate's outcome into `outcome`."""
        try:
            record = self._built(built, path)
            if record["status"] == Status.BUILT:
                record = self._measure(record)
            elif pool is self._pool:  # a later future of a pool replaced already renews nothing
                self._renew_pool_if_broken([record])
            with contextlib.suppress(InvalidStateError):  # `close` stopped it meanwhile
                outcome.set_result(record)
        except BaseException as error:  # Stopped, or a bug: the submitting thread raises it
            with contextlib.suppress(InvalidStateError):
                outcome.set_exception(error)

    def build(self, schedules: Sequence[Schedule]) -> list[Outcome]:
        """Build all in parallel; a built record's `path` is its library, the caller's to delete
        (what is left goes with the evaluator's folder on close)."""
        futures = self._submit(schedules)
        records = [self._built(future, path) for future, (_, path) in futures.items()]
        self._renew_pool_if_broken(records)
        return records

    def _submit(self, schedules: Sequence[Schedule]) -> dict[Future, tuple[int, str]]:
        """future -> (index, library path), one build per schedule."""
        self._check_running()
        futures = {}
        with self._pool_lock:
            for index, schedule in enumerate(schedules):
                path = os.path.join(self._tmp.name, f"c{time.monotonic_ns()}_{index}.so")
                future = self._pool.submit(build_candidate, self.task, self.target, schedule, path)
                futures[future] = (index, path)
        return futures

    def _built(self, future: Future, path: str) -> Outcome:
        try:
            record = future.result()
        except BrokenProcessPool:  # the compiler itself crashed: this batch is not built
            self._check_running()
            record = failed(Reason.BUILDER_CRASHED, "a builder process died")
        if record["status"] != Status.BUILT and os.path.exists(path):  # half a library
            os.remove(path)
        self._book_build(record)
        return record

    def _book_build(self, record: Outcome) -> None:
        if "build_s" not in record:  # a builder that crashed reports nothing
            return
        self.book.add("builds")
        self.book.add("build_wall_s", record["build_s"])
        self.book.add("build_cpu_s", record.get("build_cpu_s", 0.0))
        if "start_cpu_s" in record:
            self.book.add("builder_starts")
            self.book.add("builder_start_cpu_s", record.pop("start_cpu_s"))

    def _measure(self, record: Outcome) -> Outcome:
        """Check and time a built candidate, or reuse its kernel's measurement."""
        path = record.pop("path")
        asked = time.monotonic()
        try:
            with DEVICE:
                taken = time.monotonic()
                self.book.add("device_wait_s", taken - asked)
                self._check_running()
                result = self.cache.get(record.get("kernel_key"))
                if result is None:
                    result = self.runner.measure(path)
                    self._check_running()  # a runner killed by `stop_all` measured nothing
                    self.cache.put(record.get("kernel_key"), result)
                    self.book.add("measured")
                self.book.add("device_s", time.monotonic() - taken)
        finally:
            with contextlib.suppress(FileNotFoundError):  # `stop_all` may have removed it
                os.remove(path)
        return {**record, **result}

    def _check_running(self) -> None:
        if STOPPING.is_set():
            raise Stopped("the run is stopping")

    def _renew_pool_if_broken(self, records: list[Outcome]) -> None:
        if any(record.get("reason") == Reason.BUILDER_CRASHED for record in records):
            with self._pool_lock:
                self._pool.shutdown(cancel_futures=True)
                self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return process_pool(self.workers, torch=False)  # builders compile; they run nothing

    def close(self, kill: bool = False) -> None:
        """`kill`: stop the builders and the runner mid-task (the run is being stopped)."""
        try:
            _LIVE.remove(self)
        except KeyError:  # closed already (by `stop_all`, from the main thread)
            return
        if kill:
            kill_pool(self._pool)
        else:
            self._pool.shutdown(cancel_futures=True)
        # Without waiting: a measurement in flight ends with the runner, closed next.
        self._measuring.shutdown(wait=not kill, cancel_futures=True)
        for outcome in list(self._pending):  # never measured now: a waiting search stops
            with contextlib.suppress(InvalidStateError):  # decided meanwhile
                outcome.set_exception(Stopped("the run is stopping"))
        self.runner.close(kill)
        self._tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, error_type, *exc):
        self.close(kill=error_type is not None)
