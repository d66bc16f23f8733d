"""`tune sweep`: the candidate rule (`fixed`) against the default and the tuned optimum, per Case.

Each Case is an ordinary run in its own folder (`DIR/<case>/`, readable with `tune report`): arms
partial, on, fixed, serial and one-kernel, plus Optuna's best at a small budget for the fused pool
kernel and for the whole graph's one kernel; on a GPU with PyTorch, also fixed and one-kernel
captured into a CUDA graph. The same command finishes an interrupted sweep without re-measuring.
Which rule schedules each kernel, under the default and fixed rules, is recorded (run.json,
sweep.json) so the report renders without TVM (`rule_choice.py`).

A sweep writes only into a folder of its own (new, empty, or marked by its sweep.json,
`check_sweep_folder`); a Case's name must not clash with the sweep's files or a built-in Case, and
each Case must fit the machine, all checked before anything runs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pool_fusion_tuning.baselines.case import Case, CaseError, parse_case
from pool_fusion_tuning.baselines.peers import PeerRole, peers_for
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.reports.sweep_report import OUTPUTS
from pool_fusion_tuning.runfolder.files import RunError, loads, read_text
from pool_fusion_tuning.runfolder.lock import LOCK_FILE
from pool_fusion_tuning.runfolder.opener import open_run
from pool_fusion_tuning.runfolder.sweep_folder import (  # noqa: F401  (check_sweep_folder: the CLI's too)
    check_sweep_folder,
    open_sweep_folder,
)
from pool_fusion_tuning.tuning.measure.harness import Protocol
from pool_fusion_tuning.tuning.tuners.registry import TUNERS, tuners_for
from pool_fusion_tuning.tuning.tuners.spec import Role

from .base.errors import TuningFailed
from .base.progress import DETAILS_LOG, Progress, details_to
from .limits import check_case_fits, slow_case_note
from .plan import RunPlan
from .rule_choice import fused_kernel_rules, reduction_rules

SWEEP_ARMS = ["partial", "on", "fixed", "serial", "one-kernel"]
CAPTURED_ARMS = ["fixed+capture", "one-kernel+capture"]
# Window 2 and 3, stride 1 and 2, channels, spatial sizes, prelude on and off, tail 1 and 2.
SWEEP_CASES = {
    "issue": Case(),
    "window3-stride2": Case(window=3, stride=2),
    "window3-stride1": Case(window=3, stride=1),
    "window2-stride1": Case(window=2, stride=1),
    "no-prelude": Case(prelude=False),
    "channels64-no-prelude": Case(channels=64, prelude=False),
    "small-16x16": Case(height=16, width=16),
    "large-128x128-no-prelude": Case(height=128, width=128, prelude=False),
    "tail1": Case(tail=1),
    "odd-23x29": Case(channels=3, height=23, width=29, branches=2, shared_output=False),
}
# A Case's name becomes its run folder's name: never one of the files the sweep writes beside.
CASE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SWEEP_FILES = (*OUTPUTS, LOCK_FILE, DETAILS_LOG)
# A Cases file is a few hand-written tables: beyond these it is a mistake, refused before it costs
# minutes to read.
LARGEST_CASES_FILE = 2**20
MOST_CASES = 1000


def sweep_arms(target_kind: str) -> list[str]:
    """The sweep's arms; on a GPU with PyTorch, also the captured arms and `PeerRole.SWEEP`'s
    peers: inductor, plain and captured (where it fuses a Case into one kernel, `one-kernel` is
    held against that kernel by queued GPU time)."""
    if target_kind != "cuda":
        return SWEEP_ARMS
    peers = peers_for(PeerRole.SWEEP)
    try:
        import torch  # noqa: F401  (the captured arms replay through PyTorch's CUDA graphs)
    except ImportError:
        print(
            "tune sweep: PyTorch is missing; leaving out " + ", ".join(CAPTURED_ARMS + peers),
            file=sys.stderr,
        )
        return SWEEP_ARMS
    return SWEEP_ARMS + CAPTURED_ARMS + peers


def user_cases(path: str | None = None, groups: list[list[str]] | None = None) -> dict:
    """The user's named Cases: a TOML or JSON file with one table of fields per name, and `--case
    NAME KEY=VALUE ...` groups. A name given twice anywhere is refused (the later would silently
    replace the earlier)."""
    cases = _cases_file(Path(path)) if path else {}
    from_file = set(cases)
    for name, *assignments in groups or []:
        name = _checked_name(name, "--case")
        if name in cases:
            where = f"in {path} and in --case" if name in from_file else "twice in --case"
            raise CaseError(
                f"--case: case {name!r} is given {where}; give each Case a name of its own"
            )
        cases[name] = parse_case(assignments)
    return cases


def _cases_file(path: Path) -> dict:
    """The Cases of a file (read as every file is); too deep nesting, a name given twice and NaN
    are said as unreadable, never a traceback."""
    try:
        text = read_text(path, LARGEST_CASES_FILE)
        if path.suffix == ".toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # Python 3.10
                import tomli as tomllib
            try:
                tables = tomllib.loads(text)
            except RecursionError:
                raise ValueError("nested too deeply") from None
        else:
            tables = loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as error:  # RunError: not a regular file
        said = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise RunError(
            f"cannot read the Cases file {path} ({said}); it holds one table of "
            "case fields per name, in TOML (.toml) or JSON"
        ) from None
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise RunError(
            f"{path} must hold one table of case fields per name, e.g. "
            '{"mine": {"window": 3, "stride": 1}}'
        )
    if not tables:
        raise RunError(
            f"{path} defines no Case; give it one table of case fields per name, e.g. "
            '{"mine": {"window": 3, "stride": 1}}, or leave out --cases-file'
        )
    if len(tables) > MOST_CASES:
        raise RunError(
            f"{path} defines {len(tables):,} Cases, more than a sweep takes ({MOST_CASES}); "
            "split it into several sweeps"
        )
    cases = {}
    for name, fields in tables.items():
        name = _checked_name(name, str(path))  # first: the error below names it
        try:
            cases[name] = Case.from_fields(fields)
        except (CaseError, TypeError) as error:
            raise CaseError(f"{path}: case {name}: {error}") from None
    return cases


def _checked_name(name: str, where: str) -> str:
    """A user's Case name: a folder name of its own in the sweep's folder."""
    if not CASE_NAME.fullmatch(name):
        raise CaseError(
            f"{where}: case name {name!r} must be 1 to 64 letters, digits, '.', "
            "'_' or '-', starting with a letter or digit"
        )
    if name in SWEEP_FILES:
        raise CaseError(
            f"{where}: case name {name!r} is a file the sweep writes in its folder "
            f"({', '.join(SWEEP_FILES)}); name the Case otherwise"
        )
    if name in SWEEP_CASES:
        raise CaseError(
            f"{where}: case name {name!r} is a built-in Case's; name yours otherwise "
            f"(--cases {name} sweeps the built-in one)"
        )
    return name


def check_cases_fit(cases: dict) -> None:
    """Every Case fits the machine (`limits.check_case_fits`); a Case slow to build is said once,
    as `tune` says it."""
    for name, case in cases.items():
        try:
            check_case_fits(case)
        except CaseError as error:
            raise CaseError(f"case {name}: {error}") from None
        note = slow_case_note(case)
        if note:
            print(note.replace("this Case's", f"case {name}'s", 1), file=sys.stderr)


def select_cases(text: str | None, own: dict | None = None) -> dict:
    """The Cases `--cases` names, built-in or the user's; by default the user's if any, else the
    built-in ones."""
    known = {**SWEEP_CASES, **(own or {})}
    given = ",".join(own or SWEEP_CASES) if text is None else text
    names = [n.strip() for n in given.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise RunError(
            f"unknown sweep case {unknown[0] if unknown else text!r}; "
            f"choose from {', '.join(known)}"
        )
    return {name: known[name] for name in names}


def run_sweep(
    out: Path,
    cases: dict,
    target: TargetSpec,
    budget: int,
    protocol: Protocol,
    progress: Progress,
    command: str,
) -> dict:
    """Measure every Case of the sweep in `out` (each run finished where left, kept where
    measured), one sweep per folder at a time, its settings stored and checked; returns the
    sweep's report."""
    from pool_fusion_tuning.reports.sweep_report import render_sweep

    names = list(cases)
    settings = {
        "cases": names,
        "definitions": {n: c.to_dict() for n, c in cases.items()},
        "target": target.kind,
        "device": target.device,
        "budget": budget,
        "protocol": protocol.to_dict(),
    }
    tuners = tuners_for(Role.SWEEP) if budget > 0 else []  # the tuners whose spec takes the sweep
    recorded = {
        "command": command,
        # Each tuner's arm and the rule-made arm it is held against: the tables' tuner columns.
        "tuners": {name: TUNERS[name].held_against for name in tuners},
    }
    open_sweep_folder(out, settings, lambda: {**recorded, "large_reductions": reduction_rules()})
    arms = sweep_arms(target.kind)
    with details_to(out / DETAILS_LOG, progress):
        for number, name in enumerate(names, 1):
            plan = RunPlan(
                cases[name],
                target,
                protocol,
                arms,
                tuners,
                budget,
                command=f"{command} (case {name})",
            )
            _measure_case(out / name, plan, f"case {number}/{len(names)} {name}", progress)
    return render_sweep(out, names)


def _measure_case(path: Path, plan: RunPlan, title: str, progress: Progress) -> None:
    """One Case's run: started, finished where interrupted, or kept where measured."""
    from .study import run_study, save_environment

    if (path / "report.json").exists():
        progress.say(f"{title}: already measured, kept")
        return
    progress.line(title)
    run = open_run(path, plan.meta())
    if not (path / "environment.json").exists():
        save_environment(run, plan.target)
    if "fused_kernel_rules" not in run.meta:
        run.update_meta(fused_kernel_rules=fused_kernel_rules(plan.case))
    try:
        run_study(run, progress)
    except TuningFailed as error:  # its arms were measured and reported; go on
        progress.line(f"{title}: {error}")
