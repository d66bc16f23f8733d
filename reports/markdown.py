"""report.md: reads like a comment in the apache/tvm#20401 thread, the paragraph to paste first
(`paragraph.py`), then the tables it rests on."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.model_records import ModelReport
from pool_fusion_tuning.runfolder.report_records import Report

from .arms_md import arm_notes, arms_table
from .escape import code, fenced, md
from .kernels_md import fused_kernel_table, kernels_table
from .measurement_md import design_text, noise_section, ratios_section
from .paragraph import headline
from .sources_md import sources_section
from .stats.cpu_noise import CPU_NOTE
from .time_md import trials_time, tuners_time
from .tuners_md import tuners_section

__all__ = ["headline", "render"]


def environment_block(report: Report | ModelReport) -> list[str]:
    env = report["environment"]
    return fenced([f"{key}: {value}" for key, value in env.items()])


def wall_text(report: Report) -> list[str]:
    """Where the run's time went. The tuners run side by side, so theirs overlap within the
    tuning phase, and the arms' builds overlap it too."""
    walls = report.get("phase_wall_s") or {}
    if not walls:
        return tuners_time(report) + trials_time(report)
    parts = [f"{phase} {seconds:.0f} s" for phase, seconds in walls.items()]
    whole = f"; the whole run {report['wall_s']:.0f} s" if report.get("wall_s") else ""
    builds = (
        ", the arms' libraries build beside them (`arm builds`, first start to last end)"
        if "arm builds" in walls
        else ""
    )
    return [
        "",
        "## Wall time",
        "",
        f"Per phase (tuners run side by side within `tuning`{builds}; "
        "summed over resumes): " + ", ".join(parts) + whole + ".",
        *tuners_time(report),
        *trials_time(report),
    ]


def render(report: Report) -> str:
    """report.md: the paragraph for the issue first, then the tables it rests on, in the order
    a reader checks them (arms, ratios, noise, block order, kernels, tuners, wall time, the
    run's Case, protocol and environment); every source's best kernel side by side after the
    arms."""
    lines = [
        "# Fused MaxPool + Add (apache/tvm#20401): default schedule against tuned schedules",
        "",
        headline(report),
        "",
        *([md(CPU_NOTE), ""] if report["target"] != "cuda" else []),
        "## Arms (the whole graph; medians of per-trial medians)",
        "",
    ]
    lines += arms_table(report)
    lines += arm_notes(report)
    lines += sources_section(report)
    lines += ratios_section(report)
    lines += noise_section(report)
    lines += design_text(report)
    lines += ["", "## CUDA kernels of each arm (ptxas resource report)", ""]
    lines += kernels_table(report)
    lines += fused_kernel_table(report)
    lines += tuners_section(report)
    lines += wall_text(report)
    lines += closing_sections(
        report, "Case and protocol", {"Case": report["case"], "Protocol": report["protocol"]}
    )
    return "\n".join(lines) + "\n"


def closing_sections(report: Report | ModelReport, heading: str, settings: dict) -> list[str]:
    """What a run was (`settings`, each under its name, then the command) and its environment:
    the last sections of a study's and a model's report."""
    lines = ["", f"## {heading}", ""]
    for name, value in {**settings, "Command": report.get("command")}.items():
        lines += [f"{name}: {code(value)}", ""]
    return lines + ["## Environment", "", *environment_block(report)]
