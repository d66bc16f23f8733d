"""What `tune model` and `tune models` share: the rule lists, the peers, the target and the
timing protocol, as options and checked into `ModelPlan` fields."""

from __future__ import annotations

import re

from pool_fusion_tuning.baselines.peers import PeerRole, peers_for
from pool_fusion_tuning.baselines.target import DEFAULT_ARCH, TargetSpec
from pool_fusion_tuning.runfolder.records import RunOptions
from pool_fusion_tuning.tuning.base.errors import UsageError

from .options import (
    AUTO,
    Parser,
    add_password_env,
    add_processes,
    check_options,
    integer,
    number,
)
from .run_options import protocol_of

DEFAULT_RULES = "default,fixed"
NO_GPU = (
    "timing a model needs a CUDA GPU and none is visible; --analyze analyses it for CUDA "
    "without one, --target llvm times it on the CPU"
)


def add_shared(parser: Parser, trials: int) -> None:
    """What `tune model` and `tune models` share: the lists, peers, target and protocol."""
    from pool_fusion_tuning.tuning.models.model_plan import MODEL_PROTOCOL

    default_peers = ",".join(peers_for(PeerRole.MODEL))
    parser.add_argument(
        "--rules",
        default=DEFAULT_RULES,
        help="rule lists compared, the default first (baselines/rules.py: default, fixed, "
        f"reduction-fix; default {DEFAULT_RULES})",
    )
    parser.add_argument(
        "--peers",
        default=default_peers,
        help=f"PyTorch peers timed beside, or none (default {default_peers})",
    )
    parser.add_argument(
        "--target", default="auto", help="auto (CUDA; without a GPU, --analyze only), cuda, llvm"
    )
    parser.add_argument(
        "--analyze",
        action="store_true",
        help="the per-kernel analysis for CUDA only: compiles, runs nothing, needs no GPU",
    )
    parser.add_argument(
        "--arch", default=None, help="the analysis' CUDA arch without a GPU (sm_90)"
    )
    add_processes(parser, trials, f"fresh processes timing the model end to end (default {trials})")
    parser.add_argument(
        "--blocks", default=AUTO, metavar="N|auto", help="blocks per timing process"
    )
    parser.add_argument("--number", type=integer, default=MODEL_PROTOCOL.number)
    parser.add_argument("--repeat", type=integer, default=MODEL_PROTOCOL.repeat)
    parser.add_argument("--min-repeat-ms", type=integer, default=MODEL_PROTOCOL.min_repeat_ms)
    parser.add_argument("--warmup-s", type=number, default=MODEL_PROTOCOL.warmup_s)
    parser.add_argument("--out", default=None, help="run folder (default runs/model-...)")
    parser.add_argument("--verbose", action="store_true")


def add_storage(parser: Parser) -> None:
    """--storage and its password's variable, of `tune model --tune-top`."""
    parser.add_argument(
        "--storage",
        default=None,
        metavar="URL",
        help="keep each --tune-top kernel's Optuna study in this storage (sqlite:///PATH, "
        "journal:///PATH, postgresql://...), which `tune worker --storage URL --study NAME` "
        "joins from this or another machine; a password in it is never stored",
    )
    add_password_env(parser)


def storage_options(args) -> RunOptions:
    """--storage checked as `tune` checks it, its password kept for this process only: where
    the kernels' studies are kept, not what is measured, so no setting of the run (each
    command gives its own, as with --rpc-tracker)."""
    if args.storage is None:
        if args.storage_password_env is not None:
            raise UsageError("--storage-password-env is the password of --storage; give --storage")
        return {}
    if not args.tune_top:
        raise UsageError("--storage keeps the Optuna studies of --tune-top; give --tune-top")
    from .choices import storage_checks

    checks = storage_checks()
    problem = checks.storage_problem(args.storage)
    if problem:
        raise UsageError(problem)
    url = checks.remember_password(args.storage)
    checks.reach(url, args.storage_password_env)
    return {"storage": url, "storage_password_env": args.storage_password_env}


def settings_of(args) -> dict:
    """The shared options checked, as `ModelPlan` fields (without the model's own)."""

    from pool_fusion_tuning.baselines.rules import RULE_LISTS
    from pool_fusion_tuning.tuning.models.model_plan import MODEL_PROTOCOL

    from .choices import resolve_target

    if args.blocks != AUTO and not str(args.blocks).isdigit():
        raise UsageError(f"--blocks must be auto or >= 1, got {args.blocks!r}")
    args.blocks = AUTO if args.blocks == AUTO else int(args.blocks)
    check_options(args)
    rules = _names(args.rules, RULE_LISTS, "rule list")
    if rules[:1] != ["default"]:
        raise UsageError("--rules must start with default: the pattern is the default's")
    peers = _names(args.peers, peers_for(PeerRole.MODEL), "peer", empty=True)
    if args.arch is not None and not re.fullmatch(r"sm_([3-9]|[1-9][0-9])[0-9][af]?", args.arch):
        raise UsageError(f"--arch {args.arch!r} is not a CUDA arch; give one such as sm_90")
    if args.analyze:
        target = TargetSpec("cuda", args.arch or DEFAULT_ARCH, "none (analysis only)")
    else:
        if args.target in ("auto", "cuda") and not _gpu():
            raise UsageError(NO_GPU)
        target = resolve_target(args.target, say=lambda m: None)
    protocol = protocol_of(args, MODEL_PROTOCOL)
    return {
        "target": target,
        "protocol": protocol,
        "rule_lists": rules,
        "peers": peers,
        "analyze_only": args.analyze,
        "arch": target.arch or args.arch or DEFAULT_ARCH,
    }


def _gpu() -> bool:
    from pool_fusion_tuning.tuning.environment import gpu_visible

    return gpu_visible()


def _names(text: str, known, what: str, empty: bool = False) -> list[str]:
    """The comma-separated `text`'s names, each one of `known`; with `empty`, "none" (or
    nothing) is no name at all."""
    if empty and text.strip() == "none":
        return []
    given = [n.strip() for n in text.split(",") if n.strip()]
    names = list(dict.fromkeys(given))
    if len(names) < len(given):  # a typo for another name, or a paste: said, not dropped
        twice = next(n for n in names if given.count(n) > 1)
        raise UsageError(f"{what} {twice!r} is given twice in {text!r}; name each once")
    unknown = [n for n in names if n not in known]
    if unknown or (not names and not empty):
        raise UsageError(
            f"unknown {what} {unknown[0] if unknown else text!r}; choose from {', '.join(known)}"
        )
    return names
