"""`tune worker`: one more worker of a shared Optuna study."""

from __future__ import annotations

import argparse
import sys

from pool_fusion_tuning.baselines.case import parse_case
from pool_fusion_tuning.tuning.base.children import die_with_parent
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.candidates.outcome import Status
from pool_fusion_tuning.tuning.limits import check_case_fits
from pool_fusion_tuning.tuning.tuners.optuna.optuna_study import STUDY_NAME
from pool_fusion_tuning.tuning.tuners.optuna.samplers import SAMPLERS
from pool_fusion_tuning.tuning.tuners.optuna.storages import remember_password
from pool_fusion_tuning.tuning.tuners.optuna.workers import run_worker

from .choices import resolve_target
from .options import Parser, add_password_env, check_options, integer


def worker_main(argv: list[str]) -> int:
    """`tune worker`: join a shared Optuna study (on this machine or another) and measure its
    candidates, BUDGET of them, beside the study's other workers.

        tune worker --storage postgresql://user@host/db --study fused-pool --budget 100
                                          100 trials of the study `tune --workers` created
        tune worker --storage journal:///RUN/study.journal --budget 50 --sampler random
                                          50 more trials for the study of a run folder
                                          (`tune --workers K` writes that journal), at random
        tune worker --storage sqlite:///tuning.db --study NAME --budget 20
                                          20 trials of a network kernel's study (`tune model
                                          --tune-top N --storage URL` names it): the study
                                          holds the kernel, so no --case
    """
    parser = Parser(prog="tune worker", description=worker_main.__doc__)
    parser.add_argument(
        "--storage",
        required=True,
        help="the study's storage URL (postgresql://..., sqlite:///..., journal:///PATH)",
    )
    parser.add_argument("--study", default=STUDY_NAME)
    parser.add_argument("--budget", type=integer, required=True, help="trials this worker measures")
    parser.add_argument("--target", default="auto")
    parser.add_argument(
        "--case",
        nargs="*",
        default=None,
        metavar="KEY=VALUE",
        help="the Case of a Case's study (default: the issue's); none for a network kernel's",
    )
    parser.add_argument("--sampler", default="tpe", choices=SAMPLERS)
    parser.add_argument("--seed", type=integer, default=0)
    add_password_env(parser)
    parser.add_argument("--verbose", action="store_true")
    # Given by `tune --workers K`: this worker stops when the run that started it is gone.
    parser.add_argument("--parent-pid", type=integer, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        die_with_parent(args.parent_pid)
    if args.budget < 1:
        raise UsageError(f"--budget must be >= 1, got {args.budget}")
    check_options(args)
    case = None if args.case is None else parse_case(args.case)
    if case is not None:
        check_case_fits(case)
    target = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    rows = run_worker(
        case,
        target,
        remember_password(args.storage),
        args.study,
        args.budget,
        args.sampler,
        args.seed,
        Progress(verbose=args.verbose),
        args.storage_password_env,
    )
    valid = [r["kernel_us"] for r in rows if r["status"] == Status.OK]
    best = f"; best {min(valid):.2f} us" if valid else ""
    # Not an error, but nothing measured must not read as a worker that did its share.
    none = (
        ": the study had no room (its budget taken by the processes measuring it, or every "
        "point of its space measured)"
        if not rows
        else ""
    )
    print(f"worker measured {len(rows)} trials, {len(valid)} valid{best}{none}")
    return 0
