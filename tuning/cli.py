"""`tune`: build and time the four arms of apache/tvm#20401, tune the fused kernel, report.

    tune --budget 500                 the whole study (four arms, both tuners, 500 candidates each)
    tune --budget 0                   the four arms only
    tune --resume DIR                 finish an interrupted run without re-measuring
    tune report DIR                   re-render a run's report (no GPU needed)
    tune worker --storage URL ...     join a shared Optuna study as one more worker
    tune sweep --budget 40            the candidate rule (`fixed`) and the whole graph as one
                                      kernel (`one-kernel`) across a set of Cases
    tune upstream --out DIR           the candidate rule as a patch to apache/tvm, with its test
    tune --rpc-tracker HOST:PORT --rpc-key KEY
                                      measure MetaSchedule's candidates on RPC servers
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import signal
import sys
from pathlib import Path

from baselines.arms import ARMS
from baselines.case import CaseError, parse_case
from baselines.torch_peer import PEERS, capture_counterparts, require_torch

from .candidates import TuningFailed
from .fault_lines import fault_line
from .harness import Protocol
from .limits import check_case_fits, slow_case_note
from .lock import release_all
from .optuna_search import SAMPLERS
from .options import (Parser, UsageError, add_password_env, check_ranges, protocol_blocks,
                      refuse_changes, with_defaults)
from .options import parser as run_parser
from .progress import Progress
from .redact import redact
from .rpc import TrackerError, free_servers
from .store import Run, RunError, check_folder_name

EXIT_USAGE = 2
EXIT_TUNING_FAILED = 1
__all__ = ["main", "UsageError", "arm_names", "check_arms_fit_target", "resolve_target"]


def recorded_command(prefix: str, argv: list[str]) -> str:
    """The command as run.json and the report record it: any password shown as ***."""
    return " ".join([prefix, *(shlex.quote(redact(a)) for a in argv)])


def _tuner_names(text: str) -> list[str]:
    from .study import TUNERS
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in TUNERS]
    if unknown:
        raise UsageError(f"unknown tuner {unknown[0]!r}; choose from {', '.join(TUNERS)}")
    return list(dict.fromkeys(names))


def _tuners(text: str, budget: int) -> list[str]:
    """The tuners a run with `budget` uses: none without a budget."""
    from .study import TUNERS
    names = _tuner_names(text)
    if not names and budget > 0:
        raise UsageError(f"--tuners names no tuner and --budget is {budget}; name one of "
                         f"{', '.join(TUNERS)}, or use --budget 0 for the arms alone")
    return names if budget > 0 else []


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


def _start(args, argv: list[str]) -> Run:
    from baselines.pipeline import make_target

    from .storages import remember_password
    from .study import new_meta, save_environment
    with_defaults(args)
    case = parse_case(args.case)
    check_case_fits(case)
    note = slow_case_note(case)
    if note:
        print(note, file=sys.stderr)
    tuners = _tuners(args.tuners, args.budget)
    arms = arm_names(args.arms)
    protocol = Protocol(number=args.number, repeat=args.repeat, min_repeat_ms=args.min_repeat_ms,
                        warmup_s=args.warmup_s, blocks=protocol_blocks(args.blocks),
                        trials=args.trials)
    spec, device = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    check_arms_fit_target(arms, spec["kind"])
    requested = arms
    arms, peers_not_measured = capture_counterparts(arms, spec["kind"])
    out = Path(args.out or f"runs/{datetime.date.today()}-{spec['kind']}")
    check_folder_name(out)
    identity = {"case": case.to_dict(), "target": spec["kind"], "device": device}
    options = {"sampler": args.sampler, "seed": args.seed,
               "storage": remember_password(args.storage) if args.storage else None,
               "storage_password_env": args.storage_password_env,
               "exhaustive": args.exhaustive, "workers": args.workers,
               **_rpc_options(args, tuners)}
    run = Run.create(out, new_meta(case, spec, identity, protocol, tuners, args.budget,
                                   recorded_command("tune", argv), options, arms))
    run.update_meta(peers_added=[n for n in arms if n not in requested],
                    peers_not_measured=peers_not_measured)
    save_environment(run, make_target(**spec))
    return run


def _resume(args) -> Run:
    """Open a run to finish: its own Case, target and options; a --case, --target or
    run-defining option given now must match the run's own."""
    from baselines.pipeline import make_target

    from .study import save_environment
    if args.out is not None:
        raise UsageError("--out starts a new run and --resume finishes one; give one of them")
    run = Run.open(Path(args.resume))
    run.lock()
    meta = run.meta
    stored = meta["identity"]
    case = parse_case(args.case).to_dict() if args.case else stored["case"]
    kind = stored["target"] if args.target == "auto" else args.target
    spec, device = resolve_target(kind)
    run = Run.open(run.path, {"case": case, "target": spec["kind"], "device": device})
    refuse_changes(_given(args, meta), meta, run.path)
    options = {**meta["options"], **_storage_now(args, run, meta["options"])}
    if args.rpc_tracker is not None or args.rpc_key is not None:  # the tracker moved
        options.update(_rpc_options(args, meta["tuners"]))
    elif options.get("rpc_tracker") and not (
            run.path / "tuners" / "metaschedule" / "summary.json").exists():
        free_servers(options["rpc_tracker"], options["rpc_key"])
    if options != meta["options"]:
        run.update_meta(options=options)
    if not (run.path / "environment.json").exists():  # rebuilt: same device, checked above
        save_environment(run, make_target(**meta["target_spec"]))
    return run


