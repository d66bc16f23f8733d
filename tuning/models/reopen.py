"""A `tune model --tune-top` run given more by a later command: time (`--time-budget`, where it
left kernels), candidates (a larger `--budget`) or kernels (more classes in `--kernels`). What was
measured is kept; the arms are timed again beside the new `tvm-tuned`, the earlier trials kept in
trials-superseded-N/."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pool_fusion_tuning.runfolder.store import Run

from .model_plan import PATTERN_KERNELS, ModelPlan, chosen_classes
from .tune_top import RESULT


def comparable(settings: Mapping[str, object]) -> dict:
    """A run's stored settings as a command's are compared with them: runs made before
    2026-12-07's second session held the time budget, which a later command may change."""
    return {k: v for k, v in settings.items() if k != "time_budget_s"}


def widens(stored: dict, given: dict) -> bool:
    """Whether `given` is the folder's `stored` settings with a larger --budget, more --kernels
    classes, or both."""
    if {**stored, "budget": 0, "kernels": None} != {**given, "budget": 0, "kernels": None}:
        return False
    before, after = (_classes(settings) for settings in (stored, given))
    budget = given["budget"] >= stored.get("budget", 0)
    kernels = before == after or (before is not None and after is not None and before < after)
    return budget and kernels and given != stored


def reopen_tuning(run: Run, plan: ModelPlan, say) -> None:
    """Reopen the run's tuning where this command gives it more candidates, kernels or time."""
    stored = comparable(run.model_meta["settings"])
    if plan.tune_top and widens(stored, plan.settings):
        more = []
        if plan.budget > stored["budget"]:
            more.append(_more_candidates(run, stored["budget"], plan.budget))
        if plan.kernels != stored.get("kernels", PATTERN_KERNELS):
            more.append(
                f"--kernels {stored['kernels']} -> {plan.kernels}, the kernels tuned before kept"
            )
        run.update_meta(settings=plan.settings)
        say("the tuning goes on: " + "; ".join(more) + _trials_said(_supersede_trials(run)))
        return
    found = run.model_meta.get("tuned")
    if not plan.tune_top or not found or not found["kernels_left"]:
        return
    given, before = plan.time_budget_s, found["time_budget_s"]
    if given is not None and (before is None or given <= before):
        return
    kept = _supersede_trials(run)
    say(
        f"the tuning goes on: {len(found['kernels_left'])} kernel(s) left by its time budget "
        f"({before:g} s)" + _trials_said(kept)
    )


def _classes(settings: dict) -> set[str] | None:
    return chosen_classes(settings.get("kernels", PATTERN_KERNELS))


def _more_candidates(run: Run, stored: int, given: int) -> str:
    """Each kernel tuned goes on from its tuners' rows, database and study; its result at the
    smaller budget kept as result-budget-N.json."""
    results = sorted((run.path / "tuners").glob(f"*/{RESULT}"))
    for result in results:
        result.rename(result.with_name(f"result-budget-{stored}.json"))
    return (
        f"--budget {stored} -> {given}, {len(results)} kernel(s) tuned at {stored} go on from "
        "what they measured"
    )


def _supersede_trials(run: Run) -> Path | None:
    """The arms' trials moved to trials-superseded-N/ (None if none) and the tuned build
    forgotten: both are made again."""
    kept = None
    if any((run.path / "trials").glob("trial_*.json")):
        kept = run.path / f"trials-superseded-{len(list(run.path.glob('trials-superseded-*'))) + 1}"
        (run.path / "trials").rename(kept)
    run.drop_meta("tuned")
    return kept


def _trials_said(kept: Path | None) -> str:
    return f"; the arms are timed again, the earlier trials kept in {kept.name}/" if kept else ""
