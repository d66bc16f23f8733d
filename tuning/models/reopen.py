"""A `tune model --tune-top` run given more by a later command: time (`--time-budget`, where it
left kernels) or candidates (a larger `--budget`). What was measured is kept; the arms are timed
again beside the new `tvm-tuned`, the earlier trials kept in trials-superseded-N/."""

from __future__ import annotations

from pathlib import Path

from pool_fusion_tuning.runfolder.store import Run

from .model_plan import ModelPlan
from .tune_top import RESULT


def more_budget(stored: dict, given: dict) -> bool:
    """Whether `given` is the folder's `stored` settings with a larger --budget."""
    return given["budget"] > stored.get("budget", 0) and {**stored, "budget": given["budget"]} == (
        given
    )


def reopen_tuning(run: Run, plan: ModelPlan, say) -> None:
    """Reopen the run's tuning where this command gives it more candidates or more time."""
    stored = run.model_meta["settings"]["budget"]
    if plan.tune_top and plan.budget > stored:
        _more_candidates(run, plan, stored, say)
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


def _more_candidates(run: Run, plan: ModelPlan, stored: int, say) -> None:
    """Each kernel tuned goes on from its tuners' rows, database and study; its result at the
    smaller budget kept as result-budget-N.json."""
    results = sorted((run.path / "tuners").glob(f"*/{RESULT}"))
    for result in results:
        result.rename(result.with_name(f"result-budget-{stored}.json"))
    run.update_meta(settings={**run.model_meta["settings"], "budget": plan.budget})
    kept = _supersede_trials(run)
    say(
        f"the tuning goes on: --budget {stored} -> {plan.budget}, {len(results)} kernel(s) "
        f"tuned at {stored} go on from what they measured" + _trials_said(kept)
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
