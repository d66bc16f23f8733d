"""`tune upstream --check TVM_TREE`: the patch on a TVM checkout, as a maintainer would try it.

In a scratch clone of the checkout (never the checkout itself), at the base commit the patch
names where the checkout holds it, else at its HEAD (the nearest tree: no reachable apache/tvm
main holds the 0.27 release's commit): the patch is applied with `git am`; every `tvm.*` name
the rule uses (names.py) is looked up in the base's Python tree, the installed TVM's; then
TVM's dlight tests, the relax tests that build for CUDA and the patch's own test run twice
against the installed TVM, without the patch and with the patch's three modules, as `git am`
left them in the clone, registered in place of the installed ones (overlay.py): the rule that
runs is the shipped file itself. check_report.py says what that shows and what it does not.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

import tvm

from tuning.base.errors import UsageError

from .check_report import render_check
from .names import missing_names, used_names
from .patch import PATCH, _identity, format_patch, patched_files
from .tvm_tree import BASE_COMMIT, CUDA_PIPELINE, GPU_INIT, RULE, TEST

DLIGHT_TESTS = "tests/python/s_tir/dlight"
RELAX_TESTS = "tests/python/relax"
# A relax test file that builds for CUDA: it names the target and compiles.
BUILDS_FOR_CUDA = re.compile(r"tvm\.compile\(|relax\.build\(|get_default_pipeline\(")
PROJECT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Outcome:
    """How each test ended, by pytest node id, in one run."""

    by_test: dict[str, str]

    def count(self, prefix: str = "") -> dict[str, int]:
        counts: dict[str, int] = {}
        for test, outcome in self.by_test.items():
            if test.startswith(prefix):
                counts[outcome] = counts.get(outcome, 0) + 1
        return counts


def _run(command: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)


def clone_at_base(tree: Path, scratch: Path) -> tuple[Path, str]:
    """A clone of `tree` under `scratch`, checked out at BASE_COMMIT where `tree` holds it, else
    at its HEAD; and the commit checked out. UsageError where `tree` is not a git checkout of
    TVM."""
    if not (tree / "python" / "tvm").is_dir():
        raise UsageError(f"{tree} is not a TVM source tree (no python/tvm); give a clone")
    if _run(["git", "rev-parse", "--git-dir"], tree).returncode != 0:
        raise UsageError(f"{tree} is not a git checkout; give a clone of apache/tvm")
    clone = scratch / "tvm"
    done = _run(["git", "clone", "-q", "--no-checkout", str(tree.resolve()), str(clone)], scratch)
    if done.returncode != 0:
        raise UsageError(f"cannot clone {tree}: {done.stderr.strip()}")
    if _run(["git", "checkout", "-q", "--detach", BASE_COMMIT], clone).returncode != 0:
        _run(["git", "checkout", "-q", "--detach", "HEAD"], clone)
    return clone, _run(["git", "rev-parse", "HEAD"], clone).stdout.strip()


def apply_patch(clone: Path, patch_text: str) -> str | None:
    """`git am` the patch in `clone`; None where it applies, else git's message."""
    path = clone.parent / PATCH
    path.write_text(patch_text)
    env = _identity(("tune upstream --check", "check@example.invalid"))
    done = _run(["git", "am", "-q", "--keep-non-patch", str(path)], clone, env)
    return None if done.returncode == 0 else (done.stderr or done.stdout).strip()


def rule_names_missing(clone: Path) -> tuple[list[str], list[str]]:
    """(the names the patched rule uses, those the base's Python tree, the installed TVM's,
    lacks)."""
    source = (clone / RULE).read_text()
    names = used_names(source, "tvm.s_tir.dlight.gpu")
    return names, missing_names(names, Path(tvm.__file__).parents[1])


def selected_tests(clone: Path) -> list[str]:
    """TVM's dlight tests, the relax test files that build for CUDA, and the patch's test."""
    relax = [
        str(path.relative_to(clone))
        for path in sorted((clone / RELAX_TESTS).rglob("test_*.py"))
        if '"cuda"' in (text := path.read_text(errors="replace")) and BUILDS_FOR_CUDA.search(text)
    ]
    return [DLIGHT_TESTS, *relax]


def overlay_folder(clone: Path, scratch: Path) -> Path:
    """The patch's three modules as the patched clone has them: the shipped files."""
    folder = scratch / "overlay"
    files = {path: (clone / path).read_text() for path in (RULE, GPU_INIT, CUDA_PIPELINE)}
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder


def run_tests(clone: Path, tests: list[str], overlay: Path | None, report: Path) -> Outcome:
    """pytest on `tests` in `clone` against the installed TVM (with the overlay if given)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT), *_pythonpath()])}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    if overlay is not None:
        env["TVM_OVERLAY"] = str(overlay)
        command += ["-p", "tuning.upstream.overlay"]
    _run([*command, f"--junitxml={report}", *tests], clone, env)
    if not report.is_file():
        raise RuntimeError(f"pytest wrote no report in {clone}")
    return read_junit(report)


def _pythonpath() -> list[str]:
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def read_junit(path: Path) -> Outcome:
    """Each test case's outcome from pytest's JUnit XML."""
    outcomes = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcome = "passed"
        for kind in ("error", "failure", "skipped"):
            if kind in kinds:
                outcome = {"failure": "failed"}.get(kind, kind)
                break
        outcomes[test] = outcome
    return Outcome(outcomes)


def check(tree: Path) -> tuple[str, bool]:
    """The report (markdown) of the patch on `tree`, and whether it holds up: it applies at the
    base commit, the clone has every name the rule uses, no TVM test changes outcome, and the
    patch's tests fail without it and pass with it."""
    files = patched_files()
    patch_text = format_patch(files, ("tune upstream --check", "check@example.invalid"))
    with tempfile.TemporaryDirectory(prefix="tune-upstream-check-") as name:
        scratch = Path(name)
        clone, at = clone_at_base(tree, scratch)
        failure = apply_patch(clone, patch_text)
        if failure is not None:
            lines = [f"# `tune upstream --check {tree}`", "", f"At `{at}`, the patch does not "]
            return "".join(lines) + f"apply:\n\n```\n{failure}\n```\n", False
        names, missing = rule_names_missing(clone)
        tests = selected_tests(clone)
        overlay = overlay_folder(clone, scratch)
        before = run_tests(clone, [*tests, TEST], None, scratch / "before.xml")
        after = run_tests(clone, [*tests, TEST], overlay, scratch / "after.xml")
    return render_check(tree, at, names, missing, tests, before, after)
