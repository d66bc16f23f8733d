"""`--tune-top K`: the K pattern kernels that cost the model most under the default list
(launches per call x time alone) tuned with the study's own tuners, side by side, each measuring
`--budget` candidates: Optuna over the schedule template (`baselines/template.py`) and MetaSchedule
over the kernel's own default space.

Every candidate is checked against the host reference (the unscheduled kernel on llvm) before its
time counts (`candidates/task.ModelKernel`), and the evaluator also times the kernel as the
default and the fixed lists schedule it, so that default / rule / tuned compare with one timer.
The faster tuner's schedule of each kernel goes into `tvm-tuned`: the fixed list's build with
those kernels put in. Each kernel's work stays in tuners/<kernel>/ (the Optuna study,
MetaSchedule's database, summary.json), and a resume goes on from there.
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import tvm

from baselines.pipeline import make_target
from baselines.template import PoolSchedule
from tuning.candidates.evaluator import CandidateEvaluator
from tuning.candidates.kernel_cache import KernelCache
from tuning.candidates.outcome import Status
from tuning.candidates.rule_schedule import DefaultSchedule
from tuning.candidates.side_by_side import side_by_side
from tuning.candidates.summary import summary_counts
from tuning.candidates.task import ModelKernel
from tuning.errors import TuningFailed
from tuning.runfolder.store import Run, read_json, write_json, write_text

from .plan import TUNED_BASE, ModelPlan

FILE = "tuned_kernels.json"
TUNERS = ("optuna", "metaschedule")


def costliest(run: Run, count: int) -> list[str]:
    """The `count` pattern kernels with the largest launches x default time, timed right."""
    times = read_json(run.path / "kernel_times.json")["kernels"]
    costs = []
    for kernel in read_json(run.path / "analysis.json")["kernels"]:
        default = times.get(kernel["name"], {}).get("default", {})
        if kernel["pattern"] and default.get("status") == Status.OK:
            costs.append((kernel["calls"] * default["kernel_us"], kernel["name"]))
    return [name for _, name in sorted(costs, reverse=True)[:count]]


def tune_top(run: Run, plan: ModelPlan, kernels_file: str, progress) -> str | None:
    """Tune (or finish tuning) the costliest pattern kernels; the tuned kernels' file in the
    run folder (None where no kernel has a valid schedule)."""
    names = costliest(run, plan.tune_top)
    funcs = pickle.loads(Path(kernels_file).read_bytes())
    target = make_target(**plan.target_spec)
    summaries, tuned = {}, {}
    for number, name in enumerate(names, 1):
        progress.line(f"tuning {number}/{len(names)}: {name}")
        summaries[name], func = _tune_kernel(run, plan, name, funcs[name], target, progress)
        if func is not None:
            tuned[name] = func
    path = run.path / FILE
    if tuned:
        write_text(path, tvm.ir.save_json(tvm.IRModule(tuned)))
    run.update_meta(
        tuned={"kernels": summaries, "file": FILE if tuned else None, "base": TUNED_BASE}
    )
    return str(path) if tuned else None


def _tune_kernel(run: Run, plan: ModelPlan, name: str, func, target, progress) -> tuple:
    folder = run.path / "tuners" / name
    done = folder / "summary.json"
    if done.exists():
        summary = read_json(done)
        return summary, _best_function(folder, summary, func, target)
    folder.mkdir(parents=True, exist_ok=True)
    task = ModelKernel(name, func, plan.options.dtype)
    cache = KernelCache(folder / "kernels.json")
    with CandidateEvaluator(task, plan.target_spec, cache=cache) as evaluator:
        rules = {r: evaluator.evaluate([DefaultSchedule(r)])[0] for r in ("default", "fixed")}
        outcomes = side_by_side(
            {
                "optuna": lambda: _optuna(
                    run, name, folder, task, target, evaluator, plan, progress
                ),
                "metaschedule": lambda: _metaschedule(
                    name, folder, task, target, plan, cache, progress
                ),
            },
            fatal=lambda error: not isinstance(error, TuningFailed),
        )
    found = {t: o for t, o in outcomes.items() if not isinstance(o, BaseException)}
    timed = {t: s["best_kernel_us"] for t, s in found.items() if s.get("best_kernel_us")}
    best = min(timed, key=timed.get) if timed else None
    summary = {
        "kernel": name,
        "default_us": rules["default"].get("kernel_us"),
        "fixed_us": rules["fixed"].get("kernel_us"),
        **{t: found.get(t, {"error": str(outcomes[t])}) for t in TUNERS},
        "best": best,
        "kernel_us": timed.get(best) if best else None,
        "budget": plan.budget,
    }
    write_json(done, summary)
    progress.line(
        f"{name}: default {_us(summary['default_us'])}, fixed {_us(summary['fixed_us'])}, "
        f"tuned {_us(summary['kernel_us'])} ({best or 'no valid candidate'})"
    )
    return summary, _best_function(folder, summary, func, target)


def _us(value) -> str:
    return "—" if value is None else f"{value:.2f} us"


def _optuna(run, name, folder, task, target, evaluator, plan, progress) -> dict:
    from tuning.tuners.optuna.samplers import make_sampler
    from tuning.tuners.optuna.search_loop import OptunaSearch
    from tuning.tuners.optuna.storages import default_storage_url
    from tuning.tuners.optuna.study import STUDY_NAME, open_study
    from tuning.tuners.optuna.summary import records
    from tuning.tuners.space import Space

    started = time.monotonic()
    directory = folder / "optuna"
    directory.mkdir(exist_ok=True)
    identity = {**run.meta["identity"], "kernel": name}
    study = open_study(default_storage_url(directory), STUDY_NAME, make_sampler("tpe", 0), identity)
    space = Space.for_function(task.func, target)
    OptunaSearch(study, space, evaluator, progress, phase=f"optuna {name}").run(plan.budget)
    rows = records(study)
    summary, valid = summary_counts(rows, time.monotonic() - started)
    if not valid:
        raise TuningFailed(f"optuna measured no valid candidate: {summary['failed_by_reason']}")
    best = min(valid, key=lambda row: row["kernel_us"])
    return {**summary, "best_kernel_us": best["kernel_us"], "best_params": best["params"]}


def _metaschedule(name, folder, task, target, plan, cache, progress) -> dict:
    from tuning.tuners.metaschedule.tuner import tune_one

    phase = f"metaschedule {name}"
    (folder / "metaschedule").mkdir(exist_ok=True)

    def step(rows) -> None:
        progress.step(phase, len(rows), plan.budget)

    summary = tune_one(
        "ms-default",
        folder / "metaschedule",
        task,
        target,
        plan.target_spec,
        plan.budget,
        {"seed": 0},
        cache,
        step,
        progress.line,
    )
    if not summary["valid"]:
        raise TuningFailed(
            f"metaschedule measured no valid candidate: {summary['failed_by_reason']}"
        )
    return summary


def _best_function(folder: Path, summary: dict, func, target):
    """The best tuner's schedule of the kernel, scheduled (None: no valid candidate)."""
    if summary["best"] == "optuna":
        return PoolSchedule(**summary["optuna"]["best_params"]).apply(func, target)
    if summary["best"] == "metaschedule":
        best = tvm.ir.load_json((folder / "metaschedule" / "best_module.json").read_text())
        return best["main"]
    return None
