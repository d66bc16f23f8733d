"""What an Optuna search measured: its trials in order, and the summary the report shows."""

from __future__ import annotations

import optuna

from pool_fusion_tuning.tuning.candidates.outcome import Status
from pool_fusion_tuning.tuning.candidates.summary import summary_counts
from pool_fusion_tuning.tuning.tuners.space import completed

from .record import measurement, recorded_value


def records(study) -> list[dict]:
    """Measured trials in order, for the report's best-so-far plot and tables."""
    rows = []
    for trial in study.get_trials(deepcopy=False):
        record = measurement(trial)
        if record is not None:
            fields = {k: v for k, v in record.items() if k != "samples_us"}
            rows.append(
                {
                    "number": trial.number,
                    "params": completed(trial.params),
                    "measured": True,
                    "key": trial.user_attrs.get("key"),
                    **fields,
                    "kernel_us": recorded_value(record),
                }
            )
    return rows


def summarize(
    study,
    rows: list[dict],
    wall_s: float,
    rule_kernels: dict,
    exhaustive: dict | None,
    serial_key: str,
) -> dict:
    """The tuner's summary of its study: the counts, the rule lists' kernels and the issue's
    SERIAL point (`serial_key`) timed by the same runner, the best trial, its point and the
    parameters' importances, and the optimum where the space was measured whole."""
    summary, valid = summary_counts(rows, wall_s)
    for rules, record in rule_kernels.items():
        summary[f"{rules}_kernel_us"] = record.get("kernel_us")
        summary[f"{rules}_status"] = record.get("status")
    serial = [r for r in rows if r["key"] == serial_key]
    if serial and serial[0]["status"] == Status.OK:
        summary["serial_kernel_us"] = serial[0]["kernel_us"]
    if valid:
        best_index, best = min(enumerate(valid), key=lambda item: item[1]["kernel_us"])
        summary.update(
            {
                "best_params": best["params"],
                "best_kernel_us": best["kernel_us"],
                "best_trial": rows.index(best) + 1,
                "timer": best.get("timer"),
            }
        )
        summary["importances"] = _importances(study)
    if exhaustive is not None:
        values = [v for v in exhaustive.values() if v is not None]
        summary["exhaustive_points"] = len(exhaustive)
        summary["exhaustive_best_kernel_us"] = min(values) if values else None
    return summary


def _importances(study) -> dict | None:
    try:
        return {k: float(v) for k, v in optuna.importance.get_param_importances(study).items()}
    except Exception:  # too few distinct points; importances are optional in the report
        return None
