"""census.md: a zoo's census (`census.py`), the paragraph first, then one table with a row per
model (a model that could not be analysed is a row with its reason; a column for the short rows
RowReduction takes where a census has any), then what each reason the window rule declines for
means. The flagged kernels one by one are in census.csv."""

from __future__ import annotations

from collections import Counter

from .cells import MISSING, table
from .census_counts import flagged_ms, tally
from .escape import code, md
from .model_md import duration


def _where(device: str | None) -> str:
    """Where the census ran: `tune models --analyze` records its device as none."""
    if not device or device.startswith("none"):
        return "analysed for CUDA without a GPU (nothing timed)"
    return f"on {md(device)}"


def headline(census: dict) -> str:
    """What the census found: the models analysed and not, the kernels, the flagged ones and
    their launches, what the window rule takes and declines (by reason), the default list's
    rules of the flagged kernels, the lists that cannot build a model, the wall time."""
    zoo, rows = census["zoo"], census["rows"]
    analysed = [r for r in rows if "kernels" in r]
    left = sum(1 for r in rows if r.get("left"))
    flagged = [k for r in analysed for k in r["flagged"]]
    count = tally(flagged)
    version = f" {zoo['version']}" if zoo.get("version") else ""
    parts = [
        f"{len(rows)} models of {md(zoo['source'])}{version} ({zoo['listed']} listed by "
        f"{code(zoo['listed_by'])}), {_where(census.get('device'))}: {len(analysed)} analysed, "
        f"{len(rows) - len(analysed) - left} failed (each a row with its reason)"
        + (f", {left} left to analyse (the same command finishes them)." if left else "."),
        f"{sum(r['kernels'] for r in analysed)} kernels; {count['kernels']} flagged with the "
        f"idle-lane pattern in {sum(1 for r in analysed if r['flagged'])} models "
        f"({count['launches']} launches per call of all the models).",
        f"The window rule takes {count['taken']} of them ({count['taken_launches']} launches)"
        + _rows(count)
        + (f" and declines {_counts(count['declined'])}." if count["declined"] else "."),
        f"The default list gives the flagged kernels to {_counts(count['default_rules'])}."
        if flagged
        else "",
    ]
    failing = Counter(f["rules"] for r in analysed for f in r["rule_failures"])
    if failing:
        parts.append(
            "Lists that cannot build a model as TVM ships it (a rule raises on a kernel): "
            + ", ".join(f"{code(rules)} in {n} model(s)" for rules, n in failing.items())
            + "."
        )
    walls = census.get("wall_s") or []
    if walls:
        parts.append(f"Wall time of the {len(walls)} command(s) that ended: {sum(walls):.0f} s.")
    return " ".join(part for part in parts if part)


def _rows(count: dict) -> str:
    """The short rows RowReduction takes under the candidate list (none before 2026-12-01: a
    census from then reads as it did)."""
    if not count["rows"]:
        return ""
    return (
        f", RowReduction (a warp per short softmax or layer-norm row) {count['rows']} "
        f"({count['rows_launches']} launches)"
    )


def _counts(counter: Counter) -> str:
    return ", ".join(f"{md(key)} {n}" for key, n in counter.most_common())


def census_markdown(census: dict) -> str:
    """census.md: the paragraph, the table (a row per model), the reasons stated."""
    lists = census["rule_lists"]
    timed = any(k["kernel_us"] for r in census["rows"] for k in r.get("flagged", []))
    rows = any(tally(r.get("flagged", []))["rows"] for r in census["rows"])
    header = [
        "model",
        "kernels",
        "flagged (launches)",
        "window rule takes (launches)",
        *(["RowReduction takes (launches)"] if rows else []),
        "declines: why",
        "default's rules of the flagged",
        "import + analysis, s",
        *([f"flagged, {rules}" for rules in lists] if timed else []),
    ]
    cells = [_cells(row, lists, timed, rows) for row in census["rows"]]
    given = {k["window_rule"] for r in census["rows"] for k in r.get("flagged", [])}
    reasons = {key: text for key, text in census.get("reasons", {}).items() if key in given}
    return (
        "\n".join(
            [
                f"# Census of the {md(census['zoo']['source'])} zoo (`tune models --zoo`)",
                "",
                headline(census),
                "",
                "## Per model",
                "",
                *table(header, cells),
                "",
                "A flagged kernel has the idle-lane pattern (each model's report.md states the "
                "criterion); the launches are per call of the model. The flagged kernels one by "
                "one, with their rule and launch under each list: census.csv."
                + (
                    " A list's column: launches x each flagged kernel's time alone under it "
                    "(GPU time on a GPU)."
                    if timed
                    else ""
                ),
                *(["", "## Why the window rule declines a flagged kernel", ""] if reasons else []),
                *(f"- {md(reason)}: {md(text)}" for reason, text in reasons.items()),
                "",
                f"Command: {code(census.get('command'))}",
            ]
        )
        + "\n"
    )


def _cells(row: dict, lists: list[str], timed: bool, rows: bool) -> list:
    if "kernels" not in row:
        said = "not analysed yet" if row.get("left") else f"not analysed: {md(row['failure'])}"
        return [md(row["model"]), said, *[MISSING] * (5 + int(rows) + (len(lists) if timed else 0))]
    count = tally(row["flagged"])
    failing = ", ".join(code(f["rules"]) for f in row["rule_failures"])
    return [
        md(row["model"]) + (f" (cannot build: {failing})" if failing else ""),
        row["kernels"],
        f"{count['kernels']} ({count['launches']})",
        f"{count['taken']} ({count['taken_launches']})",
        *([f"{count['rows']} ({count['rows_launches']})"] if rows else []),
        _counts(count["declined"]) or MISSING,
        _counts(count["default_rules"]) or MISSING,
        f"{row['analysis_s']:.0f}",
        *([duration(flagged_ms(row["flagged"], rules)) for rules in lists] if timed else []),
    ]
