"""`tune sweep`: the candidate rule (`fixed`) against the default and the tuned optimum, per Case.

Each Case is an ordinary run in its own folder (`DIR/<case>/`, readable with `tune report`):
arms partial, on, fixed, serial and one-kernel (the whole graph as one kernel), plus Optuna's
best at a small budget for the fused pool kernel and for the one kernel of the whole graph; on a
GPU with PyTorch, also fixed and one-kernel captured whole into a CUDA graph. The same command
again finishes an interrupted sweep without re-measuring. The sweep also records which rule
schedules each kernel of graphs with large reductions, under the default and the fixed rules.
"""

from __future__ import annotations

import sys
from pathlib import Path

from baselines.case import Case
from baselines.pipeline import make_target

from .candidates import TuningFailed
from .harness import Protocol
from .progress import Progress
from .store import RUN_FILE, Run, RunError, read_json, write_json

SWEEP_ARMS = ["partial", "on", "fixed", "serial", "one-kernel"]
CAPTURED_ARMS = ["fixed+capture", "one-kernel+capture"]
SWEEP_TUNERS = ["optuna", "optuna-one-kernel"]
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


def sweep_arms(target_kind: str) -> list[str]:
    """The sweep's arms; on a GPU with PyTorch, the captured arms too (like for like)."""
    if target_kind != "cuda":
        return SWEEP_ARMS
    try:
        import torch  # noqa: F401  (the captured arms replay through PyTorch's CUDA graphs)
    except ImportError:
        print("tune sweep: PyTorch is missing; leaving out " + ", ".join(CAPTURED_ARMS),
              file=sys.stderr)
        return SWEEP_ARMS
    return SWEEP_ARMS + CAPTURED_ARMS


def case_names(text: str | None) -> list[str]:
    names = [n.strip() for n in (text or ",".join(SWEEP_CASES)).split(",") if n.strip()]
    unknown = [n for n in names if n not in SWEEP_CASES]
    if unknown or not names:
        raise RunError(f"unknown sweep case {unknown[0] if unknown else text!r}; "
                       f"choose from {', '.join(SWEEP_CASES)}")
    return names


def run_sweep(out: Path, names: list[str], target_spec: dict, device: str, budget: int,
              protocol: Protocol, progress: Progress, command: str) -> dict:
    from reports.sweep import render_sweep

    from .study import new_meta, run_study, save_environment
    settings = {"cases": names, "target": target_spec["kind"], "device": device,
                "budget": budget, "protocol": protocol.to_dict()}
    stored_path = out / SWEEP_FILE
    if stored_path.exists() and read_json(stored_path)["settings"] != settings:
        raise RunError(f"{out} holds a sweep with other settings; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    write_json(stored_path, {"settings": settings, "command": command})
    tuners = SWEEP_TUNERS if budget > 0 else []
    arms = sweep_arms(target_spec["kind"])
    for number, name in enumerate(names, 1):
        case, path = SWEEP_CASES[name], out / name
        identity = {"case": case.to_dict(), "target": target_spec["kind"], "device": device}
        if (path / "report.json").exists():
            progress.say(f"case {number}/{len(names)} {name}: already measured, kept")
            continue
        progress.say(f"case {number}/{len(names)} {name}")
        if (path / RUN_FILE).exists():
            run = Run.open(path, identity)
        else:
            run = Run.create(path, new_meta(case, target_spec, identity, protocol, tuners,
                                            budget, f"{command} (case {name})", {}, arms))
            save_environment(run, make_target(**target_spec))
        try:
            run_study(run, progress)
        except TuningFailed as error:  # its arms were measured and reported; go on
            progress.say(f"case {name}: {error}")
    return render_sweep(out, names)
