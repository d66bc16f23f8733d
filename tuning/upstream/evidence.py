"""The PR text's figures, read from the folders the project's own commands wrote: the study
(`tune`: report.json), the sweep (`tune sweep`: sweep.json) and the benchmark of the two
candidate fixes (`python3 -m baselines.window_bench`: window_bench.json). Every number in the
PR text comes from one of these files; where a folder is not given, from the H200 run of that
command committed under reports/h200/ (committed.py). `tune models`' figures (models.json) are
read by models_section.py."""

from __future__ import annotations

from pathlib import Path

from baselines.window_bench import table
from reports.comparisons import ratio_text
from reports.escape import code, md

from . import figure_files
from .committed import committed
from .models_section import models_section
from .pr_text import Figures

# What writes each file the PR text reads.
WRITTEN_BY = {
    "report.json": "`tune report RUN` renders it from a run folder",
    "sweep.json": "`tune sweep` writes it",
    "models.json": "`tune models` writes it",
    "window_bench.json": "`python3 -m baselines.window_bench OUT` writes it",
}


def read_figures(given: Path, name: str, option: str) -> dict:
    """The figure file `name` of the folder `given` (or the file itself), checked
    (figure_files.py)."""
    return figure_files.read_figures(given, name, option, WRITTEN_BY[name])


def _md(value) -> str:
    """A figure file's text field as markdown; one it lacks (or gives as null) said so."""
    return "not recorded" if value is None else md(value)


def _code(value) -> str:
    return "a command not recorded" if value is None else code(value)


def _us(value) -> str:
    return f"{value:.2f} us" if isinstance(value, int | float) else "not timed"


def _launch(kernel: dict | None) -> str:
    return md(f"{kernel.get('grid')} x {kernel.get('block')}") if kernel else "not recorded"


def study_section(report: dict, source: Path, date: str) -> list[str]:
    """ON (the default rules) against `fixed` (with the rule) on the issue's graph."""
    arms = report.get("arms", {})
    if "on" not in arms or "fixed" not in arms:
        return [f"The run in {code(source)} has no `on` and `fixed` arms to compare."]
    environment = report.get("environment", {})
    kernels = {row.get("arm"): row for row in report.get("fused_kernel", [])}
    on, fixed = arms["on"], arms["fixed"]
    lines = [
        f"{_code(report.get('command'))} on {_md(environment.get('gpu', report.get('device')))}, "
        f"{md(date)}, TVM {_md(environment.get('tvm'))}, "
        f"{_md(report.get('trials'))} processes ({code(source)}). The fused pool kernel at kernel "
        "level (the tuners' timer), and the whole graph end to end (median and interquartile "
        "range of every sample; GPU time with the calls queued):",
        "",
        "| | default rules (`on`) | with WindowReduction (`fixed`) |",
        "|---|---|---|",
        f"| fused kernel's launch (blocks x threads) | {_launch(kernels.get('on'))} "
        f"| {_launch(kernels.get('fixed'))} |",
        f"| fused kernel | {_us(on.get('kernel_us'))} | {_us(fixed.get('kernel_us'))} |",
        f"| end to end | {_range(on)} | {_range(fixed)} |",
        f"| GPU time, calls queued | {_us(on.get('queued_gpu_us'))} "
        f"| {_us(fixed.get('queued_gpu_us'))} |",
    ]
    ratio = report.get("ratios", {}).get("fixed/on")
    if ratio:
        lines += ["", f"End to end, fixed/on = {ratio_text(ratio)}."]
    return lines


def _range(arm: dict) -> str:
    if not all(isinstance(arm.get(k), int | float) for k in ("median_us", "q1_us", "q3_us")):
        return "not timed"
    return f"{arm['median_us']:.2f} us ({arm['q1_us']:.2f}–{arm['q3_us']:.2f})"


