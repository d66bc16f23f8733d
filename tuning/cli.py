"""`tune`: build and time the four arms of apache/tvm#20401, tune the fused kernel, report.

    tune --budget 500                 the whole study (four arms, both tuners, 500 candidates each)
    tune --budget 0                   the four arms only
    tune --resume DIR                 finish an interrupted run without re-measuring
    tune report DIR                   re-render a run's report (no GPU needed)
    tune worker --storage URL ...     join a shared Optuna study as one more worker
    tune sweep --budget 40            the candidate rule (`fixed`) and the whole graph as one
                                      kernel (`one-kernel`) across a set of Cases
    tune --rpc-tracker HOST:PORT --rpc-key KEY
                                      measure MetaSchedule's candidates on RPC servers
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import sys
from pathlib import Path

from baselines.arms import ARMS, DEFAULT_ARMS
from baselines.case import CaseError, parse_case
from baselines.torch_peer import PEERS, capture_counterparts, require_torch

from .harness import Protocol
from .candidates import TuningFailed
from .optuna_search import SAMPLERS
from .progress import Progress
from .rpc import TrackerError, free_servers
from .store import Run, RunError

EXIT_USAGE = 2
EXIT_TUNING_FAILED = 1


class UsageError(ValueError):
    """Bad input: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise UsageError(f"{message} (see tune --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tune", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=500,
                        help="candidates each tuner measures, failed ones included: Optuna's "
                             "search measures BUDGET, MetaSchedule's two runs (default space, "
                             "template space) BUDGET//2 and the rest (default 500; 0 runs the "
                             "arms only)")
    parser.add_argument("--arms", default=",".join(a.name for a in DEFAULT_ARMS),
                        help="comma-separated arms of the end-to-end comparison: "
                             f"{', '.join(ARMS)}, or the PyTorch peers {', '.join(PEERS)} "
                             "(the peers and the +capture arms need the extra [torch]); the "
                             "tuners add their own, and a TVM +capture arm on CUDA brings "
                             "PyTorch's +capture peers")
    parser.add_argument("--tuners", default="optuna,metaschedule",
                        help="comma-separated subset of: optuna, metaschedule, "
                             "optuna-one-kernel (Optuna over the one kernel of the whole graph)")
    parser.add_argument("--target", default="auto", help="auto (CUDA if a GPU is visible, "
                        "else llvm), cuda or llvm")
    parser.add_argument("--case", nargs="*", default=[], metavar="KEY=VALUE",
                        help="change the graph, e.g. --case window=3 stride=1 prelude=false")
    parser.add_argument("--trials", type=int, default=Protocol.trials,
                        help="independent end-to-end trials, one process each")
    parser.add_argument("--blocks", type=_blocks, default=Protocol.blocks, metavar="N|auto",
                        help="interleaved timing blocks per trial (the issue used 40); auto "
                             "(default): whole cycles of the balanced order, at least 6")
    parser.add_argument("--number", type=int, default=Protocol.number,
                        help="time_evaluator: calls per repeat")
    parser.add_argument("--repeat", type=int, default=Protocol.repeat,
                        help="time_evaluator: samples per timing block")
    parser.add_argument("--min-repeat-ms", type=int, default=Protocol.min_repeat_ms,
                        help="time_evaluator: the least time one sample averages over")
    parser.add_argument("--warmup-s", type=float, default=Protocol.warmup_s,
                        help="timed warm-up per arm before the blocks")
    parser.add_argument("--sampler", default="tpe", choices=SAMPLERS, help="Optuna's sampler")
    parser.add_argument("--seed", type=int, default=0, help="seed of the tuners' samplers")
    parser.add_argument("--storage", default=None,
                        help="Optuna storage URL (default: SQLite, or a journal file where "
                             "SQLAlchemy is missing, in the run folder)")
    parser.add_argument("--workers", type=int, default=1,
                        help="Optuna worker processes sharing the study, one GPU each "
                             "(CUDA_VISIBLE_DEVICES); the default is one")
    parser.add_argument("--exhaustive", action="store_true",
                        help="also measure every point of the Optuna space once")
    parser.add_argument("--rpc-tracker", default=None, metavar="HOST:PORT",
                        help="measure MetaSchedule's candidates on this RPC tracker's servers "
                             "(with --rpc-key; Optuna and the end-to-end comparison stay here)")
    parser.add_argument("--rpc-key", default=None, metavar="KEY",
                        help="the key the RPC servers registered with (rpc_server --key)")
    parser.add_argument("--out", default=None, help="run folder (default runs/<date>-<target>)")
    parser.add_argument("--resume", default=None, metavar="DIR", help="finish this run")
    parser.add_argument("--verbose", action="store_true", help="one progress line per step")
    return parser


