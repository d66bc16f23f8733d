"""The PR text's table of real networks, read from `tune models`' models.json.

That file's format was still being written when this reader was (branch models-cli), so it
reads defensively and stays small and apart: per model (a list under "models", or a mapping
from the model's name) its name ("model", "name" or "spec") and its end-to-end time under the
default rules and with the rule (a mapping under one of TIMES, from "default" and "fixed" to a
number or to a mapping holding "median_ms" or "median_us"). A model whose entry has another
shape is listed with its figures "not found", and the section says so: adapt TIMES and
`_time` here, nothing else.
"""

from __future__ import annotations

from pathlib import Path

TIMES = ("end_to_end_ms", "end_to_end_us", "end_to_end", "e2e_ms", "e2e_us", "e2e")


def _entries(data: dict) -> list[tuple[str, dict]]:
    models = data.get("models", [])
    if isinstance(models, dict):
        return [(str(name), entry) for name, entry in models.items() if isinstance(entry, dict)]
    named = []
    for entry in models if isinstance(models, list) else []:
        if isinstance(entry, dict):
            named.append((str(entry.get("model") or entry.get("name") or entry.get("spec")), entry))
    return named


def _time(entry: dict, variant: str) -> float | None:
    """Milliseconds end to end of `entry` under the rule list `variant`, where found."""
    for key in TIMES:
        times = entry.get(key)
        if not isinstance(times, dict) or variant not in times:
            continue
        value = times[variant]
        if isinstance(value, dict):
            found = value.get("median_ms", value.get("median_us"))
            scale = 1.0 if "median_ms" in value else 1e-3
        else:
            found, scale = value, 1e-3 if key.endswith("_us") else 1.0
        if isinstance(found, int | float) and not isinstance(found, bool):
            return found * scale
    return None


def models_section(data: dict, source: Path) -> list[str]:
    entries = _entries(data)
    if not entries:
        return [
            f"`{source}` lists no model in a form this reader knows "
            "(tuning/upstream/models_section.py)."
        ]
    lines = [
        f"`tune models` (`{source}`): each model end to end under the default rules and with "
        "WindowReduction (medians).",
        "",
        "| model | default rules | with WindowReduction | ratio |",
        "|---|---|---|---|",
    ]
    unread = 0
    for name, entry in entries:
        default, fixed = _time(entry, "default"), _time(entry, "fixed")
        unread += default is None or fixed is None
        ratio = f"{fixed / default:.3f}" if default and fixed is not None else "not found"
        lines.append(f"| {name} | {_ms(default)} | {_ms(fixed)} | {ratio} |")
    if unread:
        lines += [
            "",
            f"{unread} model(s) without both figures in a form this reader knows "
            "(tuning/upstream/models_section.py).",
        ]
    return lines


def _ms(value: float | None) -> str:
    return "not found" if value is None else f"{value:.3f} ms"
