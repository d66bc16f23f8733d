"""Optuna over the schedule template (tuners `optuna` and `optuna-one-kernel`): the study in its
storage, the sampler, the ask-and-tell loop, `--workers`, and the measurement record."""

from ..spec import Role, TunerSpec

OPTUNA = TunerSpec(
    name="optuna",
    entry="tuning.tuners.optuna.tuner",
    budget_counts="trials of one Optuna study{workers}, failed candidates included (fewer where "
    "the space is spent)",
    kernel_times={
        "on": "default_kernel_us",
        "fixed": "fixed_kernel_us",
        "serial": "serial_kernel_us",
        "optuna": "best_kernel_us",
    },
    held_against="fixed",
    roles=frozenset({Role.STUDY, Role.DEFAULT, Role.SWEEP, Role.TUNE_TOP}),
    storage="tuning.tuners.optuna.storage_checks",
)
# The same search over the one kernel of the whole graph (arm one-kernel's kernel).
OPTUNA_ONE_KERNEL = TunerSpec(
    name="optuna-one-kernel",
    entry="tuning.tuners.optuna.tuner",
    budget_counts="the same, for the one kernel of the whole graph",
    kernel_times={"one-kernel": "fixed_kernel_us", "optuna-one-kernel": "best_kernel_us"},
    held_against="one-kernel",
    extra={"whole": True},
    roles=frozenset({Role.STUDY, Role.SWEEP}),
    note="Optuna over the one kernel of the whole graph",
    storage="tuning.tuners.optuna.storage_checks",
)