def _check_positive(args) -> None:
    if args.budget < 0:
        raise UsageError(f"--budget must be >= 0, got {args.budget}")
    for name in ("trials", "number", "repeat"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.min_repeat_ms < 0 or args.warmup_s < 0:
        raise UsageError("--min-repeat-ms and --warmup-s must be >= 0")


def _blocks(text: str) -> int | None:
    """--blocks: a count >= 1, or auto (None: whole cycles of the Williams design)."""
    if text == "auto":
        return None
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--blocks must be auto or >= 1, got {text!r}")
    return int(text)


def _tuners(args) -> list[str]:
    from .study import TUNERS
    names = [n.strip() for n in args.tuners.split(",") if n.strip()]
    unknown = [n for n in names if n not in TUNERS]
    if unknown:
        raise UsageError(f"unknown tuner {unknown[0]!r}; choose from {', '.join(TUNERS)}")
    return names if args.budget > 0 else []


def _rpc_options(args, tuners: list[str]) -> dict:
    """--rpc-tracker and --rpc-key, checked with the tracker before anything is tuned."""
    if (args.rpc_tracker is None) != (args.rpc_key is None) or args.rpc_key == "":
        raise UsageError("--rpc-tracker HOST:PORT and --rpc-key KEY go together")
    if args.rpc_tracker is None:
        return {}
    if "metaschedule" not in tuners:
        raise UsageError("--rpc-tracker measures MetaSchedule's candidates, and this run does "
                         "not tune with metaschedule")
    free_servers(args.rpc_tracker, args.rpc_key)
    return {"rpc_tracker": args.rpc_tracker, "rpc_key": args.rpc_key}


def arm_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ARMS and n not in PEERS]
    if unknown or not names:
        raise UsageError(f"unknown arm {unknown[0] if unknown else text!r}; choose from "
                         f"{', '.join(ARMS)}, {', '.join(PEERS)}")
    for name in names:
        if name in PEERS or (name in ARMS and ARMS[name].capture):
            try:
                require_torch(name)
            except ImportError as error:
                raise UsageError(str(error)) from None
    return list(dict.fromkeys(names))


def check_arms_fit_target(names: list[str], target_kind: str) -> None:
    captured = [n for n in names if n.endswith("+capture")]
    if captured and target_kind != "cuda":
        raise UsageError(f"{captured[0]} captures CUDA launches and needs a CUDA GPU; leave it "
                         "out on llvm")


def resolve_target(kind: str, say=print):
    """Return (target spec for make_target, device string); `auto` says which it picked."""
    from .environment import gpu_arch, gpu_visible
    if kind not in ("auto", "cuda", "llvm"):
        raise UsageError(f"unknown target {kind!r}; use auto, cuda or llvm")
    visible = gpu_visible() if kind != "llvm" else False
    if kind == "cuda" and not visible:
        raise UsageError("--target cuda needs a CUDA GPU and none is visible; use --target llvm")
    if kind == "auto":
        kind = "cuda" if visible else "llvm"
        say(f"target: {kind} ({'a CUDA GPU is visible' if visible else 'no CUDA GPU visible'})")
    if kind == "cuda":
        import tvm
        return {"kind": "cuda", "arch": gpu_arch()}, f"{tvm.cuda(0).device_name} {gpu_arch()}"
    import platform
    return {"kind": "llvm"}, f"cpu {platform.machine()} {platform.processor() or ''}".strip()


