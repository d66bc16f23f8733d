"""`tune model SPEC` and `tune models`: real networks, per kernel and end to end.

    tune model torchvision:inception_v3          analysis, kernel times per rule list, the
                                                 model end to end against PyTorch (a GPU)
    tune model timm:legacy_xception --decompose  BatchNorm decomposed first
    tune model my_net.py:build --analyze         for CUDA without a GPU: rules, launches,
                                                 the idle-lane pattern; nothing runs
    tune model torchvision:convnext_tiny --tune-top 2 --budget 100
                                                 the 2 costliest pattern kernels tuned
    tune model torchvision:convnext_tiny --tune-top all --kernels matmul --budget 128
                                                 every matmul that matters, at a larger budget
    tune model torchvision:resnet50 --tune-top all --kernels convolution
        --tuners metaschedule --budget 64        its convolutions (most of its kernel time),
                                                 MetaSchedule alone; later --kernels
                                                 convolution,elementwise adds a class
    tune model torchvision:convnext_tiny --tune-top all --kernels matmul --budget 64
        --tuners metaschedule --warm-start runs/h100
                                                 each search begins with the best 32 of
                                                 an earlier run (another card), timed here
    tune model torchvision:convnext_tiny --tune-top 2 --storage postgresql://me@db/tuning
                                                 each kernel's Optuna study on a server, where
                                                 `tune worker --study NAME` (the name it
                                                 prints) measures beside it
    tune model torchvision:convnext_tiny --tune-top all --kernels any --budget 16
        --kernels-at-once 3 --time-budget 1800 --out runs/convnext-all
                                                 every kernel that matters, 3 at a time, within
                                                 1800 s of tuning; again after an interrupt, it
                                                 goes on
    tune models                                  the built-in list, one run folder per model
    tune models --zoo torchvision --analyze      every model of a library: census.md

The same command again finishes an interrupted run and measures nothing already measured.
"""

from __future__ import annotations

import datetime
import re
import shutil
import sys
from pathlib import Path

from pool_fusion_tuning.baselines.models.model_errors import ModelError
from pool_fusion_tuning.baselines.models.model_spec import DTYPES, ModelOptions, parse_spec
from pool_fusion_tuning.runfolder.records import RunOptions
from pool_fusion_tuning.runfolder.store import RUN_FILE, check_folder_name
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.limits import usable_cores
from pool_fusion_tuning.tuning.measure.protocol import Protocol

from .model_options import add_shared, add_storage, settings_of, storage_options
from .options import Parser, add_rpc, integer, number
from .run import recorded_command

DEFAULT_BUDGET = 100