def _given(args, meta: dict) -> dict:
    """The run-defining options given with --resume, parsed as the run stores them."""
    budget = meta["budget"] if args.budget is None else args.budget
    given = {name: getattr(args, name) for name in (
        "budget", "trials", "blocks", "number", "repeat", "min_repeat_ms", "warmup_s",
        "sampler", "seed", "workers", "exhaustive")}
    given["tuners"] = None
    if args.tuners is not None:  # a tuner named for a run without a budget is a change too
        names = _tuner_names(args.tuners)
        given["tuners"] = _tuners(args.tuners, budget) if budget > 0 else names
    given["arms"] = None if args.arms is None else arm_names(args.arms)
    return given


def _storage_now(args, run: Run, options: dict) -> dict:
    """--storage and --storage-password-env given with --resume replace the stored ones. A
    stored storage outside the run folder (a file elsewhere, a server) is used only when
    given again now: a run folder from elsewhere must not make a resume write to a file it
    names, or send a password to a server it names."""
    from .storages import remember_password, storage_file
    changes = {}
    if args.storage is not None:  # with its password variable given now, or none
        changes["storage"] = remember_password(args.storage)
        changes["storage_password_env"] = args.storage_password_env
    elif args.storage_password_env is not None:
        changes["storage_password_env"] = args.storage_password_env
    stored = options.get("storage")
    if args.storage is None and stored:
        path = storage_file(stored)
        inside = path is not None and path.resolve().is_relative_to(run.path.resolve())
        if not inside:
            raise RunError(f"{run.path / 'run.json'} names the Optuna storage {redact(stored)}, "
                           "outside the run folder; to use it, give it again: tune --resume "
                           f"{shlex.quote(str(run.path))} --storage URL")
    return changes


