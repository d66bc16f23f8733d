"""MetaSchedule's `tune_tir` for one kernel, with the project's own logging.

`tune_tir` sets up logging with MetaSchedule's `create_loggers`, which lists the names of every
handler already attached to the `tvm.s_tir.meta_schedule` logger and crashes on one without a
name (pytest 9 attaches such handlers), and which adds a console handler that prints the task
scheduler's tables. Here the task gets a logger that writes to a file in the run folder, and
nothing else is configured: handlers that other code attached are left as they are.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pool_fusion_tuning.baselines.script_frames import import_intrinsics_for
from pool_fusion_tuning.runfolder.store import open_in_place

if TYPE_CHECKING:
    from tvm.s_tir import meta_schedule as ms

LOGGER = "tvm.s_tir.meta_schedule"
LOG_FORMAT = "%(asctime)s [%(levelname)s] %(name)s: %(message)s"


class _Settings:
    """The MetaSchedule logger's level and propagation: set while any run logs to its file,
    restored when the last one ends (the two runs go side by side)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._runs = 0
        self._saved = (logging.NOTSET, True)

    def enter(self, logger: logging.Logger, handler: logging.Handler) -> None:
        with self._lock:
            if not self._runs:
                self._saved = (logger.level, logger.propagate)
                logger.setLevel(logging.DEBUG)
                logger.propagate = False
            self._runs += 1
            logger.addHandler(handler)

    def leave(self, logger: logging.Logger, handler: logging.Handler) -> None:
        with self._lock:
            logger.removeHandler(handler)
            handler.close()
            self._runs -= 1
            if not self._runs:
                level, logger.propagate = self._saved
                logger.setLevel(level)


_SETTINGS = _Settings()


class _ThisThread(logging.Filter):
    """A run's file takes the records of its own thread: two runs side by side share
    MetaSchedule's loggers, and each run's search, cost model and callbacks log from the thread
    that runs it."""

    def __init__(self):
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record) -> bool:
        return record.thread == self.thread


@contextlib.contextmanager
def logs_to(path: Path) -> Iterator[logging.Logger]:
    """While tuning, MetaSchedule's logs (the task's log, the task scheduler's tables, the cost
    model's iterations) go to `path`, not to the console; the logger is restored when the last
    run ends."""
    logger = logging.getLogger(LOGGER)
    stream = os.fdopen(open_in_place(path, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8")
    handler = logging.StreamHandler(stream)  # appended, never through a link
    handler.set_name(f"pool-tuning:{path}")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(_ThisThread())
    _SETTINGS.enter(logger, handler)
    try:
        yield logger
    finally:
        _SETTINGS.leave(logger, handler)
        stream.close()


def tune_module(
    mod, target, work_dir: Path, *, space, seed: int, num_tuning_cores: int, **tune_tasks_options
) -> ms.Database:
    """Tune the module's one PrimFunc `main` as `tune_tir` would (same seeding, same task), with
    the logs in `work_dir/tuning.log`. Returns MetaSchedule's database."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.utils import fork_seed

    import_intrinsics_for(target)  # TuneContext's import of them all is left out (script_frames)
    with logs_to(Path(work_dir) / "tuning.log") as logger:
        (rand_state,) = fork_seed(seed, n=1)
        task = ms.TuneContext(
            mod=mod["main"],
            target=target,
            space_generator=space,
            search_strategy="evolutionary",
            task_name="main",
            rand_state=rand_state,
            num_threads=num_tuning_cores,
            logger=logger.getChild("task.main"),
        ).clone()
        return ms.tune_tasks(
            tasks=[task], task_weights=[1.0], work_dir=str(work_dir), **tune_tasks_options
        )
