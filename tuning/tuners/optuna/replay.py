"""How close each sampler comes to the space's optimum, replayed on the exhaustive table.

Once every point was measured (`--exhaustive`), a sampler's search can be replayed against those
measurements at no device cost: the same points, the same values, only the order of asking
differs. This isolates the sampler from measurement noise; the report says the figures are replays.
"""

from __future__ import annotations

import statistics

import optuna

from pool_fusion_tuning.tuning.tuners.space import Space, key

from .record import tell_value
from .samplers import STUCK_AFTER, enqueue_unmeasured, first_points, make_sampler

WITHIN = 0.10


def replay(space: Space, table: dict, sampler: str, seed: int, trials: int) -> dict:
    """Run `sampler` for `trials` measured points against `table` (key -> kernel us or None)."""
    optimum = min(v for v in table.values() if v is not None)
    study = optuna.create_study(direction="minimize", sampler=make_sampler(sampler, seed))
    for params in first_points(space, study.sampler):
        study.enqueue_trial(params, skip_if_exists=True)
    seen: dict[str, float | None] = {}  # key -> the point's time (None: not valid)
    best, reached = float("inf"), None
    trials = min(trials, len(table))  # a small space is spent before the budget
    points = {key(p): p for p in space.valid_points() if key(p) in table}
    asks = stuck = 0
    while len(seen) < trials and asks < 50 * trials:
        asks += 1
        if stuck >= STUCK_AFTER:  # as the search does
            enqueue_unmeasured(study, points, set(seen), asks)
            stuck = 0
        trial = study.ask()
        params = space.suggest(trial)
        point = key(params)
        if space.why_invalid(params) or point not in table:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            stuck += 1
            continue
        value = table[point]
        stuck = stuck + 1 if point in seen else 0
        if point not in seen:
            seen[point] = value
            if value is not None and value < best:
                best = value
            if reached is None and best <= optimum * (1 + WITHIN):
                reached = len(seen)
        tell_value(study, trial, value)
    return {
        "sampler": sampler,
        "seed": seed,
        "best_kernel_us": best,
        "gap": best / optimum - 1,
        "trials_to_within_10pct": reached,
        "measured": len(seen),
    }


def compare_samplers(
    space: Space, table: dict, trials: int = 100, samplers=("tpe", "random"), seeds=(0, 1, 2)
) -> dict:
    """Per sampler: each seed's replay, and the median gap over seeds."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    result = {}
    for name in samplers:
        runs = [replay(space, table, name, seed, trials) for seed in seeds]
        result[name] = {
            "trials": trials,
            "runs": runs,
            "median_gap": statistics.median(r["gap"] for r in runs),
        }
    return result
