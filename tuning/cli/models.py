"""`tune models`: the built-in list of real networks (or --models, or a library's zoo with --zoo),
one model run each, and a summary (a zoo's: census.md)."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pool_fusion_tuning.runfolder.model_records import Census, ModelRunMeta
from pool_fusion_tuning.runfolder.store import RUN_FILE, check_folder_name, read_record
from pool_fusion_tuning.tuning.base.errors import UsageError

from .model_options import add_shared, settings_of
from .options import Parser, integer
from .run import recorded_command

if TYPE_CHECKING:
    from pool_fusion_tuning.baselines.models.zoo import Zoo

# One trial per model by default, as `tune sweep` has it: the intervals are over blocks.
MODELS_TRIALS = 1


def models_main(argv: list[str]) -> int:
    """`tune models`: every model of the built-in list (or of --models, or of a library with
    --zoo) per kernel and end to end, in DIR/<model>/, with DIR/models.md, .json and .png (and
    with --zoo, census.md: one table of every model's flagged kernels); the same command again
    finishes an interrupted run and measures nothing already measured.

        tune models                          the built-in list, one run folder per model
        tune models --analyze                for CUDA without a GPU: rules, launches and the
                                             idle-lane pattern per kernel; nothing runs
        tune models --models inception_v3,resnet50,my_net.py:build --out DIR
                                             a subset, or your own specs (NAME+decompose
                                             decomposes BatchNorm first)
        tune models --zoo torchvision --analyze --jobs 12
                                             every torchvision classification model, one census,
                                             12 models analysed at once
    """
    from pool_fusion_tuning.baselines.models.catalog import BUILTIN_MODELS
    from pool_fusion_tuning.baselines.models.zoo import LIBRARIES

    parser = Parser(prog="tune models", description=models_main.__doc__)
    parser.add_argument(
        "--models",
        default=None,
        help="comma-separated: built-in models by spec or name ("
        + ", ".join(e.label for e in BUILTIN_MODELS)
        + "), or any SPEC (FILE.py:FUNCTION, torchvision:NAME, timm:NAME); NAME+decompose "
        "decomposes BatchNorm first",
    )
    parser.add_argument(
        "--zoo",
        default=None,
        metavar="LIBRARY",
        help=f"every model of a library ({', '.join(LIBRARIES)}: its list_models()), with "
        "census.md; torchvision's classification models only",
    )
    parser.add_argument(
        "--only", default=None, metavar="GLOBS", help="comma-separated model-name globs to run"
    )
    parser.add_argument(
        "--skip", default=None, metavar="GLOBS", help="comma-separated model-name globs to leave"
    )
    parser.add_argument(
        "--decompose",
        action="store_true",
        help="with --zoo: DecomposeOpsForInference after each model's import",
    )
    parser.add_argument(
        "--jobs",
        type=integer,
        default=None,
        metavar="N",
        help="with --analyze: N models analysed at once, each in a process of its own "
        "(default: one per core)",
    )
    add_shared(parser, trials=MODELS_TRIALS)
    args = parser.parse_args(argv)
    _check_jobs(args.jobs, args.analyze)
    if args.zoo is not None and args.models is not None:
        raise UsageError("give --models or --zoo, not both")
    if args.decompose and args.zoo is None:
        raise UsageError("--decompose is for --zoo; --models takes NAME+decompose")
    shared = settings_of(args)
    entries, zoo = _entries(args)
    kind = "analysis" if args.analyze else shared["target"].kind
    prefix = f"zoo-{Path(zoo.source).stem}" if zoo else "models"
    out = Path(args.out or f"runs/{prefix}-{datetime.date.today()}-{kind}")
    check_folder_name(out)
    command = recorded_command("tune models", argv)
    return _run(out, entries, zoo, shared, command, args.verbose, args.jobs)


def _check_jobs(jobs: int | None, analyze: bool) -> None:
    """--jobs is for an analysis alone: a timed run times one model at a time, with nothing
    else running (its CPU work before the timing already takes every core)."""
    if jobs is None:
        return
    if not analyze:
        raise UsageError(
            "--jobs N analyses N models at once and is for --analyze: timing runs one model at "
            "a time, as timings that share the machine are not to be trusted"
        )
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")


def _entries(args) -> tuple[list, Zoo | None]:
    """The models asked for, filtered by --only and --skip; the zoo listed, if one was."""
    from pool_fusion_tuning.baselines.models.zoo import globs, list_zoo
    from pool_fusion_tuning.tuning.models.model_series import (
        filter_models,
        select_models,
        zoo_models,
    )

    zoo = list_zoo(args.zoo) if args.zoo is not None else None
    entries = zoo_models(zoo, args.decompose) if zoo else select_models(args.models)
    return filter_models(entries, globs(args.only), globs(args.skip)), zoo


def _run(
    out: Path, entries: list, zoo, shared: dict, command: str, verbose: bool, jobs: int | None
) -> int:
    from pool_fusion_tuning.reports.models_md import headline
    from pool_fusion_tuning.tuning.base.progress import DETAILS_LOG, Progress, details_to
    from pool_fusion_tuning.tuning.models.model_series import (
        model_plans,
        open_models_folder,
        run_models,
    )

    plans = model_plans(entries, shared, command)
    open_models_folder(out, plans, command, zoo.to_dict() if zoo else None)
    progress = Progress(verbose=verbose)
    print(f"models folder: {out}", file=sys.stderr)
    with details_to(out / DETAILS_LOG, progress):
        summary = run_models(out, plans, progress, jobs)
    if zoo:
        from pool_fusion_tuning.reports.census import FILE
        from pool_fusion_tuning.reports.census_md import headline as census_headline

        print(census_headline(dict(read_record(out / FILE, Census))))
    else:
        print(headline(summary))
    print(f"report: {out / ('census.md' if zoo else 'models.md')}")
    # A census's rows include the models that fail for a reason of their own (kept in their
    # folders); it fails only while a model is left to try again.
    failed = summary["failures"]
    left = [
        name for name in failed if "failure" not in read_record(out / name / RUN_FILE, ModelRunMeta)
    ]
    return 2 if (left if zoo else failed) else 0
