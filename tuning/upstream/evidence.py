"""The PR text's figures, read from the folders the project's commands wrote: the study (`tune`:
report.json), the benchmark of the two candidate fixes (window_bench.json), and where given the
sweep (sweep.json) and real networks (models.json, models_section.py). Where --run or --bench is not
given, from the H200 runs committed under reports/h200/ (committed.py).

Each run records the hash of the rule source it measured (`rule_sha256`): a run of another rule
is refused in one line, and one that records none is not cited, its section saying how to measure
again (EVIDENCE_COMMAND, one GPU call)."""

from __future__ import annotations

from pathlib import Path

from pool_fusion_tuning.baselines.rules import rule_hash
from pool_fusion_tuning.reports.comparisons import ratio_text
from pool_fusion_tuning.reports.escape import code, md
from pool_fusion_tuning.tuning.base.errors import UsageError

from . import figure_files
from .committed import committed, committed_environments
from .models_section import models_section
from .pr_text import Figures

# What writes each file the PR text reads.
WRITTEN_BY = {
    "report.json": "`tune report RUN` renders it from a run folder",
    "sweep.json": "`tune sweep` writes it",
    "models.json": "`tune models` writes it",
    "window_bench.json": "`python3 -m pool_fusion_tuning.baselines.window_bench OUT` writes it",
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


NOT_TIMED = "not timed"


def _us(value) -> str:
    return f"{value:.2f} us" if isinstance(value, int | float) else NOT_TIMED


def study_section(report: dict, source: Path, date: str) -> list[str]:
    """ON (the default rules) against `fixed` (with the rule) on the issue's graph."""
    arms = report.get("arms", {})
    if "on" not in arms or "fixed" not in arms:
        return [f"The run in {code(source)} has no `on` and `fixed` arms to compare."]
    environment = report.get("environment", {})
    on, fixed = arms["on"], arms["fixed"]
    rows = [  # a row neither arm timed is left out
        ("fused kernel", _us(on.get("kernel_us")), _us(fixed.get("kernel_us"))),
        ("end to end", _range(on), _range(fixed)),
        ("GPU time, calls queued", _us(on.get("queued_gpu_us")), _us(fixed.get("queued_gpu_us"))),
    ]
    lines = [
        f"{_code(report.get('command'))} on {_md(environment.get('gpu', report.get('device')))}, "
        f"{md(date)}, TVM {_md(environment.get('tvm'))}, "
        f"{_md(report.get('trials'))} processes ({code(source)}); GPU time of calls queued, "
        "without the host's launch that `window_bench`'s figures include:",
        "",
        "| | default rules (`on`) | with WindowReduction (`fixed`) |",
        "|---|---|---|",
        *(f"| {label} | {a} | {b} |" for label, a, b in rows if (a, b) != (NOT_TIMED,) * 2),
    ]
    ratio = report.get("ratios", {}).get("fixed/on")
    if ratio:
        lines += ["", f"End to end, fixed/on = {ratio_text(ratio)}."]
    return lines


def _range(arm: dict) -> str:
    if not all(isinstance(arm.get(k), int | float) for k in ("median_us", "q1_us", "q3_us")):
        return NOT_TIMED
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
    """The two candidate fixes kernel by kernel (median at kernel level, the rule where not the
    list's own), the kernels outside the class that the in-place fix changes, and the kernels
    wrong under every list (TVM's, not a rule's)."""
    rows = bench.get("kernels", [])
    if not rows:
        return [f"{code(source)} holds no kernel."]
    environment = bench.get("environment", {})
    timed = "median_us" in rows[0]["lists"].get("default", {})
    lines = [
        f"`window_bench` on {_md(environment.get('gpu', 'the CPU'))}, "
        f"{md(str(environment.get('date', date))[:10])}, TVM {_md(environment.get('tvm'))} "
        f"({code(source)}): "
        + ("kernel-level medians in us; the rule that took a kernel" if timed else "the rule")
        + " where not the column's; WRONG where the result is.",
        "",
        "| kernel | default | WindowReduction | in place |",
        "|---|---|---|---|",
        *(
            f"| {md(row['kernel'])} | "
            + " | ".join(_cell(row["lists"].get(name, {}), name, timed) for name in LISTS)
            + " |"
            for row in rows
        ),
    ]
    notes = [line for line in (_verdict(rows), _outside(rows), _wrong(rows)) if line]
    return lines + [part for note in notes for part in ("", note)]


LISTS = ("default", "fixed", "reduction-fix")
# The rules a column names only where another rule took the kernel.
OWN_RULES = {
    "fixed": ("WindowReduction",),
    "reduction-fix": ("SerialReduction", "SerialGeneralReduction"),
}


def _cell(entry: dict, name: str, timed: bool) -> str:
    rule = str(entry.get("rule"))
    shown = "" if timed and rule in OWN_RULES.get(name, ()) else rule
    text = " ".join(part for part in (f"{entry['median_us']:.2f}" if timed else "", shown) if part)
    return text + ("" if entry.get("correct", True) else " WRONG")


def _outside(rows: list[dict]) -> str | None:
    """Kernels the new rule leaves to the default rule that the in-place fix reschedules."""
    changed = [
        f"{row['kernel']} ({lists['default'].get('rule')} → {lists['reduction-fix'].get('rule')}"
        + (
            f", {lists['default']['median_us']:.2f} → {lists['reduction-fix']['median_us']:.2f} us"
            if "median_us" in lists["default"]
            else ""
        )
        + ")"
        for row in rows
        if (lists := row["lists"]).get("fixed", {}).get("rule") == lists["default"].get("rule")
        and lists.get("reduction-fix", {}).get("rule") != lists["default"].get("rule")
    ]
    if not changed:
        return None
    return (
        "Kernels outside the class: WindowReduction leaves them to the default rules, the "
        f"in-place fix reschedules them: {', '.join(changed)}."
    )


def _wrong(rows: list[dict]) -> str | None:
    """Kernels wrong under every list: TVM's result, whichever rule schedules them."""
    wrong = [row for row in rows if not any(e.get("correct", True) for e in row["lists"].values())]
    if not wrong:
        return None
    return " ".join(
        f"{row['kernel']} is WRONG under every list, the default one too ({row.get('where')}): "
        "TVM's fault outside the rules, for a separate issue."
        for row in wrong
    )


def _verdict(rows: list[dict]) -> str | None:
    """How often the new rule's median is below the in-place fix's, and where their interquartile
    ranges overlap (cannot be told apart)."""
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
        f"kernels timed under both; their interquartile ranges overlap on {len(overlap)}."
    )


