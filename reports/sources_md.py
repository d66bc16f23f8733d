"""Every source's best kernel side by side (`sources.py`) and whether inductor is ahead: in
report.md a row per source, in sweep.md a row per Case."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.report_records import Report

from .cells import MISSING, table, three, us
from .comparisons import ratio_text
from .escape import code, md
from .sources import inductor_ahead, sources

NOT_RUN = "not run"
HEADING = "## Every source's best kernel, side by side"
NOTE = (
    "Alone: the pool's kernel timed alone (`whole`: the whole graph's one kernel, other work); "
    "GPU: the graph's call, calls queued, the figure compared."
)


def sources_section(report: Report) -> list[str]:
    """report.md's section: a row per source, then the sentence on inductor."""
    rows = sources(report)
    times = [r["gpu_us"] for r in rows if r["ran"] and r.get("gpu_us")]
    fastest = min(times, default=None)
    cells = []
    for r in rows:
        figures = [_not_run(r), _not_run(r), MISSING]
        if r["ran"]:
            over = r["gpu_us"] / fastest if fastest and r.get("gpu_us") else None
            figures = [us(r.get("kernel_us")), us(r.get("gpu_us")), three(over)]
        cells.append([r["source"], code(r["arm"]) if r["arm"] else MISSING, _kernel(r), *figures])
    return [
        "",
        HEADING,
        "",
        NOTE,
        "",
        *table(["source", "arm", "kernel", "alone us", "GPU us", "GPU / fastest"], cells),
        "",
        inductor_sentence(inductor_ahead(report, rows), rows, "this Case"),
    ]


def sweep_sources_table(cases: list[dict]) -> list[str]:
    """sweep.md's table: a row per Case, a column per source (the sweep's tuners are every
    Case's), each cell alone us / GPU us; then a sentence per Case where inductor is ahead or
    tied, and one for the Cases where TVM is ahead."""
    cells, sentences, behind = [], [], []
    for c in cases:
        rows, ahead = c["sources"], c["inductor_ahead"]
        ran = [r for r in rows if r["ran"] and r.get("gpu_us")]
        best = min(ran, key=lambda r: r["gpu_us"], default=None)
        cells.append(
            [md(c["case"]), *(_pair(r) for r in rows), code(best["arm"]) if best else MISSING]
        )
        if ahead and ahead["standing"] == "tvm":
            behind.append(f"{md(c['case'])} {_percent(ahead['longer'])}")
        else:
            sentences.append(inductor_sentence(ahead, rows, f"Case {md(c['case'])}"))
    if not any(r["source"] == "inductor" and r["ran"] for c in cases for r in c["sources"]):
        sentences = [f"Inductor was {NOT_RUN} on any Case (it needs PyTorch and a GPU)."]
    if behind:
        sentences.append(
            "TVM's fastest is ahead of inductor by GPU time, calls queued (interval below 1), "
            f"on these Cases, inductor's time longer by: {', '.join(behind)}."
        )
    columns = [_column(r) for r in cases[0]["sources"]]
    return [
        HEADING,
        "",
        NOTE + " Cells: alone us/GPU us.",
        "",
        *table(["case", *columns, "fastest"], cells),
        "",
        *(f"- {sentence}" for sentence in sentences),
    ]


def _kernel(row: dict) -> str:
    return row["kernel"] or "own"  # inductor's kernels are its own


def _column(row: dict) -> str:
    if row["source"] == "inductor":
        return "inductor"
    if row["source"] == "tuned":
        return code(row["arm"]) if row["arm"] else f"tuned ({_kernel(row)})"
    arm = code(row["arm"])
    return arm if row["source"] == row["arm"] else f"{row['source']} {arm}"


def _not_run(row: dict) -> str:
    """A source without figures: not measured, or wrong against the reference (not timed)."""
    return "wrong, not timed" if row.get("wrong") else NOT_RUN


def _pair(row: dict) -> str:
    if not row["ran"]:
        return _not_run(row)
    return f"{us(row.get('kernel_us'))}/{us(row.get('gpu_us'))}"


def inductor_sentence(ahead: dict | None, rows: list[dict], where: str) -> str:
    """Where inductor is faster than every TVM kernel, by how much, with the paired interval;
    else that TVM is ahead, that the two cannot be told apart, or that inductor did not run."""
    if ahead is None:
        if not any(r["source"] == "inductor" and r["ran"] for r in rows):
            return f"Inductor was {NOT_RUN} on {where} (it needs PyTorch and a GPU)."
        return f"Inductor and TVM have no GPU time to compare on {where}."
    tvm, peer, ratio = code(ahead["tvm"]), code(ahead["inductor"]), ahead["ratio"]
    said = f"{ahead['tvm']}/{ahead['inductor']} = {ratio_text(ratio)}" if ratio else "medians"
    by, fastest = _percent(ahead["longer"]), f"TVM's fastest ({tvm})"
    if ahead["standing"] == "tie":
        return f"On {where}, {fastest} and inductor ({peer}) cannot be told apart: {said}."
    if ahead["standing"] == "inductor":
        return (
            f"Inductor ({peer}) is faster than every TVM kernel on {where} by {by} (GPU time, "
            f"calls queued, against {tvm}: {said})."
        )
    return f"TVM is ahead of inductor ({peer}) on {where}: {tvm} by {by} (GPU time: {said})."


def _percent(fraction: float) -> str:
    """`17 %`, or `4.2 %` below ten: how much longer the slower one takes."""
    return f"{fraction * 100:.0f} %" if fraction >= 0.1 else f"{fraction * 100:.1f} %"
