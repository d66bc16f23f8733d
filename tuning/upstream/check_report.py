"""The report of `tune upstream --check` (check.py): what was applied where, the names looked up,
and the tests' outcomes without and with the patch, changed ones first."""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

import tvm

from .rule import API_NAMES, installed_api
from .tvm_tree import BASE_COMMIT, TEST


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none"


def render_check(
    tree: Path, at: str, names: list[str], missing: list[str], tests: list[str], before, after
) -> tuple[str, bool]:
    """The markdown report, and whether the patch holds up on the tree (checked out `at`)."""
    own = TEST.removesuffix(".py").replace("/", ".")
    theirs = sorted(t for t in {*before.by_test, *after.by_test} if not t.startswith(own))
    changed = [t for t in theirs if before.by_test.get(t) != after.by_test.get(t)]
    ours = sorted(t for t in {*before.by_test, *after.by_test} if t.startswith(own))
    ran = [t for t in ours if after.by_test.get(t) != "skipped"]
    ours_hold = bool(ran) and all(
        before.by_test.get(t) in ("failed", "error") and after.by_test.get(t) == "passed"
        for t in ran
    )
    holds = not missing and not changed and ours_hold
    api = installed_api()
    lines = [
        f"# `tune upstream --check {tree}`",
        "",
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d}, TVM {tvm.__version__} installed, "
        f"Python {platform.python_version()}. The patch was applied with `git am` in a scratch "
        f"clone of the tree at `{at}` "
        + (
            "(the base commit it names): it applies."
            if at == BASE_COMMIT
            else f"(its HEAD: the tree does not hold the base commit `{BASE_COMMIT}`): it applies."
        ),
        "",
        "## Names the rule uses, looked up in the tree",
        "",
        f"{len(names)} names: " + ", ".join(f"`{n}`" for n in names) + ".",
        "",
        f"Missing in the tree: {', '.join(f'`{n}`' for n in missing) or 'none'}.",
        "",
    ]
    if api != "base":
        swapped = "; ".join(f"`{a.strip()}` for `{b.strip()}`" for a, b, _ in API_NAMES)
        lines += [
            f"The installed TVM spells {len(API_NAMES)} of them otherwise, so the tests ran the "
            f"rule with {swapped}; these lines are the only difference from the patch's file.",
            "",
        ]
    lines += [
        "## Tests, against the installed TVM, without and with the patch",
        "",
        f"`{tests[0]}/` and {len(tests) - 1} relax test files that build for CUDA "
        f"({', '.join(Path(t).name for t in tests[1:])}), and the patch's `{TEST}`.",
        "",
        "| tests | without the patch | with the patch |",
        "|---|---|---|",
        f"| TVM's ({len(theirs)}) | {_counts(_only(before, theirs))} "
        f"| {_counts(_only(after, theirs))} |",
        f"| the patch's ({len(ours)}) | {_counts(_only(before, ours))} "
        f"| {_counts(_only(after, ours))} |",
        "",
        f"TVM's tests whose outcome changed: {len(changed) or 'none'}.",
        "",
    ]
    if changed:
        lines += ["| test | without | with |", "|---|---|---|"]
        lines += [f"| `{t}` | {before.by_test.get(t)} | {after.by_test.get(t)} |" for t in changed]
        lines.append("")
    lines += ["The patch's tests:", "", "| test | without | with |", "|---|---|---|"]
    lines += [
        f"| `{t.rpartition('::')[2]}` | {before.by_test.get(t)} | {after.by_test.get(t)} |"
        for t in ours
    ]
    verdict = (
        "holds: every name is there, no TVM test changed outcome, and the patch's tests that "
        "ran fail without it and pass with it"
        if holds
        else "does not hold (above)"
    )
    lines += ["", f"The patch {verdict}."]
    return "\n".join(lines) + "\n", holds


def _only(outcome, tests: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for test in tests:
        kind = outcome.by_test.get(test, "not run")
        counts[kind] = counts.get(kind, 0) + 1
    return counts
