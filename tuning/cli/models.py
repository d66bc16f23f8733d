"""`tune models`: the built-in list of real networks, one model run each, and a summary."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

from tuning.runfolder.store import check_folder_name

from .model import add_shared, settings_of
from .options import Parser
from .run import recorded_command

# One trial per model by default, as `tune sweep` has it: the intervals are over blocks.
MODELS_TRIALS = 1


def models_main(argv: list[str]) -> int:
    """`tune models`: every model of the built-in list (or of --models) per kernel and end to
    end, in DIR/<model>/, with DIR/models.md, .json and .png; the same command again finishes
    an interrupted run and measures nothing already measured.

        tune models                          the built-in list, one run folder per model
        tune models --analyze                for CUDA without a GPU: rules, launches and the
                                             idle-lane pattern per kernel; nothing runs
        tune models --models inception_v3,resnet50,my_net.py:build --out DIR
                                             a subset, or your own specs (NAME+decompose
                                             decomposes BatchNorm first)
    """
    from baselines.models.catalog import BUILTIN_MODELS
    from tuning.models.catalog import model_plans, open_models_folder, run_models, select_models
    from tuning.progress import DETAILS_LOG, Progress, details_to

    parser = Parser(prog="tune models", description=models_main.__doc__)
    parser.add_argument(
        "--models",
        default=None,
        help="comma-separated: built-in models by spec or name ("
        + ", ".join(e.label for e in BUILTIN_MODELS)
        + "), or any SPEC (FILE.py:FUNCTION, torchvision:NAME, timm:NAME); NAME+decompose "
        "decomposes BatchNorm first",
    )
    add_shared(parser, trials=MODELS_TRIALS)
    args = parser.parse_args(argv)
    entries = select_models(args.models)
    shared = settings_of(args)
    kind = "analysis" if args.analyze else shared["target_spec"]["kind"]
    out = Path(args.out or f"runs/models-{datetime.date.today()}-{kind}")
    check_folder_name(out)
    command = recorded_command("tune models", argv)
    plans = model_plans(entries, shared, command)
    open_models_folder(out, plans, command)
    progress = Progress(verbose=args.verbose)
    print(f"models folder: {out}", file=sys.stderr)
    with details_to(out / DETAILS_LOG, progress):
        summary = run_models(out, plans, progress)
    from reports.models_md import headline

    print(headline(summary))
    print(f"report: {out / 'models.md'}")
    return 2 if summary["failures"] else 0
