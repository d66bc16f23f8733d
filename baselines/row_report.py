"""row_bench.md from row_bench.json (`row_bench.py`): the times of each short-row kernel under
the default rules, the row rule's lane counts and PyTorch, their ratios, the launches, and the
decision the figures support. A function of the JSON alone, so a committed run renders again to
the same text (`python3 -m pool_fusion_tuning.tuning.row_bench OUT --render`).

The decision: the row rule (a warp per row, `warp`) is taken where it beats the default on every
kernel, each interquartile range apart (its third quartile below the default's first), and is
right everywhere; otherwise the report names the kernels where it does not. Only GPU figures
decide; a CPU run (llvm, the test mode) states that it decides nothing.
"""

from __future__ import annotations

from .peers import PEERS

# The command before the bench moved to tuning/ (a run's JSON from before names none).
OLD_COMMAND = "python3 -m baselines.row_bench"

TVM = ("default", "warp", "warp-regs", "lanes16", "lanes8")
WARP = ("warp", "warp-regs")  # the row rule as it would ship: a warp per row
TVM_LABELS = {
    "default": "default",
    "warp": "warp per row (32 lanes)",
    "warp-regs": "warp, row in registers",
    "lanes16": "16 lanes",
    "lanes8": "8 lanes",
}


def labels() -> dict[str, str]:
    """Each column's label: the TVM schedules', then the peers' (`peers.py`), in that order."""
    return {**TVM_LABELS, **{name: peer.label for name, peer in PEERS.items()}}


def row_bench_markdown(result: dict) -> str:
    """The whole report."""
    environment = result["environment"]
    gpu = environment["run_on"] == "cuda"
    names = [n for n in labels() if n in result["kernels"][0]["schedules"]]
    lines = [
        f"# Short rows: TVM's default rules, a warp or fewer threads per row, PyTorch "
        f"({environment['run_on']})",
        "",
        f"`{environment.get('command', OLD_COMMAND)}`, {environment['date']}, "
        f"TVM {environment['tvm']}, "
        f"PyTorch {environment.get('torch')}"
        + (f", {environment['gpu']}" if gpu else ", on the CPU")
        + ". Each kernel and PyTorch peer checked against NumPy (float64, tolerance "
        f"{result['tolerance']:g} of the largest magnitude) before it is timed; a cell gives "
        "the median time in us and its interquartile range, WRONG where the check failed, "
        "or why there is no figure. The inputs stay in L2 between calls, for TVM and PyTorch "
        "alike"
        + (
            f"; the run took {result['wall_s']:.0f} s, builds included."
            if "wall_s" in result
            else "."
        ),
        "",
        *_times(result, names),
        "",
        "## Launches (blocks x threads) and rules",
        "",
        *_launches(result),
        "",
        "## Decision",
        "",
        decision(result),
        "",
        *[f"- {row['kernel']}: {row['where']}" for row in result["kernels"]],
    ]
    return "\n".join(lines) + "\n"


def _times(result: dict, names: list[str]) -> list[str]:
    ratios = ["warp / default", "best row rule / default"]
    peers = [n for n in names if n in PEERS]
    ratios += [f"warp / {PEERS[peer].label}" for peer in peers]
    header = ["kernel", "rows x length", *[labels()[n] for n in names], *ratios]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for row in result["kernels"]:
        cells = [_time(row["schedules"][name]) for name in names]
        figures = {n: _median(row["schedules"][n]) for n in names}
        best = _best_lanes(row)
        values = [
            _ratio(figures["warp"], figures["default"]),
            f"{_ratio(figures.get(best), figures['default'])} ({best})" if best else "—",
            *[_ratio(figures["warp"], figures[peer]) for peer in peers],
        ]
        shape = f"{row['rows']} x {row['length']}"
        lines.append(f"| {row['kernel']} | {shape} | " + " | ".join(cells + values) + " |")
    return lines


def _time(entry: dict) -> str:
    if "failed" in entry:
        return f"no figure: {entry['failed']}"
    if not entry["correct"]:
        return "WRONG"
    return f"{entry['median_us']:.2f} ({entry['q1_us']:.2f}-{entry['q3_us']:.2f})"


def _median(entry: dict) -> float | None:
    return entry.get("median_us") if entry.get("correct") else None


def _ratio(value: float | None, base: float | None) -> str:
    return f"x{value / base:.2f}" if value is not None and base else "—"


def _best_lanes(row: dict) -> str | None:
    timed = [(row["schedules"][n]["median_us"], n) for n in TVM[1:] if _median(row["schedules"][n])]
    return min(timed)[1] if timed else None


def _launches(result: dict) -> list[str]:
    lines = [
        "| kernel | " + " | ".join(TVM_LABELS[n] for n in TVM) + " |",
        "|---" * (len(TVM) + 1) + "|",
    ]
    for row in result["kernels"]:
        cells = [
            f"{e['rule']} {e['grid']}x{e['block']}" for e in (row["schedules"][n] for n in TVM)
        ]
        lines.append(f"| {row['kernel']} | " + " | ".join(cells) + " |")
    return lines


def beats(entry: dict, default: dict) -> bool:
    """Whether a schedule is right and faster than the default, interquartile ranges apart."""
    return bool(
        entry.get("correct")
        and default.get("correct")
        and "q3_us" in entry
        and "q1_us" in default
        and entry["q3_us"] < default["q1_us"]
    )


def decision(result: dict) -> str:
    """`taken` where a warp per row (plain, or with the row in registers) beats the default on
    every kernel, with how it stands against PyTorch; otherwise why not, naming the kernels."""
    if result["environment"]["run_on"] != "cuda":
        return (
            "None from this run: it ran on the CPU (llvm, the test mode), where every schedule "
            "is built and checked and the times are the CPU's; only GPU figures decide."
        )
    rows = result["kernels"]
    losing = {
        name: [
            r["kernel"] for r in rows if not beats(r["schedules"][name], r["schedules"]["default"])
        ]
        for name in WARP
    }
    taken = [name for name in WARP if not losing[name]]
    if not taken:
        return (
            "**not taken**: a warp per row does not beat the default on every kernel: "
            + "; ".join(
                f"{TVM_LABELS[n]} on {len(losing[n])} of {len(rows)} ({', '.join(losing[n])})"
                for n in WARP
            )
            + " (slower, not interquartile ranges apart, or wrong)."
        )
    best = min(taken, key=lambda name: sum(r["schedules"][name]["median_us"] for r in rows))
    verb = "beats" if len(taken) == 1 else "beat"
    return (
        f"**taken**: {' and '.join(TVM_LABELS[n] for n in taken)} {verb} "
        f"the default on all {len(rows)} kernels (interquartile ranges apart), every result "
        f"right; the faster in sum: {TVM_LABELS[best]}, {_span(rows, best, 'default')} of the "
        "default's time"
        + "".join(
            f", {_span(rows, best, peer)} of {PEERS[peer].label}'s"
            for peer in PEERS
            if all(_median(r["schedules"].get(peer, {})) for r in rows)
        )
        + "."
    )


def _span(rows: list[dict], name: str, base: str) -> str:
    """The least and largest ratio of `name`'s median to `base`'s over the kernels."""
    ratios = [r["schedules"][name]["median_us"] / r["schedules"][base]["median_us"] for r in rows]
    return f"x{min(ratios):.2f} to x{max(ratios):.2f}"
