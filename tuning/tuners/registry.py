"""Every tuner a run can name.

A tuner searches schedules of one kernel of the run's Case and hands the final comparison one
more arm: its best schedule put back into the graph. A new tuner is one module, holding its
function (a `spec.Tuner`) and its `spec.TunerSpec`, and one entry here.
"""

from __future__ import annotations

from .metaschedule import METASCHEDULE
from .optuna import OPTUNA, OPTUNA_ONE_KERNEL
from .spec import TunerSpec

TUNERS: dict[str, TunerSpec] = {
    spec.name: spec for spec in (OPTUNA, METASCHEDULE, OPTUNA_ONE_KERNEL)
}
