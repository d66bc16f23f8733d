"""`tune sweep`: the candidate rule and the one kernel across a set of Cases."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

from pool_fusion_tuning.tuning.base.errors import EXIT_TUNING_FAILED
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.measure.protocol import Protocol

from .choices import resolve_target
from .options import Parser, add_processes, check_options, integer
from .run import recorded_command


def sweep_main(argv: list[str]) -> int:
    """`tune sweep`: arms partial, on, fixed, serial, one-kernel and Optuna's best (of the
    fused pool kernel and of the one kernel) for each of a set of Cases, with the captured arms
    and inductor on a GPU with PyTorch; the same command again finishes an interrupted sweep.

        tune sweep --budget 40            the built-in Cases, Optuna's search 40 trials each
        tune sweep --cases issue,window3-stride1 --out DIR
                                          a subset; the same command resumes
        tune sweep --cases-file my_cases.toml --case wide width=256 prelude=false
                                          your own named Cases: a TOML or JSON file with one
                                          table of case fields per name, and --case groups
    """
    from pool_fusion_tuning.tuning.sweep import (
        SWEEP_CASES,
        check_cases_fit,
        check_sweep_folder,
        run_sweep,
        select_cases,
        user_cases,
    )

    parser = Parser(prog="tune sweep", description=sweep_main.__doc__)
    parser.add_argument(
        "--cases",
        default=None,
        help=f"comma-separated names among {', '.join(SWEEP_CASES)} and the "
        "Cases given with --cases-file and --case (default: those, if "
        "any, else the built-in ones)",
    )
    parser.add_argument(
        "--cases-file",
        default=None,
        metavar="FILE",
        help="your own named Cases: TOML (.toml) or JSON, one table of case "
        "fields per name, e.g. [mine] window = 3",
    )
    parser.add_argument(
        "--case",
        nargs="+",
        action="append",
        default=[],
        metavar="NAME KEY=VALUE",
        help="one more named Case, e.g. --case mine window=3 stride=1 (repeatable)",
    )
    parser.add_argument("--budget", type=integer, default=40, help="Optuna trials per case")
    parser.add_argument("--target", default="auto")
    add_processes(parser, 1, "fresh processes timing each Case's arms end to end (default 1)")
    parser.add_argument(
        "--blocks", type=integer, default=6, help="timing blocks per timing process"
    )
    parser.add_argument("--out", default=None, help="sweep folder (default runs/sweep-<date>)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    check_options(args)
    if args.out is not None:  # before the Cases file is read: a bad --out costs nothing
        check_sweep_folder(Path(args.out))
    cases = select_cases(args.cases, user_cases(args.cases_file, args.case))
    check_cases_fit(cases)
    target = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    out = Path(args.out or f"runs/sweep-{datetime.date.today()}-{target.kind}")
    check_sweep_folder(out)
    protocol = Protocol(trials=args.trials, blocks=args.blocks)
    command = recorded_command("tune sweep", argv)
    sweep = run_sweep(
        out, cases, target, args.budget, protocol, Progress(verbose=args.verbose), command
    )
    slower = sweep["fixed_slower_than_on"]
    print(
        f"{len(cases)} cases; fixed slower than on in: {', '.join(slower) or 'none'}; "
        f"one-kernel slower than fixed in: "
        f"{', '.join(sweep['one_kernel_slower_than_fixed']) or 'none'}"
    )
    print(f"report: {out / 'sweep.md'}")
    for name, errors in sweep["tuner_failures"].items():
        print(
            f"tune: case {name}: {'; '.join(errors.values())}; its arms were measured and reported",
            file=sys.stderr,
        )
    return EXIT_TUNING_FAILED if sweep["tuner_failures"] else 0
