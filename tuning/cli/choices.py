"""What a `tune` command line names, checked before anything runs: tuners, arms, the target; and
the names a stored run.json holds, checked before a resume continues it."""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path

import tvm

from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.peers import PEERS, PeerRole, peers_for
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.torch_peer import require_torch, torch_available
from pool_fusion_tuning.runfolder.records import RunMeta
from pool_fusion_tuning.runfolder.store import RunError
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.environment import gpu_arch, gpu_visible
from pool_fusion_tuning.tuning.tuners.optuna.samplers import SAMPLERS
from pool_fusion_tuning.tuning.tuners.registry import TUNERS, default_tuners
from pool_fusion_tuning.tuning.tuners.spec import RunOptions, StorageChecks

from .options import CUDA_ARM_NAMES, DEFAULT_ARM_NAMES, cuda_torch_arm_names


def tuner_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in TUNERS]
    if unknown:
        raise UsageError(f"unknown tuner {unknown[0]!r}; choose from {', '.join(TUNERS)}")
    return list(dict.fromkeys(names))


def run_tuners(text: str | None, budget: int, target_kind: str = "llvm") -> list[str]:
    """The tuners a run with `budget` uses: those `text` names, else (None) the target's defaults
    (`registry.default_tuners`); none without a budget."""
    names = default_tuners(target_kind) if text is None else tuner_names(text)
    if not names and budget > 0:
        raise UsageError(
            f"--tuners names no tuner and --budget is {budget}; name one of "
            f"{', '.join(TUNERS)}, or use --budget 0 for the arms alone"
        )
    return names if budget > 0 else []


def rpc_options(args, tuners: list[str]) -> RunOptions:
    """--rpc-tracker and --rpc-key, checked with the tracker before anything is tuned."""
    if (args.rpc_tracker is None) != (args.rpc_key is None) or args.rpc_key == "":
        raise UsageError("--rpc-tracker HOST:PORT and --rpc-key KEY go together")
    if args.rpc_tracker is None:
        return {}
    remote = [name for name in TUNERS if TUNERS[name].rpc]  # the tuners that measure remotely
    if not set(remote) & set(tuners):
        raise UsageError(
            f"--rpc-tracker measures the candidates of {' and '.join(remote)}, and this run "
            f"does not tune with {' or '.join(remote)}"
        )
    free_rpc_servers(args.rpc_tracker, args.rpc_key, tuners)
    return {"rpc_tracker": args.rpc_tracker, "rpc_key": args.rpc_key}


def storage_checks() -> StorageChecks:
    """How --storage URLs are kept and read: as the tuners that take a storage say."""
    found = next(s.storage_checks() for s in TUNERS.values() if s.storage is not None)
    assert found is not None
    return found


def free_rpc_servers(tracker: str, key: str, tuners: list[str]) -> None:
    """The tracker has a free server for `key`, as each of `tuners` that measures on it checks
    (`TunerSpec.rpc`); one line where it has none."""
    for name in tuners:
        checks = TUNERS[name].rpc_checks() if name in TUNERS else None
        if checks is not None:
            checks.free_servers(tracker, key)


def arm_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ARMS and n not in PEERS]
    if unknown or not names:
        raise UsageError(
            f"unknown arm {unknown[0] if unknown else text!r}; choose from "
            f"{', '.join(ARMS)}, {', '.join(PEERS)}"
        )
    for name in names:
        if name in PEERS or (name in ARMS and ARMS[name].capture):
            try:
                require_torch(name)
            except ImportError as error:
                raise UsageError(str(error)) from None
    return list(dict.fromkeys(names))


def default_arms(target_kind: str) -> list[str]:
    """The arms of a run that names none: the issue's four and `fixed`; on CUDA also
    `one-kernel`, the project's best answer, and with PyTorch both candidates captured whole and
    PyTorch's peers, so the report compares like with like; on a CPU with PyTorch,
    `PeerRole.CPU_DEFAULT`'s peers (captured peers need CUDA)."""
    if target_kind != "cuda":
        return [*DEFAULT_ARM_NAMES, *(peers_for(PeerRole.CPU_DEFAULT) if torch_available() else ())]
    extra = cuda_torch_arm_names() if torch_available() else CUDA_ARM_NAMES
    return [*DEFAULT_ARM_NAMES, *extra]


def check_arms_fit_target(names: list[str], target_kind: str) -> None:
    captured = [n for n in names if n.endswith("+capture")]
    if captured and target_kind != "cuda":
        raise UsageError(
            f"{captured[0]} captures CUDA launches and needs a CUDA GPU; leave it out on llvm"
        )


def resolve_target(kind: str, say: Callable[[str], None] = print) -> TargetSpec:
    """The run's target, with the device it measures on; `auto` says which it picked."""
    if kind not in ("auto", "cuda", "llvm"):
        raise UsageError(f"unknown target {kind!r}; use auto, cuda or llvm")
    visible = gpu_visible() if kind != "llvm" else False
    if kind == "cuda" and not visible:
        raise UsageError("--target cuda needs a CUDA GPU and none is visible; use --target llvm")
    if kind == "auto":
        kind = "cuda" if visible else "llvm"
        say(f"target: {kind} ({'a CUDA GPU is visible' if visible else 'no CUDA GPU visible'})")
    if kind == "cuda":
        return TargetSpec("cuda", gpu_arch(), f"{tvm.cuda(0).device_name} {gpu_arch()}")
    device = f"cpu {platform.machine()} {platform.processor() or ''}".strip()
    return TargetSpec("llvm", device=device)


def check_stored_names(meta: RunMeta, run_file: Path) -> None:
    """A run.json from elsewhere may name a tuner, arm or sampler this tune does not know: said
    in one line, never a KeyError in a tuner's thread or an arm silently dropped. (An arm may be
    a tuner's.)"""
    stored = [
        ("tuner", meta["tuners"], list(TUNERS)),
        (
            "arm",
            meta.get("arm_names", []) + [a["name"] for a in meta["arms"]],
            [*ARMS, *PEERS, *TUNERS],
        ),
        ("sampler", [meta["options"].get("sampler", "tpe")], list(SAMPLERS)),
    ]
    for kind, names, known in stored:
        unknown = [name for name in names if name not in known]
        if unknown:
            raise RunError(
                f"{run_file} names {kind} {unknown[0]!r}, which this tune does not know "
                f"({', '.join(known)}); the run cannot be continued from it: start a new "
                "run with --out"
            )
