"""A real network as the harness measures it (`workload.Workload`): TVM builds of the model, one per
rule list (and one tuned), against PyTorch eager; PyTorch eager and torch.compile as peers
(`PeerRole.MODEL`), timed in the same blocks.

A trial process loads the model again from its spec, with the same seeded random weights the TVM
builds were made from. Loading turns TF32 off for the whole process (`check.set_tf32`), so the
reference and peers run fp32 as TVM's kernels do; each check records the switches. The tolerance is
relative to each output's magnitude (`baselines/models/eager_check.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pool_fusion_tuning.baselines.models.model_spec import ModelOptions
from pool_fusion_tuning.baselines.peers import PeerRole, peers_for

if TYPE_CHECKING:  # torch, imported where a model is loaded
    from pool_fusion_tuning.baselines.models.load import LoadedModel
from pool_fusion_tuning.baselines.protocols import TimedArm

from .workload import export

_LOADED: dict = {}  # (spec, options) -> LoadedModel, once per process


@dataclass(frozen=True)
class ModelArm:
    """A TVM build of the model: the backend's pipeline with rule list `rules`, the kernels of
    `tuned` (an IRModule's JSON: kernel name -> tuned schedule) put in first."""

    name: str
    rules: str
    tuned: str | None = None
    capture: bool = False  # the harness's field; the whole call is never captured for a model
    cuda_graph: bool = False

    def describe(self) -> dict:
        return {"name": self.name, "rules": self.rules, "tuned": self.tuned is not None}


@dataclass(frozen=True)
class ModelWorkload:
    spec: str
    options: ModelOptions
    target_kind: str

    @property
    def device(self) -> str:
        return "cuda" if self.target_kind == "cuda" else "cpu"

    def loaded(self) -> LoadedModel:
        """The PyTorch module and example inputs, loaded once per process, TF32 off."""
        from pool_fusion_tuning.baselines.models.eager_check import set_tf32
        from pool_fusion_tuning.baselines.models.load import load_model
        from pool_fusion_tuning.baselines.models.model_spec import parse_spec

        key = (self.spec, self.options)
        if key not in _LOADED:
            set_tf32(False)
            _LOADED[key] = load_model(parse_spec(self.spec), self.options)
        return _LOADED[key]

    def input(self, seed: int) -> tuple[np.ndarray, ...]:
        return tuple(self.loaded().random_inputs(seed))

    def check(self, arm: TimedArm, checks: int) -> dict:
        """The worst check over `checks` draws (by error against bound), the first failing one if
        any."""
        from pool_fusion_tuning.baselines.models.eager_check import (
            check_outputs,
            tf32_state,
            torch_outputs,
        )

        module, worst = self.loaded().module, None
        for seed in range(checks):
            x = self.input(seed)
            want = torch_outputs(module, list(x), self.device)
            found = check_outputs(arm.outputs(x), want, self.options.dtype)
            if not found.correct:
                return {**found.to_dict(), "tf32": tf32_state()}
            if worst is None or _share(found) > _share(worst):
                worst = found
        return {**worst.to_dict(), "tf32": tf32_state()} if worst else {"correct": False}

    def build(self, arm: ModelArm, target, ir_dir, library: Path | None, kernels: bool) -> tuple:
        """The model imported afresh, lowered with the arm's rule list (on llvm the host
        pipeline) and tuned kernels, built, exported to `library`."""
        from pool_fusion_tuning.baselines.models.build import build_model, tuned_kernels
        from pool_fusion_tuning.baselines.models.importer import prepare_model
        from pool_fusion_tuning.baselines.models.kernels import rule_lists

        started = time.monotonic()
        model = prepare_model(self.spec, self.options)
        rules = rule_lists(target, (arm.rules,))[arm.rules] if target.kind.name == "cuda" else None
        replaced = tuned_kernels(Path(arm.tuned)) if arm.tuned else None
        executable = build_model(model.mod, target, rules, replaced)
        if library is not None:
            export(executable, library)
        return executable, {"build_s": time.monotonic() - started}

    def peer(self, name: str, target_kind: str) -> TimedArm:
        """The peer `name` on the module (moved to the device), outputs flattened as
        `torch.export` does. Its first call compiles or warms here, so its compile time is the
        peer's build time."""
        from torch.utils import _pytree

        from pool_fusion_tuning.baselines.torch_peer import PeerArm

        if name not in peers_for(PeerRole.MODEL):
            raise ValueError(
                f"a model's peers are {', '.join(peers_for(PeerRole.MODEL))}, not {name}"
            )
        module: Any = self.loaded().module  # a torch.nn.Module (load.py types it `object`)
        module = module.to(self.device)

        def graph(*inputs) -> tuple:
            return tuple(_pytree.tree_leaves(module(*inputs)))

        peer = PeerArm(name, graph, target_kind)
        peer.outputs(self.input(0))
        return peer


def _share(found) -> float:
    """A check's error as a share of its bound."""
    return (found.max_abs_err or 0.0) / (found.bound or 1.0)