def model_main(argv: list[str]) -> int:
    """`tune model SPEC`: one network, per kernel and end to end."""
    from pool_fusion_tuning.reports.model_md import headline
    from pool_fusion_tuning.tuning.base.progress import DETAILS_LOG, Progress, details_to
    from pool_fusion_tuning.tuning.models.model_plan import (
        ALL_KERNELS,
        ALL_MIN_SHARE,
        CLASS_CHOICES,
        KERNEL_CHOICES,
        ModelPlan,
    )
    from pool_fusion_tuning.tuning.models.model_run import open_model_run, run_model

    from .choices import rpc_options

    parser = Parser(prog="tune model", description=__doc__)
    parser.add_argument(
        "spec", metavar="SPEC", help="torchvision:NAME, timm:NAME or FILE.py:FUNCTION"
    )
    parser.add_argument("--batch", type=integer, default=None, help="batch size (default 1)")
    parser.add_argument("--size", type=integer, default=None, help="input height and width")
    parser.add_argument("--dtype", default="float32", choices=DTYPES)
    parser.add_argument(
        "--decompose", action="store_true", help="DecomposeOpsForInference after the import"
    )
    parser.add_argument(
        "--tune-top",
        type=_tune_top_count,
        default=0,
        metavar=f"K|{ALL_KERNELS}",
        help=f"tune the K costliest kernels; {ALL_KERNELS}: every kernel that takes "
        f"{ALL_MIN_SHARE * 100:g}%% or more of the network's summed kernel time under the default "
        "list (launches x time alone), of those --kernels takes",
    )
    parser.add_argument(
        "--time-budget",
        type=number,
        default=None,
        metavar="SECONDS",
        help="--tune-top starts no further kernel once its wall time, summed over the "
        "commands that worked on the run, would pass SECONDS (by the mean time of the kernels "
        "tuned so far); the kernels left are named in the report",
    )
    parser.add_argument(
        "--kernels-at-once",
        type=integer,
        default=None,
        metavar="N",
        help="--tune-top tunes N kernels side by side (default 1), the cores shared out among "
        "them and the device measuring one candidate at a time: the search and the builds of "
        "one kernel overlap the others' measurements",
    )
    parser.add_argument(
        "--kernels",
        default=None,
        metavar="|".join(KERNEL_CHOICES),
        help="which kernels --tune-top takes: the costliest with the idle-lane pattern "
        "(pattern, the default), the costliest whatever they are (any: MetaSchedule tunes "
        "each in its default space, Optuna those its schedule template covers) or the "
        "costliest of one class of the report's gap by kernel class, or of several joined by "
        "commas (matmul,convolution); a later command may add classes to a run's tuning",
    )
    parser.add_argument(
        "--budget", type=integer, default=None, help="candidates per tuner and kernel"
    )
    parser.add_argument(
        "--tuners",
        default=None,
        metavar="NAMES",
        help="which --tune-top tuners search each kernel, comma-separated (default all: "
        "optuna,metaschedule); a later command on the run may name others, each kernel "
        "tuned before keeping what its tuners found",
    )
    parser.add_argument(
        "--warm-start",
        default=None,
        metavar="DIR",
        help="each kernel's new MetaSchedule search begins with the best records (at most 32) "
        "of the same kernel in DIR, an earlier --tune-top run folder (another card, network or "
        "budget), each measured again here and counted in --budget",
    )
    add_rpc(parser)
    add_storage(parser)
    add_shared(parser, trials=Protocol.trials)
    args = parser.parse_args(argv)
    spec = parse_spec(args.spec)
    options = ModelOptions(args.batch, args.size, args.dtype, args.decompose)
    budget = _tuning(args)
    kernels = _kernels(args, KERNEL_CHOICES, tuple(CLASS_CHOICES))
    settings = settings_of(args)
    tuners = _tuners(args)
    warm_start = _warm_start(args, tuners, settings["target"].kind)
    where: RunOptions = {**rpc_options(args, tuners), **storage_options(args)}
    _check_loads(args.spec, options)
    plan = ModelPlan(
        spec.text,
        options,
        tune_top=args.tune_top,
        budget=budget,
        kernels=kernels,
        time_budget_s=args.time_budget,
        kernels_at_once=args.kernels_at_once or 1,
        tuners=tuners,
        command=recorded_command("tune model", argv),
        where=where,
        warm_start=warm_start,
        **settings,
    )
    out = Path(args.out or default_out(spec.name, plan))
    check_folder_name(out)
    progress = Progress(verbose=args.verbose)
    created = not (out / RUN_FILE).exists()
    before = set(out.iterdir()) if out.is_dir() and not out.is_symlink() else None
    run = open_model_run(out, plan, progress.line)
    print(f"run folder: {out}", file=sys.stderr)
    try:
        with details_to(out / DETAILS_LOG, progress):
            report = run_model(run, plan, progress)
    except Exception as error:  # refused before its analysis: one line, no folder left behind
        if not created or (out / "analysis.json").exists():
            raise
        _remove_what_was_made(out, before)
        if isinstance(error, ModelError):
            raise
        raise _cannot_analyse(spec.text, error) from None
    print(headline(report))
    print(f"report: {out / 'report.md'}")
    return 0


def _remove_what_was_made(out: Path, before: set | None) -> None:
    """Remove the run folder `tune model` made, or, in a folder the user made (`before`: what
    it held), only what was made in it."""
    if before is None:
        shutil.rmtree(out, ignore_errors=True)
        return
    for path in set(out.iterdir()) - before:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _cannot_analyse(spec: str, error: Exception) -> ModelError:
    """TVM refusing a model (an import, a dtype or an operator it cannot take) as one line; its
    traceback is the error's details (--verbose)."""
    import traceback

    from pool_fusion_tuning.baselines.models.fence import UserCodeError
    from pool_fusion_tuning.baselines.models.model_errors import first_line

    return UserCodeError(
        f"TVM cannot import or analyse {spec}: {type(error).__name__}: {first_line(error)[:300]}",
        "".join(traceback.format_exception(error)),
    )


def _tune_top_count(text: str) -> int | str:
    """--tune-top's value (argparse `type`): a count, or all."""
    import argparse

    from pool_fusion_tuning.tuning.models.model_plan import ALL_KERNELS

    if text == ALL_KERNELS:
        return text
    try:
        return integer(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"takes {ALL_KERNELS} or an integer in digits 0-9, got {text!r}"
        ) from None


