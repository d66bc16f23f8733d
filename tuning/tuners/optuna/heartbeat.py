"""Trials left RUNNING by a worker that died elsewhere (another machine, a lost connection).

On RDB storages (SQLite, PostgreSQL, ...) each process records a heartbeat every HEARTBEAT_S
for the trials it has in flight, and a worker sharing the study fails the trials whose
heartbeat stopped more than GRACE_S ago before it asks for more (Optuna's `fail_stale_trials`).
A failed trial that holds its whole measurement keeps it (`record.py`); its point is
not measured again. Optuna 5's journal storage has no heartbeat: there, trials a killed run
left are closed by that run's resume (its folder's lock makes it the only writer).
"""

from __future__ import annotations

import threading
import warnings

import optuna
from optuna.storages._heartbeat import is_heartbeat_enabled

HEARTBEAT_S = 20
GRACE_S = 90

# Optuna warns that heartbeats are meant for `optimize`; an ask-and-tell loop records its own.
warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed")


def heartbeat_options() -> dict:
    return {"heartbeat_interval": HEARTBEAT_S, "grace_period": GRACE_S}


def fail_stale_trials(study) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


class Heartbeat:
    """A thread that records the heartbeat of this process's trials in flight."""

    def __init__(self, study):
        # The storage behind the study, as `optuna.storages.fail_stale_trials` reaches it.
        storage = study._storage
        self._storage = storage if is_heartbeat_enabled(storage) else None
        self._trials: set[int] = set()
        self._lock = threading.Lock()
        self._stop = None

    @property
    def beats(self) -> bool:
        """Whether the storage records heartbeats: a trial in flight is then alive."""
        return self._storage is not None

    def add(self, trial) -> None:
        if self._storage is None:
            return
        trial_id = trial._trial_id  # Optuna's own heartbeat thread is keyed by it too
        self._storage.record_heartbeat(trial_id)
        with self._lock:
            self._trials.add(trial_id)
        if self._stop is None:
            self._stop = threading.Event()
            threading.Thread(target=self._beat, args=(self._stop,), daemon=True).start()

    def remove(self, trial) -> None:
        with self._lock:
            self._trials.discard(getattr(trial, "_trial_id", None))

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None

    def _beat(self, stop: threading.Event) -> None:
        storage = self._storage
        assert storage is not None  # the thread starts only where heartbeats are recorded
        while not stop.wait(HEARTBEAT_S):
            with self._lock:
                trials = list(self._trials)
            for trial_id in trials:
                try:
                    storage.record_heartbeat(trial_id)
                except Exception:  # a storage hiccup: the next beat tries again
                    pass