def sweep_section(sweep: dict, source: Path, date: str) -> list[str]:
    """Per Case of the sweep: the fused kernel and the graph under both rule lists."""
    cases = sweep.get("cases", [])
    if not cases:
        return [f"The sweep in {code(source)} holds no Case."]
    lines = [
        f"{_code(sweep.get('command'))} on {_md(sweep.get('device'))}, {md(date)} ({code(source)}):"
        " per Case, the fused pool kernel at kernel level and the graph end to end (medians), "
        "under the default "
        "rules (`on`) and with WindowReduction (`fixed`).",
        "",
        "| Case | kernel, on | kernel, fixed | end to end, on | end to end, fixed "
        "| fixed/on end to end |",
        "|---|---|---|---|---|---|",
    ]
    for case in cases:
        kernel, whole = case.get("kernel_us", {}), case.get("end_to_end_us", {})
        ratio = case.get("fixed_over_on")
        lines.append(
            f"| {_md(case.get('case'))} | {_us(kernel.get('default'))} "
            f"| {_us(kernel.get('fixed'))} "
            f"| {_us(whole.get('on'))} | {_us(whole.get('fixed'))} "
            f"| {ratio_text(ratio) if ratio else 'not measured'} |"
        )
    slower = sweep.get("fixed_slower_than_on") or []
    slower_text = md(", ".join(map(str, slower))) or "none"
    lines += ["", f"Cases where `fixed` is slower than `on`: {slower_text}."]
    return lines


def bench_section(bench: dict, source: Path, date: str) -> list[str]:
    """The two candidate fixes kernel by kernel, and how often each is faster."""
    rows = bench.get("kernels", [])
    if not rows:
        return [f"{code(source)} holds no kernel."]
    environment = bench.get("environment", {})
    lists = list(rows[0]["lists"])
    lines = [
        f"The toolkit's benchmark of the two fixes (`window_bench`) on "
        f"{_md(environment.get('gpu', 'the CPU'))}, {md(date)}, TVM {_md(environment.get('tvm'))} "
        f"({code(source)}). "
        "Each cell: the rule that takes the kernel, its launch (blocks x threads)"
        + (
            ", its median time at kernel level (interquartile range) and the ratio to the "
            "default list"
            if "median_us" in rows[0]["lists"][lists[0]]
            else "; nothing was timed (a run without a GPU checks the numerics only)"
        )
        + ":",
        "",
        *table(bench),
    ]
    verdict = _verdict(rows)
    return lines + (["", verdict] if verdict else [])


def _verdict(rows: list[dict]) -> str | None:
    """How often the new rule's median is below the in-place fix's, and where their
    interquartile ranges overlap (there they cannot be told apart)."""
    pairs = [
        (row["kernel"], row["lists"]["fixed"], row["lists"]["reduction-fix"])
        for row in rows
        if "median_us" in row["lists"].get("fixed", {})
        and "median_us" in row["lists"].get("reduction-fix", {})
    ]
    if not pairs:
        return None
    faster = [name for name, new, fix in pairs if new["median_us"] < fix["median_us"]]
    overlap = [
        name
        for name, new, fix in pairs
        if new["q1_us"] <= fix["q3_us"] and fix["q1_us"] <= new["q3_us"]
    ]
    return (
        f"WindowReduction (`fixed`) has the lower median on {len(faster)} of {len(pairs)} "
        f"kernels timed under both; their interquartile ranges overlap on {len(overlap)}"
        + (f" ({', '.join(overlap)})" if overlap else "")
        + "."
    )


def gather_figures(
    run: Path | None, sweep: Path | None, models: Path | None, bench: Path | None
) -> Figures:
    """The PR text's sections from the folders given (each a folder or its JSON file), and from
    the committed H200 runs for those not given."""
    return Figures(
        study=_section(run, "report.json", "--run", study_section),
        sweep=_section(sweep, "sweep.json", "--sweep", sweep_section),
        models=_section(models, "models.json", "--models", models_section),
        bench=_section(bench, "window_bench.json", "--bench", bench_section),
    )


def _section(given: Path | None, name: str, option: str, render) -> list[str]:
    if given is None:
        return render(*committed(option))
    return render(read_figures(given, name, option), given, _date(given))


def _date(given: Path) -> str:
    return figure_files.recorded_date(given)