def _start(args, progress: Progress) -> Run:
    from baselines.pipeline import make_target

    from .study import new_meta, save_environment
    case = parse_case(args.case)
    tuners = _tuners(args)
    arms = arm_names(args.arms)
    protocol = Protocol(number=args.number, repeat=args.repeat, min_repeat_ms=args.min_repeat_ms,
                        warmup_s=args.warmup_s, blocks=args.blocks, trials=args.trials)
    spec, device = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    check_arms_fit_target(arms, spec["kind"])
    requested = arms
    arms, peers_not_measured = capture_counterparts(arms, spec["kind"])
    out = Path(args.out or f"runs/{datetime.date.today()}-{spec['kind']}")
    identity = {"case": case.to_dict(), "target": spec["kind"], "device": device}
    options = {"sampler": args.sampler, "seed": args.seed, "storage": args.storage,
               "exhaustive": args.exhaustive, "workers": args.workers,
               **_rpc_options(args, tuners)}
    command = "tune " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    run = Run.create(out, new_meta(case, spec, identity, protocol, tuners, args.budget,
                                   command, options, arms))
    run.update_meta(peers_added=[n for n in arms if n not in requested],
                    peers_not_measured=peers_not_measured)
    save_environment(run, make_target(**spec))
    return run


def _resume(args) -> Run:
    """Open a run to finish; a --case or --target given now must match the run's own."""
    run = Run.open(Path(args.resume))
    stored = run.meta["identity"]
    case = parse_case(args.case).to_dict() if args.case else stored["case"]
    kind = stored["target"] if args.target == "auto" else args.target
    spec, device = resolve_target(kind)
    run = Run.open(run.path, {"case": case, "target": spec["kind"], "device": device})
    options = run.meta["options"]
    if args.rpc_tracker is not None or args.rpc_key is not None:  # the tracker moved
        run.update_meta(options={**options, **_rpc_options(args, run.meta["tuners"])})
    elif options.get("rpc_tracker") and not (
            run.path / "tuners" / "metaschedule" / "summary.json").exists():
        free_servers(options["rpc_tracker"], options["rpc_key"])
    return run


