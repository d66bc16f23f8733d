"""MetaSchedule's space of the schedule template (run `ms-space`): a ScheduleFn whose structural
choices are separate designs and whose threads and outputs per thread are sampled decisions."""

from __future__ import annotations

import itertools

from baselines.template import PoolSchedule

# Sampled decisions of the ms-space designs (the Optuna space's numeric knobs).
SAMPLED = {"cuda": {"threads": [32, 64, 128, 256, 512, 1024], "outputs_w": [1, 2, 4, 8],
                    "outputs_h": [1, 2, 4]},
           "llvm": {"outputs_w": [1, 2, 4, 8], "outputs_h": [1, 2, 4]}}
# Structural choices, one design each. Vector staging is left out: its width depends on the
# tile, which a replayed trace cannot re-derive. Outer binding with shared memory never fits.
STRUCTURES = {
    "cuda": [dict(thread_axis=a, pooled_scope=p, unroll=u) for a, p, u in itertools.product(
        ("inner", "outer"), ("local", "shared"), (False, True)) if (a, p) != ("outer", "shared")],
    "llvm": [dict(unroll=u, vector=v) for u, v in itertools.product((False, True), repeat=2)],
}


def template_space(target_kind: str):
    """The ScheduleFn: one design per structure, numeric knobs as sampled decisions."""
    sampled = SAMPLED[target_kind]

    def designs(sch):
        out = []
        for structure in STRUCTURES[target_kind]:
            design = sch.copy()
            values = {name: design.sample_categorical(choices, [1 / len(choices)] * len(choices))
                      for name, choices in sampled.items()}
            PoolSchedule(**values, **structure).schedule(design, target_kind)
            out.append(design)
        return out

    return designs
