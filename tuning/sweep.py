"""`tune sweep`: the candidate rule (`fixed`) against the default and the tuned optimum, per Case.

Each Case is an ordinary run in its own folder (`DIR/<case>/`, readable with `tune report`):
arms partial, on, fixed, serial and one-kernel (the whole graph as one kernel), plus Optuna's
best at a small budget for the fused pool kernel and for the one kernel of the whole graph; on a
GPU with PyTorch, also fixed and one-kernel captured whole into a CUDA graph. The same command
again finishes an interrupted sweep without re-measuring. The sweep also records which rule
schedules each Case's fused kernels (in the Case's run.json) and each kernel of graphs with large
reductions, under the default and the fixed rules (in sweep.json), so that its report renders
without TVM (`rule_choice.py`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from baselines.case import Case, CaseError, parse_case
from baselines.pipeline import make_target
from tuning.measure.harness import Protocol
from tuning.runfolder.store import RUN_FILE, Run, RunError, read_json, write_json
from tuning.tuners.optuna import OPTUNA, OPTUNA_ONE_KERNEL

from .errors import TuningFailed
from .plan import RunPlan
from .progress import DETAILS_LOG, Progress, details_to
from .rule_choice import fused_kernel_rules, reduction_rules

SWEEP_ARMS = ["partial", "on", "fixed", "serial", "one-kernel"]
CAPTURED_ARMS = ["fixed+capture", "one-kernel+capture"]
# Inductor, plain and captured whole: where it fuses a Case into one kernel too, `one-kernel`
# is held against that kernel by GPU time with calls queued (like for like).
INDUCTOR_PEERS = ["torch-compile", "torch-compile+capture"]
SWEEP_TUNERS = [OPTUNA.name, OPTUNA_ONE_KERNEL.name]
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
SWEEP_FILE = "sweep.json"
# A Case's name becomes its run folder's name.
CASE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def sweep_arms(target_kind: str) -> list[str]:
    """The sweep's arms; on a GPU with PyTorch, the captured arms and inductor too."""
    if target_kind != "cuda":
        return SWEEP_ARMS
    try:
        import torch  # noqa: F401  (the captured arms replay through PyTorch's CUDA graphs)
    except ImportError:
        print(
            "tune sweep: PyTorch is missing; leaving out "
            + ", ".join(CAPTURED_ARMS + INDUCTOR_PEERS),
            file=sys.stderr,
        )
        return SWEEP_ARMS
    return SWEEP_ARMS + CAPTURED_ARMS + INDUCTOR_PEERS


def user_cases(path: str | None = None, groups: list[list[str]] | None = None) -> dict:
    """The user's named Cases: a TOML or JSON file with one table of fields per name, and
    `--case NAME KEY=VALUE ...` groups."""
    cases = _cases_file(Path(path)) if path else {}
    for name, *assignments in groups or []:
        cases[_checked_name(name, "--case")] = parse_case(assignments)
    return cases


def _cases_file(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".toml":
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10
                import tomli as tomllib
            tables = tomllib.loads(text)
        else:
            tables = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise RunError(
            f"cannot read the Cases file {path} ({error}); it holds one table of "
            "case fields per name, in TOML (.toml) or JSON"
        ) from None
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise RunError(
            f"{path} must hold one table of case fields per name, e.g. "
            '{"mine": {"window": 3, "stride": 1}}'
        )
    cases = {}
    for name, fields in tables.items():
        try:
            cases[_checked_name(name, str(path))] = Case.from_fields(fields)
        except (CaseError, TypeError) as error:
            raise CaseError(f"{path}: case {name}: {error}") from None
    return cases


def _checked_name(name: str, where: str) -> str:
    if not CASE_NAME.fullmatch(name):
        raise CaseError(
            f"{where}: case name {name!r} must be 1 to 64 letters, digits, '.', "
            "'_' or '-', starting with a letter or digit"
        )
    return name


def select_cases(text: str | None, own: dict | None = None) -> dict:
    """The Cases `--cases` names, among the built-in ones and the user's; by default the
    user's if there are any, else the built-in ones."""
    known = {**SWEEP_CASES, **(own or {})}
    names = [n.strip() for n in (text or ",".join(own or SWEEP_CASES)).split(",") if n.strip()]
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
    target_spec: dict,
    device: str,
    budget: int,
    protocol: Protocol,
    progress: Progress,
    command: str,
) -> dict:
    from reports.sweep import render_sweep

    names = list(cases)
    settings = {
        "cases": names,
        "definitions": {n: c.to_dict() for n, c in cases.items()},
        "target": target_spec["kind"],
        "device": device,
        "budget": budget,
        "protocol": protocol.to_dict(),
    }
    stored_path = out / SWEEP_FILE
    if stored_path.exists() and read_json(stored_path)["settings"] != settings:
        raise RunError(f"{out} holds a sweep with other settings; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    _hold(out)
    write_json(
        stored_path,
        {"settings": settings, "command": command, "large_reductions": reduction_rules()},
    )
    tuners = SWEEP_TUNERS if budget > 0 else []
    arms = sweep_arms(target_spec["kind"])
    with details_to(out / DETAILS_LOG, progress):
        for number, name in enumerate(names, 1):
            plan = RunPlan(
                cases[name],
                target_spec,
                device,
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
    if (path / RUN_FILE).exists():
        run = Run.open(path, plan.identity)
        run.lock()
    else:
        run = Run.create(path, plan.meta())
        save_environment(run, make_target(**plan.target_spec))
    if "fused_kernel_rules" not in run.meta:
        run.update_meta(fused_kernel_rules=fused_kernel_rules(plan.case))
    try:
        run_study(run, progress)
    except TuningFailed as error:  # its arms were measured and reported; go on
        progress.line(f"{title}: {error}")


def _hold(out: Path) -> None:
    """One sweep per folder at a time (`lock.py`)."""
    from tuning.runfolder.lock import FolderBusy, hold

    try:
        hold(out)
    except FolderBusy as error:
        raise RunError(str(error)) from None
