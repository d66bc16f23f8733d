"""A run's stored samples per figure, arm, trial and block, from trial records of any format."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.records import Trial
from pool_fusion_tuning.runfolder.store import FIGURES

# What each figure is, for tables and verdicts (tuning/measure/blocks.py says how each is taken).
LABELS = {
    "call_path": "end to end, own call path",
    "python_call": "end to end, called from Python",
    "gpu_queued": "GPU time, calls queued",
}


def figure_samples(trial: Trial, figure: str, arm: str, repeat: int) -> list[list[float]]:
    """One trial's samples of `arm` for `figure`, one list per block (empty if not timed)."""
    stored = trial.get("block_samples_us")
    if stored is not None:
        return stored.get(figure, {}).get(arm, [])
    # Records written before blocks were kept (format 1): the end-to-end samples in block order,
    # `repeat` per block, and the queued GPU time measured once after the blocks.
    if figure == "call_path":
        flat = trial.get("samples_us", {}).get(arm) or []
        return [flat[i : i + repeat] for i in range(0, len(flat), repeat)]
    if figure == "gpu_queued" and trial.get("queued_gpu_us", {}).get(arm):
        return [trial["queued_gpu_us"][arm]]
    return []


def samples_by_figure(trials: list[Trial], names: list[str], repeat: int) -> dict:
    """figure -> arm -> per-trial lists of per-block samples; trials stay aligned across arms
    (a trial that did not time an arm holds an empty list), so ratios pair the same blocks.
    Only figures with samples are kept."""
    found = {
        figure: {name: [figure_samples(t, figure, name, repeat) for t in trials] for name in names}
        for figure in FIGURES
    }
    return {
        figure: arms
        for figure, arms in found.items()
        if any(block for per_trial in arms.values() for trial in per_trial for block in trial)
    }


def has_samples(per_trial: list) -> bool:
    return any(block for trial in per_trial for block in trial)
