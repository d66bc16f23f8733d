"""Every source's best kernel side by side (`sources.py`), and the plain sentence on whether
another compiler (inductor) is ahead of every TVM kernel: report.md's table has a row per source;
sweep.md's one table a row per Case, the sources side by side in its columns."""

from __future__ import annotations

from .cells import MISSING, table, three, us
from .comparisons import ratio_text
from .escape import code, md
from .sources import inductor_ahead, sources

NOT_RUN = "not run"
HEADING = "## Every source's best kernel, side by side"
NOTE = (
    "Alone: the kernel holding the pool timed alone by the tuners' timer (`pool`: the fused pool "
    "kernel; `whole`: the whole graph's one kernel, other work; —: not timed alone); GPU: the "
    "whole graph's call, calls queued, the figure the sources are compared on."
)


def sources_section(report: dict) -> list[str]:
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
    Case's), each cell its kernel alone / the graph's GPU time; then the sentence per Case."""
    columns = [_column(r) for r in cases[0]["sources"]]
    cells, sentences = [], []
    for c in cases:
        rows = c["sources"]
        ran = [r for r in rows if r["ran"] and r.get("gpu_us")]
        best = min(ran, key=lambda r: r["gpu_us"], default=None)
        cells.append(
            [md(c["case"]), *(_pair(r) for r in rows), code(best["arm"]) if best else MISSING]
        )
        sentences.append(inductor_sentence(c["inductor_ahead"], rows, f"Case {md(c['case'])}"))
    header = ["case", *columns, "fastest by GPU"]
    if not any(r["source"] == "inductor" and r["ran"] for c in cases for r in c["sources"]):
        sentences = [f"Inductor was {NOT_RUN} on any Case (it needs PyTorch and a GPU)."]
    return [
        HEADING,
        "",
        NOTE + " Each cell: alone us / GPU us.",
        "",
        *table(header, cells),
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
    return f"{us(row.get('kernel_us'))} / {us(row.get('gpu_us'))}"


def inductor_sentence(ahead: dict | None, rows: list[dict], where: str) -> str:
    """Where inductor is faster than every TVM kernel, by how much, with the paired interval;
    where TVM is ahead, or the two cannot be told apart, that too; where inductor did not run,
    that it did not."""
    if ahead is None:
        if not any(r["source"] == "inductor" and r["ran"] for r in rows):
            return f"Inductor was {NOT_RUN} on {where} (it needs PyTorch and a GPU)."
        return f"Inductor and TVM have no GPU time to compare on {where}."
    tvm, peer, ratio = code(ahead["tvm"]), code(ahead["inductor"]), ahead["ratio"]
    value = ratio["ratio"] if ratio else ahead["tvm_gpu_us"] / ahead["inductor_gpu_us"]
    pair = f"{ahead['tvm']}/{ahead['inductor']}"
    said = f"{pair} = {ratio_text(ratio)}" if ratio else "medians, no paired interval"
    if ratio is not None and not ratio.get("distinguishable"):
        return (
            f"On {where}, TVM's fastest ({tvm}) and inductor ({peer}) cannot be told apart "
            f"({said})."
        )
    if value > 1:
        return (
            f"Inductor ({peer}) is faster than every TVM kernel on {where} by "
            f"{_percent(value - 1)} (GPU time, calls queued, against {tvm}: {said})."
        )
    return (
        f"TVM is ahead of inductor ({peer}) on {where}: {tvm} by {_percent(1 / value - 1)} "
        f"(GPU time, calls queued: {said})."
    )


def _percent(fraction: float) -> str:
    """`17 %`, or `4.2 %` below ten: how much longer the slower one takes."""
    return f"{fraction * 100:.0f} %" if fraction >= 0.1 else f"{fraction * 100:.1f} %"
