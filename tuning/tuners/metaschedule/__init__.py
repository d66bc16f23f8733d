"""MetaSchedule (tuner `metaschedule`): its two runs (the default space and the template's), the
builder and runner bridged to the shared evaluator, the database, and RPC devices."""

from ..spec import Role, TunerSpec

METASCHEDULE = TunerSpec(
    name="metaschedule",
    entry="pool_fusion_tuning.tuning.tuners.metaschedule.tuner",
    budget_counts="candidates of its two runs together: `ms-default` half of it (rounded down), "
    "`ms-space` the rest",
    kernel_times={"metaschedule": "best_kernel_us"},
    held_against="fixed",
    roles=frozenset({Role.STUDY, Role.DEFAULT, Role.TUNE_TOP}),
    rpc="pool_fusion_tuning.tuning.tuners.metaschedule.rpc",
)
