"""The PR text's table of real networks, from `tune models`' models.json: its "rows", one per
model, as reports/models_report.py writes them. End to end is the GPU time with calls queued
where the run recorded it, else the time through the model's own call path."""

from __future__ import annotations

from pathlib import Path

from pool_fusion_tuning.reports.comparisons import ratio_text
from pool_fusion_tuning.reports.escape import code, md
from pool_fusion_tuning.tuning.base.errors import UsageError

# The end-to-end figures a row gives (GPU time where recorded), and how the table names them.
FIGURES = {"gpu_queued": ("gpu_ms", "GPU time"), "call_path": ("call_path_ms", "own call path")}
DEFAULT, FIXED = "tvm-default", "tvm-fixed"


def models_section(data: dict, source: Path, date: str) -> list[str]:
    """PR.md's table of real networks: one row per model of `tune models`' models.json, with the
    command, device and date it was run; a file without rows is a usage error, not an empty
    table."""
    rows = data.get("rows")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise UsageError(
            f"{source} holds no model rows; give --models the folder `tune models` wrote"
        )
    lines = [
        f"{code(data.get('command', 'tune models'))} on "
        f"{md(data.get('device', 'a device not recorded'))}, {md(date)} ({code(source)}): per "
        "model, the kernels with the idle-lane pattern and their time per call under the default "
        "rules and with WindowReduction, then the model end to end (one process; the interval is "
        "over its timing blocks).",
        "",
        "| model | pattern kernels | their time per call: default → WindowReduction | "
        "end to end: default → WindowReduction | ratio (95% CI) | every build correct |",
        "|---|---|---|---|---|---|",
    ]
    return lines + [_row(row) for row in rows]


def _row(row: dict) -> str:
    pattern = row.get("pattern") or {}
    by_list = pattern.get("by_list_ms") or {}
    figure = "gpu_queued" if _has(row, FIGURES["gpu_queued"][0]) else "call_path"
    key, label = FIGURES[figure]
    times = row.get(key) or {}
    ratios = ((row.get("recovered") or {}).get("fixed") or {}).get("ratios") or {}
    ratio = ratios.get(figure)
    return (
        f"| {md(row.get('label', row.get('model')))} | {md(pattern.get('kernels', 0))} of "
        f"{md(row.get('kernels'))} | {_ms(by_list.get('default'))} → {_ms(by_list.get('fixed'))} | "
        f"{_ms(times.get(DEFAULT))} → {_ms(times.get(FIXED))} ({label}) | "
        f"{ratio_text(ratio) if ratio else '—'} | {'yes' if row.get('correct') else 'no'} |"
    )


def _has(row: dict, key: str) -> bool:
    times = row.get(key) or {}
    return times.get(DEFAULT) is not None and times.get(FIXED) is not None


def _ms(value) -> str:
    return f"{value:.3f} ms" if isinstance(value, int | float) else "—"
