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
from pathlib import Path

LOGGER = "tvm.s_tir.meta_schedule"
LOG_FORMAT = "%(asctime)s [%(levelname)s] %(name)s: %(message)s"


@contextlib.contextmanager
def logs_to(path: Path):
    """While tuning, MetaSchedule's logs (the task's log, the task scheduler's tables, the cost
    model's iterations) go to `path`, not to the console; the logger is restored afterwards."""
    logger = logging.getLogger(LOGGER)
    handler = logging.FileHandler(path, mode="a")
    handler.set_name(f"pool-tuning:{path}")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(level)
        logger.propagate = propagate


def tune_kernel(
    mod, target, work_dir: Path, *, space, seed: int, num_tuning_cores: int, **tune_tasks_options
):
    """Tune the module's one PrimFunc `main` as `tune_tir` would (same seeding, same task), with
    the logs in `work_dir/tuning.log`. Returns MetaSchedule's database."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.utils import fork_seed

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