def _tuning(args) -> int:
    if isinstance(args.tune_top, int) and not 0 <= args.tune_top <= 100:
        raise UsageError(f"--tune-top must be all or between 0 and 100, got {args.tune_top}")
    if args.budget is not None and not args.tune_top:
        raise UsageError("--budget is what --tune-top K spends per kernel; give --tune-top")
    if args.time_budget is not None and not args.tune_top:
        raise UsageError("--time-budget bounds the wall time of --tune-top; give --tune-top")
    if args.kernels_at_once is not None and not args.tune_top:
        raise UsageError("--kernels-at-once says how --tune-top tunes; give --tune-top")
    if args.kernels_at_once is not None and not 1 <= args.kernels_at_once <= usable_cores():
        raise UsageError(
            f"--kernels-at-once must be between 1 and the {usable_cores()} cores here, got "
            f"{args.kernels_at_once}"
        )
    if (args.rpc_tracker, args.rpc_key) != (None, None) and not args.tune_top:
        raise UsageError("--rpc-tracker measures the candidates of --tune-top; give --tune-top")
    if args.tune_top and args.analyze:
        raise UsageError("--tune-top times kernels and --analyze runs nothing; give one")
    if args.tune_top and args.budget is not None and args.budget < 1:
        raise UsageError(
            f"--budget is the candidates --tune-top tunes per kernel: at least 1, got {args.budget}"
        )
    return (DEFAULT_BUDGET if args.budget is None else args.budget) if args.tune_top else 0


def _tuners(args) -> list[str]:
    """--tuners checked: --tune-top's tuners, at least one, only with --tune-top."""
    from pool_fusion_tuning.tuning.tuners.registry import tuners_for
    from pool_fusion_tuning.tuning.tuners.spec import Role

    from .choices import tuner_names

    allowed = tuners_for(Role.TUNE_TOP)
    if args.tuners is None:
        return allowed
    if not args.tune_top:
        raise UsageError("--tuners says which tuners search --tune-top's kernels; give --tune-top")
    names = tuner_names(args.tuners)
    if not names or not set(names) <= set(allowed):
        raise UsageError(
            f"--tuners takes one or more of {', '.join(allowed)} for --tune-top, "
            f"got {args.tuners!r}"
        )
    return [name for name in allowed if name in names]


def _warm_start(args, tuners: list[str], target_kind: str) -> Path | None:
    """--warm-start checked: a run folder holding MetaSchedule databases, tuned for this run's
    target kind, for --tune-top's MetaSchedule measuring here."""
    from pool_fusion_tuning.tuning.tuners.metaschedule import METASCHEDULE
    from pool_fusion_tuning.tuning.tuners.metaschedule.warm_start import databases, environment_of

    if args.warm_start is None:
        return None
    if not args.tune_top:
        raise UsageError("--warm-start begins the searches of --tune-top; give --tune-top")
    if METASCHEDULE.name not in tuners:
        raise UsageError("--warm-start begins MetaSchedule's searches, which --tuners leaves out")
    if args.rpc_tracker is not None:
        raise UsageError("--warm-start measures its records here; give it without --rpc-tracker")
    folder = Path(args.warm_start)
    if not databases(folder):
        raise UsageError(
            f"--warm-start {folder} holds no MetaSchedule database (tuners/*/metaschedule/); "
            "give the --out of an earlier tune model --tune-top run"
        )
    kind = environment_of(folder).get("target_kind")
    if kind not in (None, target_kind):
        raise UsageError(
            f"--warm-start {folder} was tuned for {kind}, this run is for {target_kind}: give a "
            f"run folder tuned for {target_kind}"
        )
    return folder


def _kernels(args, choices: tuple[str, ...], classes: tuple[str, ...]) -> str:
    """--kernels checked: one of `choices` or several `classes` joined by commas (kept in the
    order of `classes`, so that a run's setting does not depend on how they were listed), and
    only with --tune-top."""
    if args.kernels is None:
        return choices[0]
    given = args.kernels.split(",")
    if not (args.kernels in choices or set(given) <= set(classes)):
        raise UsageError(
            f"--kernels must be one of {', '.join(choices)}, or classes joined by commas "
            f"(matmul,convolution), got {args.kernels!r}"
        )
    if not args.tune_top:
        raise UsageError("--kernels says which kernels --tune-top K tunes; give --tune-top")
    return ",".join(name for name in classes if name in given) if len(given) > 1 else args.kernels


def _check_loads(spec: str, options: ModelOptions) -> None:
    """The module loads (names, packages, a FILE spec's function), before any folder is made."""
    from pool_fusion_tuning.baselines.models.load import load_model

    load_model(parse_spec(spec), options)


def default_out(name: str, plan) -> str:
    kind = "analysis" if plan.analyze_only else plan.target.kind
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return f"runs/model-{safe}-{datetime.date.today()}-{kind}"
