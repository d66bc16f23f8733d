"""What a model run measures, as run.json records it: the model (spec and options), target and
device, the rule lists compared, the peers, the timing protocol and the tuning asked for.

Its run.json has `kind: "model"`; its identity (what a resume must match) is model, target and
device. Settings are compared whole on a resume: another setting is refused in one line.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from pool_fusion_tuning.baselines.models.model_spec import ModelOptions
from pool_fusion_tuning.baselines.peers import PeerRole, peers_for
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.reports.kernel_classes import CLASSES
from pool_fusion_tuning.runfolder.records import RunOptions
from pool_fusion_tuning.runfolder.store import Run
from pool_fusion_tuning.tuning.measure.model_workload import ModelArm, ModelWorkload
from pool_fusion_tuning.tuning.measure.protocol import Protocol
from pool_fusion_tuning.tuning.tuners.registry import tuners_for
from pool_fusion_tuning.tuning.tuners.spec import Role

KIND = "model"
TUNED = "tvm-tuned"
# The tuned arm is the candidate's list with the tuned kernels put in.
TUNED_BASE = "fixed"
# A model run's default timing: 3 samples of at least 5 ms per arm, figure and block, each GPU-time
# sample 5 calls queued (a network's call takes milliseconds), warm-up by 10 calls and 0.25 s, 2
# checks per arm. `tune model` runs 3 trials, `tune models` 1.
MODEL_PROTOCOL = Protocol(number=1, warmup_calls=10, checks=2, queued_calls=5)
# `--kernels`: which kernels --tune-top K takes: the K costliest pattern kernels (the default, as
# older runs did), of any kind, or of one class of the report's gap by kernel class.
# Classes may be given together ("matmul,convolution"), and a later command may add classes to a
# run's tuning (`reopen`).
CLASS_CHOICES = {name.replace(" ", "-"): name for name in CLASSES}  # --kernels name: class
KERNEL_CHOICES = ("pattern", "any", *CLASS_CHOICES)
PATTERN_KERNELS, ANY_KERNELS = KERNEL_CHOICES[:2]
# `--tune-top all`: every kernel whose share of the network's summed kernel time (launches x time
# alone, default list) is at least this.
ALL_KERNELS = "all"
ALL_MIN_SHARE = 0.005
# What each setting is given by on the command line, where not its own name with dashes.
_OPTIONS = {
    "spec": "the model",
    "target_spec": "--target",
    "trials": "--processes",
    "rule_lists": "--rules",
    "analyze_only": "--analyze",
}
# Settings that hold options of their own: a difference is said by the option inside.
_NESTED = ("model", "options", "protocol")


def chosen_classes(kernels: str) -> set[str] | None:
    """The classes a --kernels choice takes (every class for `any`; None for `pattern`, which is
    no class)."""
    if kernels == PATTERN_KERNELS:
        return None
    if kernels == ANY_KERNELS:
        return set(CLASSES)
    return {CLASS_CHOICES[name] for name in kernels.split(",")}


def arm_name(rules: str) -> str:
    """The end-to-end arm of a rule list: `tvm-default`, `tvm-fixed`, ..."""
    return f"tvm-{rules}"


@dataclass(frozen=True)
class ModelPlan:
    spec: str
    options: ModelOptions
    target: TargetSpec
    protocol: Protocol
    rule_lists: list[str] = field(default_factory=lambda: ["default", "fixed"])
    peers: list[str] = field(default_factory=lambda: peers_for(PeerRole.MODEL))
    tune_top: int | str = 0  # a count, or ALL_KERNELS
    budget: int = 0
    analyze_only: bool = False
    arch: str = "sm_90"  # of the analysis (the GPU's own on a GPU)
    shows: str | None = None  # why a built-in model is in the list
    command: str = ""
    kernels: str = PATTERN_KERNELS  # of --tune-top: KERNEL_CHOICES
    time_budget_s: float | None = None  # of --tune-top: tuning wall time, over all commands
    # Of --tune-top, how many kernels are tuned side by side: how fast, not what (not a setting).
    kernels_at_once: int = 1
    # Of --tune-top, which tuners search each kernel: which searches a later kernel gets, not what
    # a run measures (each kernel's result names a tuner not run), so no setting either.
    tuners: list[str] = field(default_factory=lambda: tuners_for(Role.TUNE_TOP))
    # --rpc-tracker, --rpc-key (where MetaSchedule measures; `rpc.label` in the trial rows) and
    # --storage (where the kernels' Optuna studies are kept): where, not what, so no setting.
    where: RunOptions = field(default_factory=lambda: RunOptions())
    # --warm-start: the run folder whose MetaSchedule records a kernel's new search begins with,
    # each measured again; each kernel's result says what it took, so no setting either.
    warm_start: Path | None = None

    @property
    def identity(self) -> dict:
        model = {"spec": self.spec, "options": self.options.to_dict()}
        return {"model": model, "target": self.target.kind, "device": self.target.device}

    @property
    def settings(self) -> dict:
        """Everything that decides what the run measures (`kernels` only where given, as older
        runs lack it). Not `time_budget_s`, which a later command may raise (the report gives the
        last one)."""
        return {
            "model": self.identity["model"],
            "target_spec": self.target.to_json(),
            "protocol": self.protocol.to_dict(),
            "rule_lists": self.rule_lists,
            "peers": self.peers,
            "tune_top": self.tune_top,
            "budget": self.budget,
            "analyze_only": self.analyze_only,
            "arch": self.arch,
            **({"kernels": self.kernels} if self.kernels != PATTERN_KERNELS else {}),
        }

    def meta(self) -> dict:
        return {
            "kind": KIND,
            "identity": self.identity,
            "settings": self.settings,
            "shows": self.shows,
            "command": self.command,
        }

    @property
    def tunes_all(self) -> bool:
        return self.tune_top == ALL_KERNELS

    @property
    def workload(self) -> ModelWorkload:
        return ModelWorkload(self.spec, self.options, self.target.kind)

    def arms(self, tuned: str | None = None) -> list[ModelArm]:
        """The TVM arms: one per rule list, and the tuned one where `tuned` (its kernels' file)
        is given."""
        arms = [ModelArm(arm_name(rules), rules) for rules in self.rule_lists]
        return arms + ([ModelArm(TUNED, TUNED_BASE, tuned)] if tuned else [])


def kernel_options(run: Run, plan: ModelPlan, kernel: str) -> RunOptions:
    """Where a kernel's tuners measure and keep their studies (`KernelJob.options`): the plan's
    `where`, and with --storage the kernel's study name there, from the run folder's name, a
    token unique to the run (kept in run.json for the next command) and the kernel's."""
    where: RunOptions = {**plan.where}
    if "storage" in where:
        if "study" not in run.model_meta:
            run.update_meta(study=f"{run.path.name}-{secrets.token_hex(4)}")
        where["study"] = f"{run.model_meta['study']}-{kernel}"
    return where


def settings_difference(stored: dict, given: dict) -> str:
    """The first setting in which the folder's `stored` and the command's `given` differ, as its
    option says it: "--budget: 16 in the folder, 32 here"."""
    for key in dict.fromkeys([*stored, *given]):
        there, here = stored.get(key), given.get(key)
        if key in _NESTED and isinstance(there, dict) and isinstance(here, dict):
            found = settings_difference(there, here)
            if found != "none":
                return found
        elif there != here:
            option = _OPTIONS.get(key, f"--{key.replace('_', '-')}")
            return f"{option}: {_said(there)} in the folder, {_said(here)} here"
    return "none"


def _said(value) -> str:
    if value is None:
        return "not given"
    if isinstance(value, bool):
        return "given" if value else "not given"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "none"
    return str(value)
