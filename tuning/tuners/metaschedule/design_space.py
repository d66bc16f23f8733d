"""MetaSchedule's space of the schedule template (run `ms-space`): a ScheduleFn whose structural
choices are separate designs and whose threads and outputs per thread are sampled decisions.

The designs tiling W and H come first, as they were before the flat designs were added (a stored
database's traces replay on them); then one flat design per structure, outputs per thread along
the flattened output sampled, with vector stores on CUDA (where a sampled tile does not divide
the output, TVM stores its elements one by one); then on CUDA one design per structure with
consecutive threads on consecutive outputs, outputs per thread a block apart sampled."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from tvm import s_tir

from pool_fusion_tuning.baselines.template import PoolSchedule
from pool_fusion_tuning.tuning.tuners.space import CPU_DOMAINS, GPU_DOMAINS

DOMAINS = {"cuda": GPU_DOMAINS, "llvm": CPU_DOMAINS}
# Sampled decisions of the ms-space designs: the Optuna space's numeric knobs, with its domains.
SAMPLED: dict[str, dict[str, list]] = {
    kind: {name: domains[name] for name in ("threads", "outputs_w", "outputs_h") if name in domains}
    for kind, domains in DOMAINS.items()
}
# Those of the flat designs: threads, and outputs per thread along the flattened output (1 is
# the designs above).
FLAT_SAMPLED: dict[str, dict[str, list]] = {
    kind: {
        **{name: domains[name] for name in ("threads",) if name in domains},
        "outputs_flat": [v for v in domains["outputs_flat"] if v > 1],
    }
    for kind, domains in DOMAINS.items()
}
FLAT_FIXED: dict[str, dict[str, bool]] = {"cuda": {"vector": True}, "llvm": {}}
# Those of the strided designs (CUDA, after the flat ones): threads, and outputs per thread a
# block apart, with consecutive threads on consecutive outputs.
STRIDED_SAMPLED: dict[str, dict[str, list]] = {
    "cuda": {
        "threads": GPU_DOMAINS["threads"],
        "outputs_strided": [v for v in GPU_DOMAINS["outputs_strided"] if v > 1],
    }
}
# Structural choices, one design each. Vector staging is left out on CUDA: its width depends on
# the tile, which a replayed trace cannot re-derive. Outer binding with shared memory never fits.
STRUCTURAL = {"cuda": ("thread_axis", "pooled_scope", "unroll"), "llvm": ("unroll", "vector")}
NEVER_FITS = ("outer", "shared")


def _structures(kind: str) -> list[dict]:
    names = STRUCTURAL[kind]
    every = (
        dict(zip(names, values))
        for values in itertools.product(*(DOMAINS[kind][name] for name in names))
    )
    return [s for s in every if (s.get("thread_axis"), s.get("pooled_scope")) != NEVER_FITS]


STRUCTURES = {kind: _structures(kind) for kind in STRUCTURAL}


def template_space(target_kind: str) -> Callable[[s_tir.Schedule], list[s_tir.Schedule]]:
    """The ScheduleFn: per structure, a design tiling W and H and a flat one, numeric knobs as
    sampled decisions."""
    every = STRUCTURES[target_kind]
    tilings: list[tuple[dict[str, list], dict[str, bool], list[dict]]] = [
        (SAMPLED[target_kind], {}, every),
        (FLAT_SAMPLED[target_kind], FLAT_FIXED[target_kind], every),
    ]
    if target_kind in STRIDED_SAMPLED:
        inner = [s for s in every if s["thread_axis"] == "inner"]
        tilings.append((STRIDED_SAMPLED[target_kind], {}, inner))

    def designs(sch):
        out = []
        for sampled, fixed, structures in tilings:
            for structure in structures:
                design = sch.copy()
                values = {
                    name: design.sample_categorical(choices, [1 / len(choices)] * len(choices))
                    for name, choices in sampled.items()
                }
                PoolSchedule(**values, **{**structure, **fixed}).schedule(design, target_kind)
                out.append(design)
        return out

    return designs
