"""Start a new run (`tune ...`) or open an interrupted one to finish (`tune --resume DIR`)."""

from __future__ import annotations

import datetime
import os
import shlex
import sys
from pathlib import Path

from pool_fusion_tuning.baselines.case import Case, parse_case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.torch_peer import capture_counterparts
from pool_fusion_tuning.reports.stats.cpu_noise import CPU_NOTE
from pool_fusion_tuning.runfolder.opener import open_locked
from pool_fusion_tuning.runfolder.records import RunMeta
from pool_fusion_tuning.runfolder.redact import redact
from pool_fusion_tuning.runfolder.store import Run, RunError, check_folder_name, run_identity
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.limits import check_case_fits, check_workers_fit, slow_case_note
from pool_fusion_tuning.tuning.measure.protocol import Protocol
from pool_fusion_tuning.tuning.plan import RunPlan
from pool_fusion_tuning.tuning.study import save_environment
from pool_fusion_tuning.tuning.tuners.registry import TUNERS
from pool_fusion_tuning.tuning.tuners.spec import RunOptions

from .choices import (
    arm_names,
    check_arms_fit_target,
    check_stored_names,
    default_arms,
    free_rpc_servers,
    resolve_target,
    rpc_options,
    run_tuners,
    storage_checks,
    tuner_names,
)
from .run_options import protocol_of, refuse_changes, with_defaults


def recorded_command(prefix: str, argv: list[str]) -> str:
    """The command as run.json and the report record it: any password shown as ***."""
    return " ".join([prefix, *(shlex.quote(redact(a)) for a in argv)])


def new_default_folder(target_kind: str, runs: Path = Path("runs")) -> Path:
    """runs/<date>-<target>, or the first free -2, -3, ... after it: a second `tune` of a day is
    a new run (`--resume DIR` finishes one)."""
    first = runs / f"{datetime.date.today()}-{target_kind}"
    path, count = first, 1
    while os.path.lexists(path):  # a dangling link is taken too: creating through it fails
        count += 1
        path = first.with_name(f"{first.name}-{count}")
    return path


def start_run(args, argv: list[str]) -> Run:
    """A new run from the command line: every option checked (the Case fits, tuners, arms and
    target are known, a --storage opens) before its folder is created with the plan and
    environment."""
    with_defaults(args)
    case = parse_case(args.case)
    check_case_fits(case)
    check_workers_fit(args.workers)
    note = slow_case_note(case)
    if note:
        print(note, file=sys.stderr)
    # Tuners named are checked before the target is resolved; none named: the target's default.
    tuners = None if args.tuners is None else run_tuners(args.tuners, args.budget)
    protocol = protocol_of(args, Protocol())
    target = resolve_target(args.target, say=lambda m: print(m, file=sys.stderr))
    if tuners is None:
        tuners = run_tuners(None, args.budget, target.kind)
    arms = default_arms(target.kind) if args.arms is None else arm_names(args.arms)
    check_arms_fit_target(arms, target.kind)
    requested = arms
    arms, peers_not_measured = capture_counterparts(arms, target.kind)
    out = Path(args.out) if args.out else new_default_folder(target.kind)
    check_folder_name(out)
    options: RunOptions = {
        "sampler": args.sampler,
        "seed": args.seed,
        "storage": storage_checks().remember_password(args.storage) if args.storage else None,
        "storage_password_env": args.storage_password_env,
        "exhaustive": args.exhaustive,
        "workers": args.workers,
        **rpc_options(args, tuners),
        **({"study": storage_checks().new_study()} if args.storage else {}),
    }
    plan = RunPlan(
        case,
        target,
        protocol,
        arms,
        tuners,
        args.budget,
        options,
        recorded_command("tune", argv),
    )
    if args.storage:
        _open_studies_first(plan)
    run = Run.create(out, plan.meta())  # a new run: refused where the folder holds one
    run.update_meta(
        peers_added=[n for n in arms if n not in requested], peers_not_measured=peers_not_measured
    )
    save_environment(run, target)
    _say_what_a_cpu_run_is(target)
    return run


def _say_what_a_cpu_run_is(target: TargetSpec) -> None:
    """Once the run is checked and before anything is measured: a CPU run is a smoke test."""
    if not target.is_cuda:
        print(CPU_NOTE, file=sys.stderr)


