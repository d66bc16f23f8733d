"""Optuna's samplers by `--sampler` name, the points a search enqueues first, and the point it
enqueues when the sampler is stuck."""

from __future__ import annotations

import random

import optuna

from pool_fusion_tuning.tuning.tuners.space import Space


class GridOrder(optuna.samplers.RandomSampler):
    """Every point once, in a seeded order. Optuna's GridSampler calls `study.stop()` when spent,
    which an ask-and-tell loop cannot take, so the points are enqueued instead (`queue`); past
    them, it samples at random."""

    def __init__(self, seed: int):
        super().__init__(seed=seed)
        self.seed = seed

    def queue(self, space: Space) -> list[dict]:
        grid = space.points()
        random.Random(self.seed).shuffle(grid)
        return grid


# `--sampler` names and their factories (seed -> sampler): a new sampler is one entry here.
SAMPLERS = {
    "tpe": lambda seed: optuna.samplers.TPESampler(seed=seed, constant_liar=True),
    "random": lambda seed: optuna.samplers.RandomSampler(seed=seed),
    "cmaes": lambda seed: optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False),
    "grid": GridOrder,
}


def make_sampler(name: str, seed: int) -> optuna.samplers.BaseSampler:
    """The sampler `--sampler` names, seeded."""
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; choose from {', '.join(SAMPLERS)}")
    return SAMPLERS[name](seed)


def first_points(space: Space, sampler) -> list[dict]:
    """The points a search enqueues before it asks the sampler: the space's seeds, then, for
    the grid, every point in its order."""
    points = space.seeds()
    if isinstance(sampler, GridOrder):
        points += sampler.queue(space)
    return points


# Asks in a row that give no point to measure (repeats, pruned points) after which an unmeasured
# valid point is queued: a converged TPE keeps proposing its best point, and in a small space
# stopped 3 to 4 points short of a 24-trial budget (tests/test_processes.py's Case: 20 of 32).
STUCK_AFTER = 20


def enqueue_unmeasured(study: optuna.Study, points: dict, taken: set, seed: int) -> None:
    """Queue one of `points` (key -> params) not in `taken`, at random from `seed`; nothing
    where every point is taken."""
    if left := sorted(set(points) - taken):
        study.enqueue_trial(points[random.Random(seed).choice(left)])
