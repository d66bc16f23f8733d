"""`--tune-top K`: the K pattern kernels that cost the model most under the default list
(launches per call x time alone) tuned with the study's own tuners, side by side, each measuring
`--budget` candidates: every tuner whose spec takes the role `tune-top` (`tuners/registry.py`:
Optuna over the schedule template, `baselines/template.py`, and MetaSchedule over the kernel's own
default space), each through its `tune_kernel` in a folder of its own.

Every candidate is checked against the host reference (the unscheduled kernel on llvm) before its
time counts (`candidates/task.ModelKernel`), and the evaluator also times the kernel as the
default and the fixed lists schedule it, so that default / rule / tuned compare with one timer.
The faster tuner's schedule of each kernel goes into `tvm-tuned`: the fixed list's build with
those kernels put in. Each kernel's work stays in tuners/<kernel>/ (the Optuna study,
MetaSchedule's database, summary.json), and a resume goes on from there.
"""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import tvm

from baselines.pipeline import make_target
from tuning.candidates.evaluator import CandidateEvaluator
from tuning.candidates.kernel_cache import KernelCache
from tuning.candidates.outcome import Status
from tuning.candidates.rule_schedule import DefaultSchedule
from tuning.candidates.side_by_side import side_by_side
from tuning.candidates.task import ModelKernel
from tuning.errors import TuningFailed
from tuning.runfolder.store import Run, read_json, write_json, write_text
from tuning.tuners.registry import TUNERS, tuners_for
from tuning.tuners.spec import KernelJob, Role

from .plan import TUNED_BASE, ModelPlan

FILE = "tuned_kernels.json"


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
    task = ModelKernel(name, func, plan.options.dtype)
    identity = {**run.meta["identity"], "kernel": name}
    jobs = {
        tuner: KernelJob(
            task,
            folder / tuner,
            target,
            plan.target_spec,
            plan.budget,
            identity,
            progress,
            phase=f"{tuner} {name}",
        )
        for tuner in tuners_for(Role.TUNE_TOP)
    }
    if done.exists():
        summary = read_json(done)
        return summary, _best_function(jobs, summary)
    folder.mkdir(parents=True, exist_ok=True)
    cache = KernelCache(folder / "kernels.json")
    with CandidateEvaluator(task, plan.target_spec, cache=cache) as evaluator:
        rules = {r: evaluator.evaluate([DefaultSchedule(r)])[0] for r in ("default", "fixed")}
        outcomes = side_by_side(
            {
                tuner: functools.partial(TUNERS[tuner].tuner().tune_kernel, job, evaluator)
                for tuner, job in jobs.items()
            },
            fatal=lambda error: not isinstance(error, TuningFailed),
        )
    found = {t: o for t, o in outcomes.items() if not isinstance(o, BaseException)}
    timed = {t: s["best_kernel_us"] for t, s in found.items() if s.get("best_kernel_us")}
    best = min(timed, key=timed.__getitem__) if timed else None
    summary = {
        "kernel": name,
        "default_us": rules["default"].get("kernel_us"),
        "fixed_us": rules["fixed"].get("kernel_us"),
        **{t: found.get(t, {"error": str(outcomes[t])}) for t in jobs},
        "best": best,
        "kernel_us": timed.get(best) if best else None,
        "budget": plan.budget,
    }
    write_json(done, summary)
    progress.line(
        f"{name}: default {_us(summary['default_us'])}, fixed {_us(summary['fixed_us'])}, "
        f"tuned {_us(summary['kernel_us'])} ({best or 'no valid candidate'})"
    )
    return summary, _best_function(jobs, summary)


def _us(value) -> str:
    return "—" if value is None else f"{value:.2f} us"


def _best_function(jobs: dict[str, KernelJob], summary: dict):
    """The best tuner's schedule of the kernel, scheduled (None: no valid candidate)."""
    best = summary["best"]
    if best not in jobs:
        return None
    return TUNERS[best].tuner().scheduled(jobs[best], summary[best])
