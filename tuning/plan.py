"""A run's plan: what it measures (Case, target, device, arms), how (protocol), and which tuners
it runs with what budget. run.json records it when the run starts; every phase reads it back
typed (`RunPlan.of`), never picking fields out of run.json by name."""

from __future__ import annotations

from dataclasses import dataclass, field

from pool_fusion_tuning.baselines.arms import ARMS, DEFAULT_ARMS, Arm
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.peers import PEERS
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.runfolder.records import RunMeta, RunOptions
from pool_fusion_tuning.runfolder.store import run_identity
from pool_fusion_tuning.tuning.measure.protocol import Protocol


@dataclass(frozen=True)
class RunPlan:
    case: Case
    target: TargetSpec
    protocol: Protocol
    arm_names: list[str]
    tuners: list[str] = field(default_factory=list)
    budget: int = 0
    options: RunOptions = field(default_factory=lambda: RunOptions())
    command: str = ""

    @property
    def identity(self) -> dict:
        """What a resume must match (`store.run_identity`)."""
        return run_identity(self.case.to_dict(), self.target.kind, self.target.device)

    def meta(self) -> dict:
        """run.json as a new run starts it (its keys in the order runs have always stored)."""
        return {
            "case": self.case.to_dict(),
            "target_spec": self.target.to_json(),
            "identity": self.identity,
            "protocol": self.protocol.to_dict(),
            "tuners": self.tuners,
            "budget": self.budget,
            "command": self.command,
            "options": self.options,
            "arm_names": self.arm_names,
            "arms": describe_arms(*split_arms(self.arm_names)),
        }

    @classmethod
    def of(cls, meta: RunMeta) -> "RunPlan":
        """The plan a run.json records (runs from before `arm_names` had the default arms)."""
        return cls(
            Case.from_dict(meta["case"]),
            TargetSpec.of_json(meta["target_spec"], meta["identity"]["device"]),
            Protocol(**meta["protocol"]),
            meta.get("arm_names", [arm.name for arm in DEFAULT_ARMS]),
            meta["tuners"],
            meta["budget"],
            meta["options"],
            meta.get("command", ""),
        )


def split_arms(names: list[str]) -> tuple[list[Arm], tuple[str, ...]]:
    """The TVM arms and the peers (other frameworks) that `--arms` names."""
    return [ARMS[n] for n in names if n in ARMS], tuple(n for n in names if n in PEERS)


def describe_arms(arms: list[Arm], peers: tuple[str, ...]) -> list[dict]:
    return [arm.describe() for arm in arms] + [{"name": p, "peer": True} for p in peers]
