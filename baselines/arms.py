"""The arms: ways to compile the whole graph, each the one pipeline with different hooks."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .protocols import Schedule
from .template import SERIAL, PoolSchedule


@dataclass(frozen=True)
class Arm:
    """One way to compile the graph.

    fuse              run FuseOps and FuseTIR
    split_after_pool  the pool's result leaves the dataflow block (the issue's PARTIAL)
    schedule          replaces the fused pool function before default scheduling: a
                      `protocols.Schedule` (picklable, for trial processes)
    rules             a rule list of `rules.RULE_LISTS`
    whole_graph       right after FuseOps, FuseAroundReduction merges the pool's kernel with the
                      prelude and the tail: one kernel for the whole graph
    bind_constants    right after FuseTIR, the fused pool kernel's 0-d constants bound in as
                      immediates (`bind_scalars.py`), as the project's kernels take them
    cuda_graph        Relax's CUDA graph rewriting (relax.backend.use_cuda_graph)
    capture           the whole VM call captured once into a CUDA graph (through PyTorch) and
                      replayed, with the input and outputs in fixed buffers
    masked_loads      after default scheduling, a guarded block writing a register loads at
                      clamped indices instead of behind its guard (`masked_loads.py`)
    """

    name: str
    fuse: bool = True
    split_after_pool: bool = False
    schedule: Schedule | None = None
    rules: str = "default"
    whole_graph: bool = False
    bind_constants: bool = False
    cuda_graph: bool = False
    capture: bool = False
    masked_loads: bool = False

    def describe(self) -> dict:
        """The arm as the run folder records it (its schedule as `Schedule.to_dict`), and for
        `fixed` the rule the candidate goes before."""
        described = {
            "name": self.name,
            "fuse": self.fuse,
            "split_after_pool": self.split_after_pool,
            "schedule": None if self.schedule is None else self.schedule.to_dict(),
            "rules": self.rules,
            "whole_graph": self.whole_graph,
            "bind_constants": self.bind_constants,
            "cuda_graph": self.cuda_graph,
            "capture": self.capture,
        }
        if self.masked_loads:  # recorded only where set: runs from before it read the same
            described["masked_loads"] = True
        if self.rules == "fixed":  # where the list puts the candidate rule (reports name it)
            from .rules import FIXED_RULE_BEFORE

            described["rule_before"] = FIXED_RULE_BEFORE
        return described


# The whole graph as one kernel by the candidate rule, guarded loads masked: on 14 H200 Cases
# masking was as fast or up to 15 % faster (reports/h200/stride1/).
ONE_KERNEL = Arm(
    "one-kernel", rules="fixed", whole_graph=True, bind_constants=True, masked_loads=True
)
DEFAULT_ARMS = (
    Arm("off", fuse=False),
    Arm("partial", split_after_pool=True),
    Arm("on"),
    Arm("serial", schedule=SERIAL),
)
# Arms `tune --arms` may add: the candidate rule (and the alternative), CUDA graphs for the
# launch-overhead floor, and the whole graph as one kernel.
ARMS = {
    arm.name: arm
    for arm in DEFAULT_ARMS
    + (
        Arm("fixed", rules="fixed"),
        Arm("reduction-fix", rules="reduction-fix"),
        Arm("on+graph", cuda_graph=True),
        Arm("fixed+graph", rules="fixed", cuda_graph=True),
        Arm("serial+graph", schedule=SERIAL, cuda_graph=True),
        Arm("fixed+capture", rules="fixed", capture=True),
        Arm("serial+capture", schedule=SERIAL, capture=True),
        ONE_KERNEL,
        dataclasses.replace(ONE_KERNEL, name="one-kernel+capture", capture=True),
    )
}


def template_arm(name: str, config: dict, whole_graph: bool = False) -> Arm:
    """A tuned arm whose fused pool kernel (or, with `whole_graph`, the one kernel of the
    whole graph) is one point of the schedule template (`tuned_arm`)."""
    return tuned_arm(name, PoolSchedule(**config), whole_graph)


def tuned_arm(name: str, schedule: Schedule, whole_graph: bool = False) -> Arm:
    """The arm of a tuned kernel: the pipeline of the tuners' task (`tuned_task_arm`), its fused
    kernel scheduled by `schedule`."""
    return dataclasses.replace(tuned_task_arm(whole_graph), name=name, schedule=schedule)


def tuned_task_arm(whole_graph: bool = False) -> Arm:
    """The pipeline whose fused pool kernel (with `whole_graph`, one kernel) the tuners tune:
    ON's (or one-kernel's), its 0-d constants bound as immediates."""
    return Arm("on", whole_graph=whole_graph, bind_constants=True)
