"""A trial's measurement in the Optuna storage: one user attribute holding the whole record.

A kill can fall between any two storage writes. So the record reaches the storage in one write
(`set_user_attr(RECORD, record)`) and the trial is told after it: a trial is measured if and
only if it holds the whole record, and a resume tells a measured trial its recorded time and
fails the others. Runs made before kept one attribute per field with `samples_us` written
last; such a trial counts as measured only where `samples_us` is there.
"""

from __future__ import annotations

from collections.abc import Mapping

import optuna

from pool_fusion_tuning.tuning.base.faults import measurement_written
from pool_fusion_tuning.tuning.candidates.outcome import Status

RECORD = "measurement"
_RUNNING = (optuna.trial.TrialState.RUNNING,)


def measurement(trial) -> dict | None:
    """The trial's whole record, or None where it measured nothing (or a kill cut it short)."""
    attrs = trial.user_attrs
    record = attrs.get(RECORD)
    if isinstance(record, dict) and _complete(record):
        return record
    if attrs.get("measured") and "samples_us" in attrs:  # a complete record of the old layout
        legacy = {k: v for k, v in attrs.items() if k != "measured"}
        return legacy if _complete(legacy) else None
    return None


def _complete(record: dict) -> bool:
    if record.get("status") == Status.OK:
        return isinstance(record.get("kernel_us"), (int, float))
    return isinstance(record.get("status"), str)


def recorded_value(record: Mapping | None) -> float | None:
    """The objective a record gives: its time where it is valid, else None (a failure, or
    no record: nothing measured)."""
    return record["kernel_us"] if record and record["status"] == Status.OK else None


def store_measurement(study, trial, record: dict) -> None:
    """Write the record in one storage write, then tell the trial its outcome."""
    trial.set_user_attr(RECORD, record)
    measurement_written()
    tell_recorded(study, trial.number, record)
    measurement_written()


def tell_recorded(study, number: int, record: dict) -> None:
    tell_value(study, number, recorded_value(record))


def tell_value(study, trial, value: float | None) -> None:
    """Tell Optuna a trial's time, or its failure where there is none."""
    if value is None:
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    else:
        study.tell(trial, value)


def close_interrupted(study) -> None:
    """Finish the trials a killed run asked but never told: one that holds its whole record
    keeps it; the others measured nothing and are failed."""
    for trial in study.get_trials(deepcopy=False, states=_RUNNING):
        record = measurement(trial)
        if record is not None:
            tell_recorded(study, trial.number, record)
        else:
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
