"""Why MetaSchedule's default CUDA space fails on the fused kernel, without a GPU."""

from __future__ import annotations

import collections

import tvm
from tvm.s_tir import meta_schedule as ms

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.script_frames import import_intrinsics_for
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.candidates.builder import error_line
from pool_fusion_tuning.tuning.candidates.kernel import fused_function, kernel_module


def default_space_outcomes(
    case: Case, drop_rules: tuple = (), samples: int = 32, seed: int = 1
) -> dict:
    """Build outcomes of candidates sampled from the default CUDA space, by design and reason.

    A diagnosis that needs no GPU (the failures happen while TVM lowers the TIR). `drop_rules`
    names schedule rules to leave out of the default list, e.g. ("ParallelizeVectorizeUnroll",).
    """
    cuda = TargetSpec("cuda")
    target = cuda.tvm()
    _, func = fused_function(case, cuda)
    import_intrinsics_for(target)
    rules = [r for r in ms.ScheduleRule.create("cuda") if type(r).__name__ not in drop_rules]
    space = ms.space_generator.PostOrderApply(
        sch_rules=rules, postprocs="cuda", mutator_probs="cuda"
    )
    context = ms.TuneContext(
        mod=kernel_module(func),
        target=target,
        space_generator=space,
        search_strategy=ms.search_strategy.ReplayTrace(),
        task_name="fused_pool",
        num_threads=1,
        rand_state=seed,
    )
    designs = context.space_generator.generate_design_space(context.mod)
    context.pre_tuning(max_trials=samples, num_trials_per_iter=samples, design_spaces=designs)
    outcomes: collections.Counter[tuple[str, str]] = collections.Counter()
    for candidate in context.generate_measure_candidates():
        design = (
            "cross-thread reduction (shared)"
            if 'storage_scope="shared"' in str(candidate.sch.trace)
            else "two kernels (global intermediate)"
        )
        try:
            tvm.compile(candidate.sch.mod, target=target)
            outcomes[(design, "built")] += 1
        except Exception as error:  # the outcome being counted
            outcomes[(design, error_line(str(error)))] += 1
    return {f"{design}: {reason}": count for (design, reason), count in sorted(outcomes.items())}