def _open_studies_first(plan: RunPlan) -> None:
    """A --storage holds the run's studies: opened (each created, or checked to be this run's)
    before the run folder exists, so an unusable storage leaves nothing that would refuse the
    same command once fixed."""
    storage = plan.options.get("storage")
    if storage is None:  # the run's studies live in its folder
        return
    for name in plan.tuners:
        spec = TUNERS[name]
        checks = spec.storage_checks()
        if checks is not None:
            checks.open_first(
                storage,
                plan.identity,
                plan.options["storage_password_env"],
                plan.options.get("study"),
                **spec.extra,
            )


def resume_run(args) -> Run:
    """Open a run to finish: its own Case, target and options; a --case, --target or
    run-defining option given now must match the run's own."""
    if args.out is not None:
        raise UsageError("--out starts a new run and --resume finishes one; give one of them")
    run = open_locked(Path(args.resume))
    meta = run.meta
    if meta.get("kind") == "model":  # its own command finishes it
        raise UsageError(
            f"{run.path} is a model run (tune model); finish it with the same tune model "
            f"command and --out {shlex.quote(str(run.path))}"
        )
    check_stored_names(meta, run.path / "run.json")
    check_case_fits(Case.from_dict(meta["case"]))
    check_workers_fit(meta["options"].get("workers", 1))
    stored = meta["identity"]
    case = parse_case(args.case).to_dict() if args.case else stored["case"]
    kind = stored["target"] if args.target == "auto" else args.target
    target = resolve_target(kind)
    run = Run.open(run.path, run_identity(case, target.kind, target.device))
    refuse_changes(_given(args, meta), meta, run.path)
    options: RunOptions = {**meta["options"], **_storage_now(args, run, meta["options"])}
    if args.rpc_tracker is not None or args.rpc_key is not None:  # the tracker moved
        options.update(rpc_options(args, meta["tuners"]))
    elif options.get("rpc_tracker"):  # needed while a tuner that measures on it is not done
        left = [
            t for t in meta["tuners"] if not (run.path / "tuners" / t / "summary.json").exists()
        ]
        free_rpc_servers(options["rpc_tracker"], options["rpc_key"], left)
    if options != meta["options"]:
        run.update_meta(options=options)
    if not (run.path / "environment.json").exists():  # rebuilt: same device, checked above
        save_environment(run, target)
    _say_what_a_cpu_run_is(target)
    return run


def _given(args, meta: RunMeta) -> dict:
    """The run-defining options given with --resume, parsed as the run stores them."""
    budget = meta["budget"] if args.budget is None else args.budget
    given = {
        name: getattr(args, name)
        for name in (
            "budget",
            "trials",
            "blocks",
            "number",
            "repeat",
            "min_repeat_ms",
            "warmup_s",
            "sampler",
            "seed",
            "workers",
            "exhaustive",
        )
    }
    given["tuners"] = None
    if args.tuners is not None:  # a tuner named for a run without a budget is a change too
        names = tuner_names(args.tuners)
        given["tuners"] = run_tuners(args.tuners, budget) if budget > 0 else names
    given["arms"] = None if args.arms is None else arm_names(args.arms)
    return given


def _storage_now(args, run: Run, options: RunOptions) -> RunOptions:
    """--storage and --storage-password-env given with --resume replace the stored ones. A stored
    storage outside the run folder is used only when given again: a run folder from elsewhere
    must not make a resume write to a file it names or send a password to a server it names."""
    changes: RunOptions = {}
    if args.storage is not None:  # with its password variable given now, or none
        changes["storage"] = storage_checks().remember_password(args.storage)
        changes["storage_password_env"] = args.storage_password_env
        if not options.get("storage"):  # its study moves to a storage others may share
            changes["study"] = options.get("study") or storage_checks().new_study()
    elif args.storage_password_env is not None:
        changes["storage_password_env"] = args.storage_password_env
    stored = options.get("storage")
    if args.storage is None and stored:
        path = storage_checks().storage_file(stored)
        inside = path is not None and path.resolve().is_relative_to(run.path.resolve())
        if not inside:
            raise RunError(
                f"{run.path / 'run.json'} names the Optuna storage {redact(stored)}, "
                "outside the run folder; to use it, give it again: tune --resume "
                f"{shlex.quote(str(run.path))} --storage URL"
            )
    return changes
