"""The report of `tune upstream --check` (check.py): what was applied where, the names looked up,
and the tests' outcomes without and with the patch, changed ones first."""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

import tvm

from .tvm_test import PIPELINE_TEST_NAME
from .tvm_tree import BASE, BASE_COMMIT, PIPELINE_TEST, TEST, installed_commit


def _module(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _patch_s(test: str) -> bool:
    """Whether a test (by JUnit id) is one the patch adds: its test file's, or the issue's
    graph it adds to relax's pipeline tests."""
    return test.startswith(f"{_module(TEST)}::") or test == (
        f"{_module(PIPELINE_TEST)}::{PIPELINE_TEST_NAME}"
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none"


def render_check(
    tree: Path, at: str, names: list[str], missing: list[str], tests: list[str], before, after
) -> tuple[str, bool]:
    """The markdown report, and whether the patch holds up on the tree (checked out `at`)."""
    theirs = sorted(t for t in {*before.by_test, *after.by_test} if not _patch_s(t))
    changed = [t for t in theirs if before.by_test.get(t) != after.by_test.get(t)]
    ours = sorted(t for t in {*before.by_test, *after.by_test} if _patch_s(t))
    ran = [t for t in ours if after.by_test.get(t) != "skipped"]
    ours_hold = bool(ran) and all(
        before.by_test.get(t) in ("failed", "error") and after.by_test.get(t) == "passed"
        for t in ran
    )
    holds = not missing and not changed and ours_hold
    at_base = at.startswith(BASE_COMMIT)
    same = installed_commit() == BASE_COMMIT
    lines = [
        f"# `tune upstream --check {tree}`",
        "",
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d}, TVM {tvm.__version__} installed "
        f"(built from `{installed_commit() or 'a commit it does not record'}`), Python "
        f"{platform.python_version()}. The patch is made against {BASE}. It was applied with "
        f"`git am` in a scratch clone of the tree at `{at}` "
        + ("(the base): it applies." if at_base else "(its HEAD, the nearest tree): it applies."),
        "",
        "## Names the rule uses, looked up in the base's Python tree (the installed TVM's)",
        "",
        f"{len(names)} names: " + ", ".join(f"`{n}`" for n in names) + ".",
        "",
        f"Missing: {', '.join(f'`{n}`' for n in missing) or 'none'}.",
        "",
    ]
    lines += [
        "## Tests, against the installed TVM, without and with the patch",
        "",
        f"`{tests[0]}/` and {len(tests) - 1} relax test files that build for CUDA "
        f"({', '.join(Path(t).name for t in tests[1:])}), and the patch's `{TEST}` and "
        f"`{PIPELINE_TEST_NAME}` (in `{PIPELINE_TEST}`).",
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
    lines += ["", f"The patch {verdict}.", "", *_scope(at_base, same)]
    return "\n".join(lines) + "\n", holds


def _only(outcome, tests: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for test in tests:
        kind = outcome.by_test.get(test, "not run")
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _scope(at_base: bool, same: bool) -> list[str]:
    """What the run shows, and what it does not."""
    shows = (
        "What this shows: the shipped rule file itself (the clone's, as `git am` left it) "
        "imports and runs in the installed TVM's API"
        + (", which is the base's," if same else " (not the base's: see above),")
        + " TVM's tests above keep their outcome with it, and the patch's own tests fail "
        "without it and pass with it."
    )
    tests_from = (
        "the base's"
        if at_base
        else "the nearest tree's, not the base's (the release's tests are not in its wheel)"
    )
    does_not = (
        f"What it does not show: the tests are {tests_from}, run against the installed TVM's "
        "compiled library; tests that need a GPU skip on a machine without one; TVM's own CI "
        "(its GPU runners, other backends) is upstream's to run."
    )
    return [shows, "", does_not]
