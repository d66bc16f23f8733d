"""Work that runs side by side in threads (the tuners, MetaSchedule's two runs): one tuner's
builds overlap another's timing, and the device takes one candidate at a time
(`candidates.DEVICE`). The first fatal error, or Ctrl-C, stops all of it (`candidates.stop_all`)
and is raised in the caller's thread. The run counts as stopping (`candidates.STOPPING`) until
the outermost of these calls has ended (MetaSchedule's two runs go side by side inside a tuner's
thread)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from .evaluator import STOPPING, stop_all

_ACTIVE = threading.Lock()
_calls = 0  # side_by_side calls under way, nested ones included


def side_by_side(
    tasks: dict[str, Callable] | Iterator[tuple[str, Callable]],
    fatal: Callable = lambda error: True,
    each: Callable | None = None,
    at_once: int | None = None,
) -> dict:
    """Run each task in a thread of its own, at most `at_once` at a time (all at once by
    default). Returns each one's result, or its error where that error is not `fatal` (a tuner
    that found nothing valid, whose failure the report states). `each(name, result)` hears each
    result as it comes, in the caller's thread. `tasks` may be an iterator of (name, task): it
    is asked for the next task, in the caller's thread, only when a thread is free and every
    result so far has been heard (so that it can decide then whether to start another)."""
    outcomes: dict = {}
    heard: set = set()

    def run(name: str, task: Callable) -> None:
        try:
            outcomes[name] = task()
        except BaseException as error:  # handed to the caller's thread
            outcomes[name] = error

    def take_stock() -> None:
        """Raise the first fatal error; hand each new result to `each`."""
        errors = [e for e in outcomes.values() if isinstance(e, BaseException) and fatal(e)]
        if errors:
            raise errors[0]
        for name, outcome in list(outcomes.items()):
            if name not in heard and not isinstance(outcome, BaseException) and each:
                each(name, outcome)
            heard.add(name)

    global _calls
    with _ACTIVE:
        _calls += 1
    waiting = iter(tasks.items()) if isinstance(tasks, dict) else tasks
    # at least one: with no task at all (a study of budget 0) the loop must still end
    limit = max(1, at_once or (len(tasks) if isinstance(tasks, dict) else 1))
    threads: list[threading.Thread] = []

    def start_while_free() -> bool:
        """Start tasks while a thread is free; False once no task is left to start."""
        while sum(thread.is_alive() for thread in threads) < limit:
            take_stock()  # the results so far heard before the next task is asked for
            name, task = next(waiting, (None, None))
            if task is None:
                return False
            thread = threading.Thread(target=run, args=(name, task), name=name, daemon=True)
            threads.append(thread)
            thread.start()
        return True

    try:
        more = True
        while more or any(thread.is_alive() for thread in threads):
            take_stock()
            more = more and start_while_free()
            time.sleep(0.2)  # short waits, so that Ctrl-C reaches the main thread at once
        take_stock()
    except BaseException:
        stop_all()
        for thread in threads:
            if thread.ident is not None:  # an interrupt may come before start
                thread.join(timeout=30)
        raise
    finally:
        with _ACTIVE:
            _calls -= 1
            if not _calls:
                STOPPING.clear()
    return outcomes
