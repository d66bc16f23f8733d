"""Optuna over the schedule template (tuners `optuna` and `optuna-one-kernel`): the study in its
storage, the sampler, the ask-and-tell loop, `--workers`, and the measurement record."""

from ..spec import Role, TunerSpec

# The least share of --budget the whole graph's search takes (the sweep's default budget): fewer
# trials barely leave the seeded points.
ONE_KERNEL_LEAST = 40

OPTUNA = TunerSpec(
    name="optuna",
    entry="pool_fusion_tuning.tuning.tuners.optuna.tuner",
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
    storage="pool_fusion_tuning.tuning.tuners.optuna.storage_checks",
)
# The same over the whole graph's one kernel; in the default on CUDA, at a share of the budget so
# that the study keeps its wall time (the tuners share the builders' cores and the device).
OPTUNA_ONE_KERNEL = TunerSpec(
    name="optuna-one-kernel",
    entry="pool_fusion_tuning.tuning.tuners.optuna.tuner",
    budget_counts=f"trials of one Optuna study of the one kernel of the whole graph, failed "
    f"candidates included: a quarter of it (rounded down), at least {ONE_KERNEL_LEAST} (all of "
    f"a smaller budget)",
    kernel_times={"one-kernel": "fixed_kernel_us", "optuna-one-kernel": "best_kernel_us"},
    held_against="one-kernel",
    extra={"whole": True},
    roles=frozenset({Role.STUDY, Role.SWEEP, Role.CUDA_DEFAULT}),
    note=f"optuna-one-kernel: Optuna over the one kernel of the whole graph, BUDGET//4 trials "
    f"(at least {ONE_KERNEL_LEAST}, all of a smaller BUDGET)",
    storage="pool_fusion_tuning.tuning.tuners.optuna.storage_checks",
)


def one_kernel_budget(budget: int) -> int:
    """The trials `optuna-one-kernel` measures of `--budget` (its `budget_counts`)."""
    return max(budget // 4, min(budget, ONE_KERNEL_LEAST))
