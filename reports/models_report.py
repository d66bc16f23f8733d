"""The summary of `tune models` (models.json, models.md, models.png) from each model's own report
(DIR/<model>/report.json) and models.json's settings; no TVM.

Per model: the pattern's cost against the model's time, each candidate list's end-to-end ratio
to the default list with its interval, whether it is a control (no kernel's rule changes) and
then whether the interval holds 1, correctness of every TVM build, and the wall time per phase.
"""

from __future__ import annotations

from pathlib import Path

from pool_fusion_tuning.runfolder.model_records import ModelReport, Models
from pool_fusion_tuning.runfolder.names import member
from pool_fusion_tuning.runfolder.redact import redact_data
from pool_fusion_tuning.runfolder.store import RUN_FILE, Run, read_record, write_json, write_text

from .model_peers import peer_rows
from .model_report import DEFAULT, arm_of

FILE = "models.json"
# A model run's phases that follow one another (the preparation's tasks run inside it).
SEQUENTIAL = ("preparation", "kernel timing", "tuning", "tuned build", "trials")


def render_models(out: Path) -> dict:
    """`tune models`' summary from each model's own report: models.json (redacted), models.md
    and, with matplotlib, models.png; returns the summary."""
    from .models_md import models_markdown

    stored = read_record(out / FILE, Models)
    rows = [_row(member(out, name, out / FILE)) for name in stored["models"]]
    summary = redact_data(
        {
            **stored,
            "rows": [row for row in rows if row is not None],
            "device": next((r["device"] for r in rows if r), None),
            "failures": stored.get("failures", {}),
        }
    )
    write_json(out / FILE, summary)
    write_text(out / "models.md", models_markdown(summary))
    if summary.get("zoo"):  # a zoo's census (`tune models --zoo`)
        from .census import render_census

        render_census(out, summary)
    try:
        from .model_plots import models_plot
    except ImportError:  # matplotlib is optional; the tables are enough
        return summary
    models_plot(summary, out / "models.png")
    return summary


def rerender_models(out: Path) -> Path:
    """`tune report DIR` of a models folder: each model's report, then the summary."""
    from .model_report import render_model_run

    for name in read_record(out / FILE, Models)["models"]:
        folder = member(out, name, out / FILE)
        if (folder / "analysis.json").exists():
            run = Run.open(folder)
            run.lock()
            render_model_run(run)
    summary = render_models(out)
    return out / ("census.md" if summary.get("zoo") else "models.md")


def _row(folder: Path) -> dict | None:
    name = folder.name
    path = folder / "report.json"
    if not path.exists():
        return None
    report = read_record(path, ModelReport)
    pattern = report["pattern"]
    tvm = [n for n in report["arms"] if n not in report["peers"]]
    return {
        "model": name,
        "label": _label(report),
        "shows": report.get("shows"),
        "device": report["device"],
        "kernels": len(report["kernels"]),
        "pattern": pattern,
        "rule_changes": {r: len(names) for r, names in report["rule_changes"].items()},
        "recovered": report["recovered"],
        "correct": all(report["arms"][n]["correct"] for n in tvm) if tvm else None,
        "wrong": [n for n in tvm if not report["arms"][n]["correct"]],
        "build_errors": report["build_errors"],
        "rule_failures": report.get("rule_failures", []),
        "gpu_ms": {n: _ms(a.get("queued_gpu_us")) for n, a in report["arms"].items()},
        "gpu_reasons": report.get("gpu_reasons", {}),
        "call_path_ms": {n: _ms(a.get("median_us")) for n, a in report["arms"].items()},
        "versus_peers": {
            pair: ratio
            for pair, ratio in report["ratios_by_figure"].get("gpu_queued", {}).items()
            if pair.split("/")[1] in report["peers"]
        },
        # each TVM arm against each peer in the first figure both have (`model_peers.py`)
        "against_peers": [
            {"arm": r["arm"], "peer": r["peer"], "figure": next(iter(r["figures"].values()))}
            for r in peer_rows(report)
            if r["figures"]
        ],
        "phase_wall_s": report["phase_wall_s"],
        "wall_s": sum(report["phase_wall_s"].get(phase, 0) for phase in SEQUENTIAL),
        "run": str(Path(name) / RUN_FILE),
        "default_arm": arm_of(DEFAULT),
    }


def _label(report: ModelReport) -> str:
    model = report["model"]
    return f"{model['spec']} (decomposed)" if model["options"].get("decompose") else model["spec"]


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1e3
