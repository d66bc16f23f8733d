"""Every tuner a run can name, the only place a tuner's name is listed.

A tuner searches schedules of one kernel (the run's Case's, or a real network's) and hands the
comparison one more arm: its best schedule put back. A new tuner is one subpackage, holding its
`spec.Tuner` module (`tune_run(run, plan, progress)`, all it needs in its `spec.TunerPlan`) and
its `spec.TunerSpec`, and one entry here: the study (`tune --tuners`),
`tune sweep` and `tune model --tune-top` find it by the roles its spec declares (a run that names
no tuner: `default_tuners`), and the command line checks what its spec asks (`--storage`,
`--rpc-tracker`).
"""

from __future__ import annotations

from .metaschedule import METASCHEDULE
from .optuna import OPTUNA, OPTUNA_ONE_KERNEL
from .spec import Role, TunerSpec

TUNERS: dict[str, TunerSpec] = {
    spec.name: spec for spec in (OPTUNA, METASCHEDULE, OPTUNA_ONE_KERNEL)
}


def tuners_for(role: str) -> list[str]:
    """The tuners that take part in `role` (a `spec.Role`), in
    the registry's order."""
    return [name for name, spec in TUNERS.items() if role in spec.roles]


def default_tuners(target_kind: str) -> list[str]:
    """The tuners of a run that names none: those of `Role.DEFAULT`, and on CUDA those of
    `Role.CUDA_DEFAULT` too (the whole graph's kernel, whose arm is a GPU arm)."""
    roles = {Role.DEFAULT, Role.CUDA_DEFAULT} if target_kind == "cuda" else {Role.DEFAULT}
    return [name for name, spec in TUNERS.items() if roles & spec.roles]