def _worker(argv: list[str]) -> int:
    """`tune worker`: join a shared Optuna study (on this machine or another) and measure."""
    from .optuna_search import STUDY_NAME, run_worker
    parser = _Parser(prog="tune worker", description=_worker.__doc__)
    parser.add_argument("--storage", required=True,
                        help="the study's storage URL (postgresql://..., sqlite:///..., "
                             "journal:///PATH)")
    parser.add_argument("--study", default=STUDY_NAME)
    parser.add_argument("--budget", type=int, required=True, help="trials this worker measures")
    parser.add_argument("--target", default="auto")
    parser.add_argument("--case", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--sampler", default="tpe", choices=SAMPLERS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.budget < 1:
        raise UsageError(f"--budget must be >= 1, got {args.budget}")
    case = parse_case(args.case)
    spec, device = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    identity = {"case": case.to_dict(), "target": spec["kind"], "device": device}
    rows = run_worker(case, spec, identity, args.storage, args.study, args.budget,
                      args.sampler, args.seed, Progress(verbose=args.verbose))
    valid = [r["kernel_us"] for r in rows if r["status"] == "ok"]
    best = f"; best {min(valid):.2f} us" if valid else ""
    print(f"worker measured {len(rows)} trials, {len(valid)} valid{best}")
    return 0


def _sweep(argv: list[str]) -> int:
    """`tune sweep`: arms partial, on, fixed, serial, one-kernel and Optuna's best (of the
    fused pool kernel and of the one kernel) for each of a set of Cases, with the captured arms
    on a GPU; the same command again finishes an interrupted sweep."""
    from .sweep import SWEEP_CASES, run_sweep, select_cases, user_cases
    parser = _Parser(prog="tune sweep", description=_sweep.__doc__)
    parser.add_argument("--cases", default=None,
                        help=f"comma-separated names among {', '.join(SWEEP_CASES)} and the "
                             "Cases given with --cases-file and --case (default: those, if "
                             "any, else the built-in ones)")
    parser.add_argument("--cases-file", default=None, metavar="FILE",
                        help="your own named Cases: TOML (.toml) or JSON, one table of case "
                             "fields per name, e.g. [mine] window = 3")
    parser.add_argument("--case", nargs="+", action="append", default=[],
                        metavar="NAME KEY=VALUE", help="one more named Case, e.g. --case "
                                                       "mine window=3 stride=1 (repeatable)")
    parser.add_argument("--budget", type=int, default=40, help="Optuna trials per case")
    parser.add_argument("--target", default="auto")
    parser.add_argument("--trials", type=int, default=1, help="end-to-end trials per case")
    parser.add_argument("--blocks", type=int, default=6, help="timing blocks per trial")
    parser.add_argument("--out", default=None, help="sweep folder (default runs/sweep-<date>)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.budget < 0 or args.trials < 1 or args.blocks < 1:
        raise UsageError("--budget must be >= 0, --trials and --blocks >= 1")
    cases = select_cases(args.cases, user_cases(args.cases_file, args.case))
    spec, device = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    out = Path(args.out or f"runs/sweep-{datetime.date.today()}-{spec['kind']}")
    protocol = Protocol(trials=args.trials, blocks=args.blocks)
    command = "tune sweep " + " ".join(shlex.quote(a) for a in argv)
    sweep = run_sweep(out, cases, spec, device, args.budget, protocol,
                      Progress(verbose=args.verbose), command)
    slower = sweep["fixed_slower_than_on"]
    print(f"{len(cases)} cases; fixed slower than on in: {', '.join(slower) or 'none'}; "
          f"one-kernel slower than fixed in: "
          f"{', '.join(sweep['one_kernel_slower_than_fixed']) or 'none'}")
    print(f"report: {out / 'sweep.md'}")
    for name, errors in sweep["tuner_failures"].items():
        print(f"tune: case {name}: {'; '.join(errors.values())}; its arms were measured and "
              "reported", file=sys.stderr)
    return EXIT_TUNING_FAILED if sweep["tuner_failures"] else 0


def _report(argv: list[str]) -> int:
    from reports.render import render_run
    if len(argv) != 1:
        raise UsageError("tune report takes one run folder: tune report DIR")
    run = Run.open(Path(argv[0]))
    render_run(run)
    print(run.path / "report.md")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["report"]:
            return _report(argv[1:])
        if argv[:1] == ["worker"]:
            return _worker(argv[1:])
        if argv[:1] == ["sweep"]:
            return _sweep(argv[1:])
        args = _parser().parse_args(argv)
        _check_positive(args)
        progress = Progress(verbose=args.verbose)
        run = _resume(args) if args.resume else _start(args, progress)
        print(f"run folder: {run.path}", file=sys.stderr)
        from .study import run_study
        report = run_study(run, progress)
    except (UsageError, CaseError, RunError, TrackerError) as error:
        print(f"tune: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except TuningFailed as error:
        print(f"tune: {error}; the four default arms were measured and reported in "
              f"{run.path / 'report.md'}", file=sys.stderr)
        return EXIT_TUNING_FAILED
    except KeyboardInterrupt:
        finish = ("the same tune sweep command" if argv[:1] == ["sweep"]
                  else "tune --resume <run folder>")
        print(f"\ntune: interrupted; everything measured so far is kept. Finish with: {finish}",
              file=sys.stderr)
        return 130
    from reports.markdown import headline
    print(headline(report))
    print(f"report: {run.path / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
