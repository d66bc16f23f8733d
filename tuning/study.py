"""The whole study of one run: tuners first, then one interleaved end-to-end comparison.

Every phase writes its results into the run folder as it finishes, and skips what is already
there, so an interrupted run is finished by `tune --resume DIR` without re-measuring.
"""

from __future__ import annotations

import importlib
import time

from baselines.arms import ARMS, DEFAULT_ARMS, Arm
from baselines.torch_peer import PEERS
from baselines.case import Case
from baselines.pipeline import make_target

from .candidates import TuningFailed
from .environment import capture, sm_clock_mhz
from .harness import run_trial_process
from .timing import Protocol
from .progress import Progress
from .store import Run, read_json, write_json

# optuna-one-kernel: Optuna over the one kernel of the whole graph (arm one-kernel's kernel).
# Each tuner: the module and function that run it (imported when used) and their keyword
# options. A new tuner is one entry here and its own module.
TUNERS = {
    "optuna": ("tuning.optuna_search", "run_optuna", {}),
    "metaschedule": ("tuning.metaschedule", "run_metaschedule", {}),
    "optuna-one-kernel": ("tuning.optuna_search", "run_optuna", {"whole": True}),
}


def tuned_arm(name: str, run: Run, case: Case, target, budget: int, progress: Progress,
              options: dict) -> Arm:
    """Run one tuner (or reuse its finished result) and return its arm for the final comparison."""
    module, function, extra = TUNERS[name]
    tune = getattr(importlib.import_module(module), function)
    return tune(run, case, target, budget, progress, options, **extra)


def run_study(run: Run, progress: Progress) -> dict:
    meta = run.meta
    case = Case.from_dict(meta["case"])
    protocol = Protocol(**meta["protocol"])
    target = make_target(**meta["target_spec"])
    started = time.monotonic()
    arms, peers = _split(meta.get("arm_names", [arm.name for arm in DEFAULT_ARMS]))
    failures = {}
    for name in meta["tuners"]:
        try:
            arms.append(tuned_arm(name, run, case, target, meta["budget"], progress,
                                  meta["options"]))
        except TuningFailed as error:  # the other arms still run; the report and exit say so
            failures[name] = str(error)
            progress.say(f"{name}: {error}")
    run.update_meta(arms=_describe(arms, peers), tuner_failures=failures)
    for index in range(protocol.trials):
        if run.trial_path(index).exists():
            progress.say(f"trial {index}: already measured, kept")
            continue
        progress.say(f"trial {index + 1}/{protocol.trials}: {len(arms)} arms in a fresh process")
        ir_dir = str(run.path / "ir") if index == 0 else None
        result = run_trial_process(case, arms, meta["target_spec"], protocol, index, ir_dir,
                                   verbose=progress.verbose, peers=peers)
        run.save_trial(result)
    if target.kind.name == "cuda":
        environment = read_json(run.path / "environment.json")
        write_json(run.path / "environment.json", {**environment, "sm_clock_after": sm_clock_mhz()})
    run.update_meta(wall_s=meta.get("wall_s", 0) + time.monotonic() - started)
    from reports.render import render_run
    report = render_run(run)
    if failures and len(failures) == len(meta["tuners"]):
        raise TuningFailed("; ".join(failures.values()))
    return report


def new_meta(case: Case, target_spec: dict, identity: dict, protocol: Protocol, tuners: list[str],
             budget: int, command: str, options: dict, arm_names: list[str]) -> dict:
    return {"case": case.to_dict(), "target_spec": target_spec, "identity": identity,
            "protocol": protocol.to_dict(), "tuners": tuners, "budget": budget,
            "command": command, "options": options, "arm_names": arm_names,
            "arms": _describe(*_split(arm_names))}


def _split(names: list[str]) -> tuple[list[Arm], tuple[str, ...]]:
    """The TVM arms and the peers (other frameworks) that `--arms` names."""
    return [ARMS[n] for n in names if n in ARMS], tuple(n for n in names if n in PEERS)


def _describe(arms: list[Arm], peers: tuple[str, ...]) -> list[dict]:
    return [arm.describe() for arm in arms] + [{"name": p, "peer": True} for p in peers]


def save_environment(run: Run, target) -> None:
    write_json(run.path / "environment.json", capture(target))

