"""`tune upstream --check TVM_TREE`: the patch on a TVM checkout, as a maintainer would try it.

In a scratch clone of the checkout, at the patch's base commit where the checkout holds it, else at
its HEAD: the patch is applied with `git am`; every `tvm.*` name the rule uses (tree_names.py) is
looked up in the installed TVM's Python tree; then TVM's dlight tests, the relax tests that build
for CUDA and the patch's own test run twice against the installed TVM, without the patch and with
the patch's three modules as `git am` left them registered in place of the installed ones
(overlay.py), so the rule that runs is the shipped file. check_report.py says what that shows and
does not. The tree's own test code runs with the user's rights (the report and `--help` say so), in
a clone of committed regular files with no remote (clone.py), HOME in the scratch folder, and no
pytest configuration or conftest.py from above the clone.
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

from pool_fusion_tuning.tuning.base.errors import UsageError

from .check_report import render_check
from .clone import clone_at_base, clone_text, left_out, left_out_note, remove_links
from .git import git_environment, run_git
from .patch import PATCH, _identity, format_patch, patched_files
from .tree_names import missing_names, used_names
from .tvm_tree import CUDA_PIPELINE, GPU_INIT, RULE, TEST

DLIGHT_TESTS = "tests/python/s_tir/dlight"
RELAX_TESTS = "tests/python/relax"
# A relax test file that builds for CUDA: it names the target and compiles.
BUILDS_FOR_CUDA = re.compile(r"tvm\.compile\(|relax\.build\(|get_default_pipeline\(")
PROJECT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class SuiteOutcome:
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


def apply_patch(clone: Path, patch_text: str) -> str | None:
    """`git am` the patch in `clone`; None where it applies, else git's message."""
    path = clone.parent / PATCH
    path.write_text(patch_text)
    env = _identity(("tune upstream --check", "check@example.invalid"))
    done = run_git(["am", "-q", "--keep-non-patch", str(path)], clone, env)
    return None if done.returncode == 0 else (done.stderr or done.stdout).strip()


def rule_names_missing(clone: Path) -> tuple[list[str], list[str]]:
    """(the names the patched rule uses, those the installed TVM's Python tree lacks)."""
    source = (clone / RULE).read_text()
    names = used_names(source, "tvm.s_tir.dlight.gpu")
    return names, missing_names(names, Path(tvm.__file__).parents[1])


def selected_tests(clone: Path) -> list[str]:
    """TVM's dlight tests, the relax test files that build for CUDA, and the patch's test."""
    relax = [
        str(path.relative_to(clone))
        for path in sorted((clone / RELAX_TESTS).rglob("test_*.py"))
        if '"cuda"' in (text := clone_text(path)) and BUILDS_FOR_CUDA.search(text)
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


def run_tests(clone: Path, tests: list[str], overlay: Path | None, report: Path) -> SuiteOutcome:
    """pytest on `tests` in `clone` against the installed TVM (with the overlay if given), with
    the clone's own pytest configuration or none, no conftest.py above it, HOME in the scratch
    folder; UsageError with pytest's last lines where it cannot start."""
    home = report.parent / "home"
    home.mkdir(exist_ok=True)
    env = git_environment(scratch=False) | {
        "PYTHONPATH": os.pathsep.join([str(PROJECT), *_pythonpath()]),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):  # configuration from outside the clone
        env.pop(name, None)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    command += ["-c", str(_pytest_config(clone)), f"--rootdir={clone}", f"--confcutdir={clone}"]
    if overlay is not None:
        env["TVM_OVERLAY"] = str(overlay)
        command += ["-p", "pool_fusion_tuning.tuning.upstream.overlay"]
    done = _run([*command, f"--junitxml={report}", *tests], clone, env)
    if not report.is_file():
        said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        last = " | ".join(line.strip() for line in said[-3:])[-400:] or "no output"
        raise UsageError(
            f"pytest could not start in the scratch clone (exit status {done.returncode}): {last}"
        )
    try:
        return read_junit(report)
    except ElementTree.ParseError as error:  # the tree's own code ran and could write it
        raise UsageError(f"pytest's report of the tree's tests is damaged ({error})") from None


# pytest's configuration files, and the section that makes each one pytest's.
PYTEST_CONFIGS = (
    ("pytest.ini", ""),
    (".pytest.ini", ""),
    ("pyproject.toml", "[tool.pytest.ini_options]"),
    ("tox.ini", "[pytest]"),
    ("setup.cfg", "[tool:pytest]"),
)


def _pytest_config(clone: Path) -> Path:
    """The clone's own pytest configuration file, else an empty one beside the clone: given with
    `-c`, pytest then reads none from above the clone (a planted pytest.ini)."""
    for name, section in PYTEST_CONFIGS:
        path = clone / name
        if path.is_file() and section in clone_text(path):
            return path
    empty = clone.parent / "pytest.ini"
    empty.write_text("[pytest]\n")
    return empty


def _pythonpath() -> list[str]:
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def read_junit(path: Path) -> SuiteOutcome:
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
    return SuiteOutcome(outcomes)


def check(tree: Path) -> tuple[str, bool]:
    """The report (markdown) of the patch on `tree`, and whether it holds up: it applies at the
    base, the tree has every name the rule uses, no TVM test changes outcome, and the patch's
    tests fail without it and pass with it."""
    files = patched_files()
    patch_text = format_patch(files, ("tune upstream --check", "check@example.invalid"))
    with tempfile.TemporaryDirectory(prefix="tune-upstream-check-") as name:
        scratch = Path(name)
        clone, at = clone_at_base(tree, scratch)
        note = left_out_note(left_out(tree), remove_links(clone))
        failure = apply_patch(clone, patch_text)
        if failure is not None:
            lines = [f"# `tune upstream --check {tree}`", "", f"At `{at}`, the patch does not "]
            return "".join(lines) + f"apply:\n\n```\n{failure}\n```\n{note}", False
        names, missing = rule_names_missing(clone)
        tests = selected_tests(clone)
        overlay = overlay_folder(clone, scratch)
        before = run_tests(clone, [*tests, TEST], None, scratch / "before.xml")
        after = run_tests(clone, [*tests, TEST], overlay, scratch / "after.xml")
    report, holds = render_check(tree, at, names, missing, tests, before, after)
    return report + note, holds
