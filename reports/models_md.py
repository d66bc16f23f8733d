"""models.md: what `tune models` found across the networks, the paragraph first, then one row per
model and rule list."""

from __future__ import annotations

from urllib.parse import quote

from pool_fusion_tuning.baselines.peers import inductor_peer
from pool_fusion_tuning.runfolder.report_records import Ratio

from .cells import MISSING, table
from .comparisons import ratio_text
from .escape import code, md
from .model_md import duration

GPU = "gpu_queued"
CALL = "call_path"


def _ratio(rec: dict | None) -> Ratio | None:
    """GPU time where there is one (CUDA), else the own call path (a CPU run)."""
    ratios = (rec or {}).get("ratios", {})
    return ratios.get(GPU) or ratios.get(CALL)


def _held(rec: dict) -> bool | None:
    held = rec["holds_one"]
    return held.get(GPU, held.get(CALL))


def headline(summary: dict) -> str:
    """models.md's opening paragraph: the models with the pattern, those faster end to end
    (interval below 1), the controls and how many of their intervals hold 1, correctness, the
    rule lists TVM cannot build with, the models not run, the wall time."""
    rows = summary["rows"]
    found = [r for r in rows if r["pattern"]["kernels"]]
    faster, controls, held = [], [], []
    for row in rows:
        for rules, rec in row["recovered"].items():
            ratio = _ratio(rec)
            if rec["control"]:
                controls.append(f"{md(row['model'])} ({rules})")
                if ratio and _held(rec):
                    held.append(row["model"])
            elif ratio and (high := ratio.get("high")) is not None and high < 1:
                faster.append(f"{md(row['model'])} ({rules} {ratio['ratio']:.3f})")
    wrong = [f"{md(r['model'])}: {md(', '.join(r['wrong']))}" for r in rows if r["wrong"]]
    parts = [
        f"{len(rows)} models on {md(summary.get('device'))}; {len(found)} have kernels with the "
        "idle-lane pattern.",
        "Faster than the default list end to end (GPU time on a GPU, interval below 1): "
        + (", ".join(faster) or "none")
        + ".",
        f"Controls (no kernel's rule changes): {', '.join(controls) or 'none'}; "
        f"interval holds 1 in {len(set(held))} of them.",
        "Every TVM build correct against PyTorch eager."
        if not wrong
        else f"**Not correct: {'; '.join(wrong)}.**",
    ]
    failing = [
        f"{row['model']}: `{f['rules']}` ({f['failure']['rule']} raises on `{f['kernel']}`"
        + (f", {f['failure']['upstream']})" if f["failure"].get("upstream") else ")")
        for row in rows
        for f in row.get("rule_failures", [])
    ]
    if failing:
        parts.append(
            "Rule lists that cannot build a model as TVM ships it (timed with the kernel left "
            f"to the next rule; the model's report says which): {'; '.join(failing)}."
        )
    if summary["failures"]:
        failed = "; ".join(f"{md(m)}: {md(e)}" for m, e in summary["failures"].items())
        parts.append(f"Not run: {failed}.")
    against = [
        f"{md(row['model'])} {code(pair['arm'])} {pair['figure']['ratio']['ratio']:.3f} "
        f"({md(pair['figure']['label'])})"
        for row in rows
        for pair in row.get("against_peers", [])
        if pair["peer"] == inductor_peer()
    ]
    if against:
        parts.append(f"Against {code(inductor_peer())} (TVM / PyTorch): {'; '.join(against)}.")
    walls = summary.get("wall_s") or []
    if walls:
        parts.append(f"This command's wall time: {walls[-1]:.0f} s.")
    return " ".join(parts)


