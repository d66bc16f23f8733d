"""Optuna's samplers by `--sampler` name, and the points a search enqueues first."""

from __future__ import annotations

import random

import optuna

from tuning.tuners.space import Space


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
