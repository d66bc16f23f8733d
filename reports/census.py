"""The census of a zoo (`tune models --zoo`): census.json and census.csv, from models.json and each
model's folder; no TVM. A model not analysed yet (an interrupted census) is a row saying so.
census.md is `census_md.py`'s.

Per model: its kernels, its flagged kernels (the idle-lane pattern) and their launches per call,
those the window rule takes under a candidate list, the short rows RowReduction takes there (none in
a census older than that rule), those declined with the reason (`declines.py`), the default list's
rule of each flagged kernel, the rule lists that cannot build the model, and on a GPU the flagged
kernels' time under every list; a model not analysable is a row with its reason.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from pool_fusion_tuning.runfolder.model_records import Analysis, ModelReport, ModelRunMeta
from pool_fusion_tuning.runfolder.names import member
from pool_fusion_tuning.runfolder.store import RUN_FILE, read_record, write_json, write_text

from .census_counts import ROW_TAKES, TAKES
from .model_names import DEFAULT

FILE = "census.json"
WINDOW_RULE = "WindowReduction"
ROW_RULE = "RowReduction"


def render_census(out: Path, summary: dict) -> dict:
    """census.json, census.csv and census.md of the models folder `out` (a zoo's), from
    `summary` (models.json, as `reports.models_report` renders it); returns the census."""
    from .census_md import census_markdown

    rows, reasons = [], {}
    for name in summary["models"]:
        folder = member(out, name, out / "models.json")
        row, stated = _row(name, folder, summary["failures"].get(name))
        rows.append(row)
        reasons.update(stated)
    census = {
        "zoo": summary["zoo"],
        "device": summary.get("device"),
        "rule_lists": _lists(summary),
        "rows": rows,
        "reasons": reasons,
        "wall_s": summary.get("wall_s", []),
        "command": summary.get("command"),
    }
    write_json(out / FILE, census)
    write_text(out / "census.csv", census_csv(census))
    write_text(out / "census.md", census_markdown(census))
    return census


def _lists(summary: dict) -> list[str]:
    settings: dict = next(iter(summary["settings"].values()), {})
    return settings.get("rule_lists", [DEFAULT])


def _row(name: str, folder: Path, failure: str | None) -> tuple[dict, dict]:
    """A model's row and the reasons its analysis states; a model without its report is a
    row of its failure (or of what is left to do)."""
    if not (folder / "report.json").exists():
        meta = (
            read_record(folder / RUN_FILE, ModelRunMeta) if (folder / RUN_FILE).exists() else None
        )
        said = failure or (meta.get("failure") if meta else None)
        return ({"model": name, "failure": said} if said else {"model": name, "left": True}), {}
    report = read_record(folder / "report.json", ModelReport)
    analysis = read_record(folder / "analysis.json", Analysis)
    declines = {k["name"]: k.get("declines", {}) for k in analysis["kernels"]}
    flagged = [_kernel(k, declines[k["name"]]) for k in report["kernels"] if k["pattern"]]
    return {
        "model": name,
        "spec": report["model"]["spec"],
        "kernels": len(report["kernels"]),
        "launches": sum(k["calls"] for k in report["kernels"]),
        "flagged": flagged,
        "analysis_s": sum(report["phase_wall_s"].get(p, 0) for p in ("import", "analysis")),
        "rule_failures": [
            {"rules": f["rules"], "kernel": f["kernel"], **f["failure"]}
            for f in report["rule_failures"]
        ],
    }, analysis.get("declines", {})


def _kernel(kernel: dict, declines: dict[str, Any]) -> dict:
    """A flagged kernel: its launches, window, rule and launch per list, what the candidate list
    does with it (window rule, RowReduction, or the decline reason), and its time per list (None:
    untimed)."""
    rules = kernel["rules"].values()
    takes = TAKES if WINDOW_RULE in rules else ROW_TAKES if ROW_RULE in rules else None
    return {
        "name": kernel["name"],
        "calls": kernel["calls"],
        "window": kernel["window"],
        "outputs": kernel["outputs"],
        "rules": kernel["rules"],
        "launches": kernel["launches"],
        "window_rule": takes or next(iter(declines.values()), None),
        "kernel_us": {r: us for r, us in kernel["kernel_us"].items() if us is not None},
    }


CSV_FIELDS = ("model", "kernel", "calls", "window", "outputs", "list", "rule", "grid", "block")


def census_csv(census: dict) -> str:
    """One row per flagged kernel and rule list: its rule, launch, what the window rule does
    with it and its time (empty without a GPU)."""
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow((*CSV_FIELDS, "window_rule", "kernel_us"))
    for row in census["rows"]:
        for k in row.get("flagged", []):
            for rules in census["rule_lists"]:
                launch = k["launches"].get(rules) or {}
                writer.writerow(
                    (
                        row["model"],
                        k["name"],
                        k["calls"],
                        k["window"],
                        k["outputs"],
                        rules,
                        k["rules"].get(rules),
                        launch.get("grid"),
                        launch.get("block"),
                        k["window_rule"],
                        k["kernel_us"].get(rules),
                    )
                )
    return table.getvalue()