def models_markdown(summary: dict) -> str:
    """models.md: the paragraph, one row per model and candidate list (the pattern's cost, the
    list's ratio to the default, the control's check, correctness), what each model shows, and
    end to end per arm."""
    lines = ["# The idle-lane pattern across real networks (`tune models`)", "", headline(summary)]
    rows = []
    for row in summary["rows"]:
        pattern = row["pattern"]
        default_ms = row["gpu_ms"].get(row["default_arm"])
        for rules, rec in row["recovered"].items() or [(None, None)]:
            ratio = _ratio(rec)
            rows.append(
                [
                    f"[{md(row['model'])}]({quote(row['model'])}/report.md)",
                    f"{pattern['kernels']} of {row['kernels']}",
                    _cost(pattern, default_ms),
                    rules or MISSING,
                    row["rule_changes"].get(rules, 0) if rules else MISSING,
                    MISSING if not ratio else ratio_text(ratio),
                    _control(rec),
                    _agreement(rec),
                    "yes" if row["correct"] else MISSING if row["correct"] is None else "**no**",
                    f"{row['wall_s']:.0f}",
                ]
            )
    lines += [
        "",
        "## Per model and candidate list",
        "",
        *table(
            [
                "model",
                "pattern kernels",
                "pattern cost (default) of the model",
                "list",
                "kernels whose rule changes",
                "list / default (GPU time; on a CPU end to end)",
                "control: interval holds 1",
                "predicted / measured gain",
                "every TVM build correct",
                "wall, s",
            ],
            rows,
        ),
        "",
        "## What each model is there to show",
        "",
        *(f"- {code(r['label'])}: {md(r['shows'])}" for r in summary["rows"]),
        "",
        "## Against PyTorch (TVM / PyTorch, the first figure both have: each model's report "
        "gives them all)",
        "",
        *_peers_table(summary["rows"]),
        "",
        "## End to end per arm (ms: GPU time, calls queued; on a CPU, own call path)",
        "",
        *_arms_table(summary["rows"]),
        "",
        f"Command: {code(summary.get('command'))}",
    ]
    return "\n".join(lines) + "\n"


def _cost(pattern: dict, default_ms: float | None) -> str:
    if pattern["default_ms"] is None:
        return MISSING
    of = f" of {duration(default_ms)}" if default_ms is not None else ""
    return f"{duration(pattern['default_ms'])}{of}"


def _control(rec: dict | None) -> str:
    if not rec or not rec["control"]:
        return MISSING
    held = _held(rec)
    return MISSING if held is None else "yes" if held else "**no**"


def _agreement(rec: dict | None) -> str:
    if not rec or rec["predicted_gain_ms"] is None or rec["control"]:
        return MISSING
    text = f"{duration(rec['predicted_gain_ms'])} / {duration(rec['measured_gain_ms'])}"
    return text + ("" if rec["agrees"] is None else " (agree)" if rec["agrees"] else " (differ)")


def _arms_table(rows: list[dict]) -> list[str]:
    arms = list(dict.fromkeys(a for r in rows for a in r["gpu_ms"]))
    return table(
        ["model", *arms],
        [
            [
                r["model"],
                *(MISSING if r["gpu_ms"].get(a) is None else f"{r['gpu_ms'][a]:.3f}" for a in arms),
            ]
            for r in rows
        ],
    ) + [
        f"\nNo GPU time for {r['model']}'s `{arm}`: {reason}."
        for r in rows
        for arm, reason in r.get("gpu_reasons", {}).items()
    ]


def _peers_table(rows: list[dict]) -> list[str]:
    found = [(r["model"], pair) for r in rows for pair in r.get("against_peers", [])]
    if not found:
        return ["No model has a TVM arm and a PyTorch peer both timed."]
    return table(
        ["model", "TVM arm", "peer", "figure", "TVM / PyTorch"],
        [
            [
                md(model),
                code(p["arm"]),
                code(p["peer"]),
                md(p["figure"]["label"]),
                ratio_text(p["figure"]["ratio"])
                if "low" in p["figure"]["ratio"]
                else f"{p['figure']['ratio']['ratio']:.3f}",
            ]
            for model, p in found
        ],
    )