def _worker(argv: list[str]) -> int:
    """`tune worker`: join a shared Optuna study (on this machine or another) and measure."""
    from .optuna_search import STUDY_NAME, run_worker
    from .storages import remember_password
    parser = Parser(prog="tune worker", description=_worker.__doc__)
    parser.add_argument("--storage", required=True,
                        help="the study's storage URL (postgresql://..., sqlite:///..., "
                             "journal:///PATH)")
    parser.add_argument("--study", default=STUDY_NAME)
    parser.add_argument("--budget", type=int, required=True, help="trials this worker measures")
    parser.add_argument("--target", default="auto")
    parser.add_argument("--case", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--sampler", default="tpe", choices=SAMPLERS)
    parser.add_argument("--seed", type=int, default=0)
    add_password_env(parser)
    parser.add_argument("--verbose", action="store_true")
    # Given by `tune --workers K`: this worker stops when the run that started it is gone.
    parser.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.parent_pid is not None:
        from .children import die_with_parent
        die_with_parent(args.parent_pid)
    if args.budget < 1:
        raise UsageError(f"--budget must be >= 1, got {args.budget}")
    check_ranges(args)
    case = parse_case(args.case)
    check_case_fits(case)
    spec, device = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    identity = {"case": case.to_dict(), "target": spec["kind"], "device": device}
    rows = run_worker(case, spec, identity, remember_password(args.storage), args.study,
                      args.budget, args.sampler, args.seed, Progress(verbose=args.verbose),
                      args.storage_password_env)
    valid = [r["kernel_us"] for r in rows if r["status"] == "ok"]
    best = f"; best {min(valid):.2f} us" if valid else ""
    print(f"worker measured {len(rows)} trials, {len(valid)} valid{best}")
    return 0


def _sweep(argv: list[str]) -> int:
    """`tune sweep`: arms partial, on, fixed, serial, one-kernel and Optuna's best (of the
    fused pool kernel and of the one kernel) for each of a set of Cases, with the captured arms
    on a GPU; the same command again finishes an interrupted sweep."""
    from .sweep import SWEEP_CASES, run_sweep, select_cases, user_cases
    parser = Parser(prog="tune sweep", description=_sweep.__doc__)
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
    check_ranges(args)
    cases = select_cases(args.cases, user_cases(args.cases_file, args.case))
    spec, device = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    out = Path(args.out or f"runs/sweep-{datetime.date.today()}-{spec['kind']}")
    check_folder_name(out)
    protocol = Protocol(trials=args.trials, blocks=args.blocks)
    command = recorded_command("tune sweep", argv)
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
    run.lock()
    render_run(run)
    print(run.path / "report.md")
    return 0


def _interrupted(argv: list[str], run: Run | None) -> str:
    """The one line Ctrl-C (or SIGTERM) prints: where the run is and how to finish it."""
    if argv[:1] == ["worker"]:
        return "tune worker: interrupted; the trials it measured are kept in the study"
    if argv[:1] == ["sweep"]:
        return ("tune: interrupted; everything measured so far is kept. Finish with the same "
                "tune sweep command")
    if run is None:
        return "tune: interrupted before the run folder was written; nothing was measured"
    return (f"tune: interrupted; everything measured so far is kept in {run.path}. Finish "
            f"with: tune --resume {shlex.quote(str(run.path))}")


def _stop_on_sigterm(signum, frame):
    """`kill PID` stops the run as Ctrl-C does: children stopped, one line, resumable."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)
        release_all()


def _main(argv: list[str]) -> int:
    run = None
    try:
        if argv[:1] == ["report"]:
            return _report(argv[1:])
        if argv[:1] == ["worker"]:
            return _worker(argv[1:])
        if argv[:1] == ["sweep"]:
            return _sweep(argv[1:])
        if argv[:1] == ["upstream"]:
            from .upstream import main as upstream
            return upstream(argv[1:])
        args = run_parser(__doc__).parse_args(argv)
        check_ranges(args)
        progress = Progress(verbose=args.verbose)
        run = _resume(args) if args.resume else _start(args, argv)
        print(f"run folder: {run.path}", file=sys.stderr)
        from .study import run_study
        report = run_study(run, progress)
    except (UsageError, CaseError, RunError, TrackerError) as error:
        print(f"tune: error: {redact(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except TuningFailed as error:
        print(f"tune: {error}; the four default arms were measured and reported in "
              f"{run.path / 'report.md'}", file=sys.stderr)
        return EXIT_TUNING_FAILED
    except KeyboardInterrupt:
        newline = "\n" if sys.stderr.isatty() else ""  # after a live progress line
        print(f"{newline}{_interrupted(argv, run)}", file=sys.stderr)
        return 130
    except Exception as error:  # a full disk, a storage gone: one line; a bug: its traceback
        resume = (f"tune --resume {shlex.quote(str(run.path))}" if run is not None
                  else "the same command")
        line = fault_line(error, resume)
        if line is None:
            raise
        print(f"tune: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    from reports.markdown import headline
    print(headline(report))
    print(f"report: {run.path / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
