"""`--tune-top K`: the K pattern kernels that cost the model most under the default list (launches
per call x time alone; with `--kernels any`, the K costliest of any kind), tuned side by side by
every tuner whose spec takes the role `tune-top` (`tuners/registry.py`), each measuring `--budget`
candidates through its `tune_kernel` in a folder of its own. `--tune-top all` takes every kernel
that matters (`plan.ALL_MIN_SHARE`). Each kernel's result is saved as it ends
(tuners/<kernel>/result.json), so Ctrl-C or SIGTERM loses at most the kernel in progress, and
`--time-budget` stops starting kernels once the tuning's wall time, summed over commands, would pass
it. A tuner whose space does not take a kernel is skipped for it, and one that raises has its
error's line there (traceback in details.log); the other kernels are still tuned.

Every candidate is checked against the host reference before its time counts
(`candidates/task.ModelKernel`), and the evaluator also times the default and fixed lists' kernels,
so default / rule / tuned compare with one timer. The faster tuner's schedule of each kernel goes
into `tvm-tuned` (the fixed list's build with those kernels put in). A resume goes on from
tuners/<kernel>/ (Optuna study, MetaSchedule database, result.json).
"""

from __future__ import annotations

import functools
import pickle
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import tvm

from pool_fusion_tuning.baselines.models.model_errors import first_line
from pool_fusion_tuning.runfolder.model_records import TunedKernel
from pool_fusion_tuning.runfolder.store import Run, read_record, write_json, write_text
from pool_fusion_tuning.tuning.base.errors import OutOfScope, TuningFailed
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator, stopped_by_the_run
from pool_fusion_tuning.tuning.candidates.kernel_cache import KernelCache
from pool_fusion_tuning.tuning.candidates.rule_schedule import DefaultSchedule
from pool_fusion_tuning.tuning.candidates.side_by_side import side_by_side
from pool_fusion_tuning.tuning.candidates.task import ModelKernel
from pool_fusion_tuning.tuning.limits import usable_cores
from pool_fusion_tuning.tuning.tuners.registry import TUNERS, tuners_for
from pool_fusion_tuning.tuning.tuners.spec import KernelJob, Role

from .kernel_choice import costliest, kernel_kind
from .model_plan import PATTERN_KERNELS, TUNED_BASE, ModelPlan, kernel_options

FILE = "tuned_kernels.json"
# Each tuned kernel's result, in tuners/<kernel>/, written as soon as the kernel is tuned.
RESULT = "result.json"
# The run's phase whose wall time the tuning adds to (`Run.add_wall`).
PHASE = "tuning"