# The one GPU call that measures everything PR.md cites by default; `tune upstream --out DIR --run
# OUT/run --bench OUT/window` then writes the PR text from it.
EVIDENCE_COMMAND = (
    "python3 -m pool_fusion_tuning --budget 0 --arms on,fixed --processes 3 --out $OUT/run && "
    "python3 -m pool_fusion_tuning.baselines.window_bench $OUT/window"
)


def gather_figures(
    run: Path | None, sweep: Path | None, models: Path | None, bench: Path | None
) -> Figures:
    """The PR text's sections from the folders given (each a folder or its JSON file); study and
    benchmark from the committed H200 runs where not given, sweep and models only where given."""
    return Figures(
        study=_section(run, "report.json", "--run", study_section, fallback=True),
        sweep=_section(sweep, "sweep.json", "--sweep", sweep_section, fallback=False),
        models=_section(models, "models.json", "--models", models_section, fallback=False),
        bench=_section(bench, "window_bench.json", "--bench", bench_section, fallback=True),
    )


def _section(given: Path | None, name: str, option: str, render, fallback: bool) -> list[str]:
    if given is None and not fallback:
        return []
    if given is None:
        data, source, date = committed(option)
        environments = committed_environments(option)
    else:
        data, source, date = read_figures(given, name, option), given, _date(given)
        environments = figure_files.recorded_environments(given)
    rendered = render(data, source, date)  # a damaged file is refused whether cited or not
    stamp = _stamp(data, environments, source, option)
    if stamp is None:
        return [
            f"Not cited: {code(source)} records no hash of the rule's source (it was measured "
            f"before runs recorded one). Measure again with `{EVIDENCE_COMMAND}`."
        ]
    return [*rendered, "", f"Rule source SHA-256 `{stamp}`, the shipped file's."]


def _stamp(data: dict, environments: list, source: Path, option: str) -> str | None:
    """The shipped rule's hash where every stamp the run records is it, None where it records
    none; refuses (one line) a run of another rule."""
    recorded = [data.get("environment"), *environments]
    found = [e.get("rule_sha256") for e in recorded if isinstance(e, dict)]
    stamps = {s for s in found if isinstance(s, str) and s}
    if not stamps:
        return None
    if stamps != {rule_hash()}:
        other = sorted(stamps - {rule_hash()})[0]
        raise UsageError(
            f"{source} measured another rule (source SHA-256 {other}, the shipped rule's is "
            f"{rule_hash()}); measure again with the shipped rule and give {option} that folder"
        )
    return rule_hash()


def _date(given: Path) -> str:
    return figure_files.recorded_date(given)
