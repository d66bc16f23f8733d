"""Write a run's report files (report.json, report.md, comment.md, report.csv, plots) from its
stored data."""

from __future__ import annotations

import csv
import io

from pool_fusion_tuning.runfolder.redact import redact_data
from pool_fusion_tuning.runfolder.report_records import Report
from pool_fusion_tuning.runfolder.store import Run, write_json, write_text

from . import markdown
from .comment import render_comment
from .report_data import summarize_run

# median_us, iqr_us, cv: end to end through the arm's own call path (the figure earlier
# reports gave); python_call_us and queued_gpu_us: the other two figures' medians.
# The run as a comment for the issue thread (`tune report DIR --comment` prints it).
COMMENT = "comment.md"
CSV_FIELDS = (
    "arm",
    "median_us",
    "iqr_us",
    "cv",
    "python_call_us",
    "queued_gpu_us",
    "ratio_to_on",
    "ratio_to_best",
    "correct",
    "max_abs_err",
    "samples",
)


def render_run(run: Run) -> Report:
    """A run's report files from its stored data (report.json, report.md, comment.md,
    report.csv, plots where matplotlib is installed), redacted; returns the report's data."""
    report: Report = redact_data(summarize_run(run))  # a crafted run file may hold a password
    write_json(run.path / "report.json", report)
    write_text(run.path / "report.md", markdown.render(report))
    write_text(run.path / COMMENT, render_comment(report))
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for name, arm in report["arms"].items():
        python_call = arm["figures"].get("python_call", {}).get("median_us")
        writer.writerow({"arm": name, **arm, "python_call_us": python_call})
    write_text(run.path / "report.csv", table.getvalue())
    try:
        from . import plots
    except ImportError:  # matplotlib is optional for re-rendering; the tables are enough
        return report
    plots.write_all(run, report)
    return report