def tune_top(run: Run, plan: ModelPlan, kernels_file: str, progress) -> str | None:
    """Tune (or finish tuning) the costliest kernels of `plan`, `plan.kernels_at_once` at a time,
    each result written as it finishes, until all are tuned or `plan.time_budget_s` would be
    passed; the tuned kernels' file in the run folder, those that beat the base list's (None
    where no kernel has a valid tuned schedule)."""
    count = None if plan.tunes_all else int(plan.tune_top)
    kernels = costliest(run, count, plan.kernels)
    funcs = pickle.loads(Path(kernels_file).read_bytes())
    jobs = {k["name"]: _jobs(run, plan, k["name"], funcs[k["name"]], progress) for k in kernels}
    spent = _Spent(run, plan.kernels_at_once)  # saved in `finally` below
    summaries: dict[str, dict] = {}
    left: list[str] = []
    # The cores are shared out: each kernel's builders and MetaSchedule's search get their part.
    workers = max(1, usable_cores() // plan.kernels_at_once)

    def to_tune() -> Iterator[tuple[str, functools.partial]]:
        """The kernels not tuned before, each when a thread is free and the budget allows."""
        stop = None
        for number, kernel in enumerate(kernels, 1):
            name = kernel["name"]
            summary = _finished(run, name)
            if summary is not None:  # kernels tuned side by side may end in any order
                progress.line(f"tuned before, kept {number}/{len(kernels)}: {name}")
                summaries[name] = summary
                continue
            stop = stop or spent.stops(plan.time_budget_s, [*summaries.values()])
            if stop:
                left.append(name)
                continue
            progress.line(f"tuning {number}/{len(kernels)}: {name} ({kernel_kind(kernel)})")
            yield (
                name,
                functools.partial(_tune_kernel, run, plan, kernel, jobs[name], progress, workers),
            )
        if left:
            progress.line(f"{stop}: {len(left)} kernel(s) left untuned")

    def heard(name: str, summary: dict) -> None:
        summaries[name] = summary
        spent.save()

    try:
        side_by_side(to_tune(), each=heard, at_once=plan.kernels_at_once)
    finally:  # an interrupt too: the time it spent counts
        spent.save()
    ordered = {k["name"]: summaries[k["name"]] for k in kernels if k["name"] in summaries}
    tuned = {}
    for name, summary in ordered.items():
        func = _best_function(jobs[name], summary)
        if func is not None:
            tuned[name] = func
    path = run.path / FILE
    # tvm-tuned is built where any kernel has a valid tuned schedule, even if none beat the base
    # list's (it then re-measures the base list's build, which the report says).
    found = any(summary.get("best") for summary in ordered.values())
    if found:
        write_text(path, tvm.ir.save_json(tvm.IRModule(tuned)))
    chosen = {"chosen": plan.kernels} if plan.kernels != PATTERN_KERNELS else {}
    at_once = {"kernels_at_once": spent.at_once} if spent.at_once > 1 else {}
    run.update_meta(
        tuned={
            "kernels": ordered,
            "file": FILE if found else None,
            "base": TUNED_BASE,
            **chosen,
            "tune_top": plan.tune_top,
            "time_budget_s": plan.time_budget_s,
            "kernels_chosen": len(kernels),
            "kernels_left": left,
            "commands": spent.commands,  # the wall time: the run's phase_wall_s[PHASE]
            **at_once,
        }
    )
    return str(path) if found else None


class _Spent:
    """The tuning's wall time summed over commands (the run's `phase_wall_s`, phase "tuning"),
    added after each kernel and when a command stops, so interrupted time counts; the commands so
    far in run.json's `tuning` (`tuned` marks it done, which the report reads)."""

    def __init__(self, run: Run, at_once: int):
        self.run = run
        before = run.model_meta.get("tuning", {})
        self.commands = before.get("commands", 0) + 1
        self.at_once = max(before.get("kernels_at_once", 1), at_once)  # the most of any command
        self.saved_at = time.monotonic()
        run.update_meta(tuning={"commands": self.commands, "kernels_at_once": self.at_once})

    def wall_s(self) -> float:
        saved = self.run.model_meta.get("phase_wall_s", {}).get(PHASE, 0.0)
        return saved + time.monotonic() - self.saved_at

    def save(self) -> None:
        now = time.monotonic()
        self.run.add_wall(PHASE, now - self.saved_at)
        self.saved_at = now

    def stops(self, budget_s: float | None, done: list[dict]) -> str | None:
        """Why no further kernel is started (None: start it): the time budget is spent, or
        would be by a kernel taking the mean wall time of those tuned so far."""
        if budget_s is None:
            return None
        walls = [summary["wall_s"] for summary in done]  # every result.json has it
        mean = sum(walls) / len(walls) if walls else 0.0
        if self.wall_s() + mean > budget_s:
            return (
                f"time budget {budget_s:g} s: {self.wall_s():.0f} s spent, about {mean:.0f} s "
                "more per kernel"
            )
        return None


def _finished(run: Run, name: str) -> dict | None:
    """The kernel's result, where a command before this one tuned it."""
    done = run.path / "tuners" / name / RESULT
    return dict(read_record(done, TunedKernel)) if done.exists() else None


def _jobs(run: Run, plan: ModelPlan, name: str, func, progress) -> dict:
    task = ModelKernel(name, func, plan.options.dtype)
    identity = {**run.model_meta["identity"], "kernel": name}
    return {
        tuner: KernelJob(
            task,
            run.path / "tuners" / name / tuner,
            plan.target,
            plan.budget,
            identity,
            progress,
            phase=f"{tuner} {name}",
            options=kernel_options(run, plan, name),
            warm_start=plan.warm_start,
        )
        for tuner in plan.tuners
    }


def _tune_kernel(
    run: Run, plan: ModelPlan, kernel: dict, jobs: dict, progress, workers: int
) -> dict:
    started = time.monotonic()
    name = kernel["name"]
    folder = run.path / "tuners" / name
    task = next(iter(jobs.values())).task
    folder.mkdir(parents=True, exist_ok=True)
    cache = KernelCache(folder / "kernels.json")
    with CandidateEvaluator(task, plan.target, cache=cache, workers=workers) as evaluator:
        rules = {r: evaluator.evaluate([DefaultSchedule(r)])[0] for r in ("default", "fixed")}
        outcomes = side_by_side(
            {
                tuner: functools.partial(TUNERS[tuner].tuner().tune_kernel, job, evaluator)
                for tuner, job in jobs.items()
            },
            # A tuner that raises on one kernel has that as its finding for the kernel; an interrupt
            # ends the run and leaves the kernel unfinished (the next command goes on from its study
            # and database).
            fatal=lambda error: stopped_by_the_run(error) or not isinstance(error, Exception),
        )
    found = {t: _outcome(o) for t, o in outcomes.items()}
    named = f"left out by --tuners {','.join(jobs)}"
    found.update({t: {"skipped": named} for t in tuners_for(Role.TUNE_TOP) if t not in jobs})
    timed = {t: s["best_kernel_us"] for t, s in found.items() if s.get("best_kernel_us")}
    best = min(timed, key=timed.__getitem__) if timed else None
    fixed_us = rules["fixed"].get("kernel_us")
    # tvm-tuned takes a tuned schedule only where it beats its base list: a small budget can end
    # slower than the rule (MetaSchedule on a large matmul).
    slower = best is not None and fixed_us is not None and timed[best] >= fixed_us
    summary = {
        "kernel": name,
        "kind": kernel_kind(kernel),
        "calls": kernel["calls"],
        "default_us": rules["default"].get("kernel_us"),
        "fixed_us": rules["fixed"].get("kernel_us"),
        **found,
        "best": best,
        "kernel_us": timed.get(best) if best else None,
        "used": TUNED_BASE if slower else best,
        "budget": plan.budget,
        "wall_s": time.monotonic() - started,
    }
    write_json(folder / RESULT, summary)
    for tuner, reason in _not_tuned(found).items():
        progress.line(f"{name}: {tuner} {reason}")
    progress.line(
        f"{name}: default {_us(summary['default_us'])}, fixed {_us(summary['fixed_us'])}, "
        f"tuned {_us(summary['kernel_us'])} ({best or 'no valid candidate'})"
        + (f"; tvm-tuned keeps the {TUNED_BASE} list's schedule, faster" if slower else "")
    )
    return summary


def _outcome(outcome) -> dict:
    """A tuner's summary of a kernel; for one that found nothing, its reason in one line
    (`skipped`: its space does not take the kernel; `error`: nothing valid measured, or it
    raised, traceback in details.log)."""
    if isinstance(outcome, OutOfScope):
        return {"skipped": str(outcome)}
    if isinstance(outcome, TuningFailed):
        return {"error": str(outcome)}
    if isinstance(outcome, BaseException):
        traceback.print_exception(outcome)  # to details.log (`progress.details_to`)
        return {"error": f"{type(outcome).__name__}: {first_line(outcome)[:300]}"}
    return outcome


def _not_tuned(found: dict[str, dict]) -> dict[str, str]:
    """Each tuner that has no schedule of the kernel (`found`: each tuner's outcome): why, as its
    console line says it."""
    said = {}
    for tuner, outcome in found.items():
        if "skipped" in outcome:
            said[tuner] = f"skipped, {outcome['skipped']}"
        elif "error" in outcome:
            said[tuner] = f"found nothing: {outcome['error']}"
    return said


def _us(value) -> str:
    return "—" if value is None else f"{value:.2f} us"


def _best_function(jobs: dict[str, KernelJob], summary: dict):
    """The best tuner's schedule of the kernel, scheduled (None: no valid candidate, or the
    base list's schedule was faster and stays)."""
    best = summary.get("used", summary["best"])
    if best not in jobs:
        return None
    return TUNERS[best].tuner().scheduled(jobs[best], summary[best])
