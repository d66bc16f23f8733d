"""The pull request's description (PR.md): why the rule, what it does and declines (the rule's
own docstring), its constants (their own comments), where it goes and where not, the question
of a new rule against fixing GeneralReduction and Reduction, and the figures of the run folders
given, or of the H200 runs committed under reports/h200/ (evidence.py, committed.py,
models_section.py). Nothing here states a number of its own.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

import tvm

from pool_fusion_tuning.baselines import window_reduction as rule_module
from pool_fusion_tuning.reports.escape import code

from .patch import SUBJECT, patched_files
from .pr_repro import REPRO, SCRIPT, launch_output
from .rule import source_text
from .tvm_test import PIPELINE_TEST_NAME, shipped_test
from .tvm_tree import BASE, CUDA_PIPELINE, PIPELINE_TEST, TEST

CONSTANTS = ("MAX_WINDOW", "ROW_REUSE", "ROW_WINDOW", "BLOCK_THREADS", "MULTIPROCESSORS")


@dataclass(frozen=True)
class Figures:
    """The sections made from the folders given, or from the committed H200 runs."""

    study: list[str]
    sweep: list[str]
    models: list[str]
    bench: list[str]


def _docstring_parts() -> tuple[str, str]:
    """The rule's docstring: (what it does, what it declines and why). What it does is the
    paragraph that says how it schedules; the first (the PR's title in other words) and the one
    on sizing the launch are left to the diff, for PR.md's 8 KB."""
    text = rule_module.__doc__ or ""
    paragraphs = text.strip().split("\n\n")
    declines = [p for p in paragraphs if p.startswith("The rule declines")]
    does = [p for p in paragraphs if "Here each thread computes" in p]
    return "\n\n".join(does), "\n\n".join(declines)


def constant_values() -> list[tuple[str, str]]:
    """(name, value) for each of CONSTANTS, the values as the rule's source has them (its
    comments, the why of each, are in the diff)."""
    lines = source_text().splitlines()
    values = []
    for name in CONSTANTS:
        (line,) = [line for line in lines if line.startswith(f"{name} = ")]
        values.append((name, line.removeprefix(f"{name} = ").split("  #")[0]))
    return values


@functools.cache
def repro_outputs() -> tuple[str, str]:
    """What the repro script prints here (no GPU: the launch alone) on the base and with the
    patch; once a process, since each builds the issue's graph."""
    return launch_output(None), launch_output(patched_files())


def _test_names() -> list[str]:
    """The test functions of the shipped TVM test, in order."""
    tree = ast.parse(shipped_test())
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name[:5] == "test_"]


def render_pr(figures: Figures, author: tuple[str, str]) -> str:
    """PR.md, section by section: what the rule does and declines from its own docstring, its
    constants with their comments, the tests from the shipped test file, and the figures given;
    every fact read from where it lives, so the text cannot drift from the patch. `author` is
    the patch's (its `From:`); the text does not repeat it."""
    del author
    does, declines = _docstring_parts()
    constants = ", ".join(f"{code(name)} = {value}" for name, value in constant_values())
    tests = ", ".join(code(name) for name in _test_names())
    base, patched = repro_outputs()
    sections = [
        f"# {SUBJECT}",
        "",
        "Fixes #20401.",
        "",
        "## What the rule does",
        "",
        does,
        "",
        declines,
        "",
        f"Its constants, each with its reason in a comment: {constants}.",
        "",
        "## Where it goes",
        "",
        f"`{CUDA_PIPELINE}`: after `Matmul` and `GEMV`, right before `Reduction`; what it "
        "declines goes on as today. `gpu_generic`, `rocm` and MetaSchedule's fallback list "
        "(`relax_integration.py`) keep theirs: the constants were measured on an H200 alone, "
        "so adding it there is a follow-up (a Vulkan structural test is included).",
        "",
        "## Reproduce",
        "",
        f"`{REPRO}` (TVM alone; on a CUDA GPU it also times):",
        "",
        "```python",
        SCRIPT.rstrip("\n"),
        "```",
        "",
        f"On a CPU, on TVM {tvm.__version__} and then with this patch:",
        "",
        "```",
        f"$ python {REPRO}",
        base.rstrip("\n"),
        f"$ python {REPRO}  # with this patch",
        patched.rstrip("\n"),
        "```",
        "",
        "## A new rule, or GeneralReduction and Reduction fixed in place?",
        "",
        "Both were built and measured: this rule, and the two given a serial path for small "
        "reductions (a smaller change). Kernel by kernel they are close (counted under the "
        "table). The decision is isolation: the in-place fix also reschedules kernels outside "
        "the class (under the table), unmeasured across TVM's targets; a new rule leaves them "
        "as they are. `reduction.py`'s "
        "TODO to merge the reduction rules can absorb it later.",
        "",
        *figures.bench,
        "",
        "## The issue's graph",
        "",
        *figures.study,
        *(["", "## Across shapes of the graph", "", *figures.sweep] if figures.sweep else []),
        *(["", "## Real networks", "", *figures.models] if figures.models else []),
        "",
        "## Tests",
        "",
        f"`{TEST}`: {tests}. `{PIPELINE_TEST}`: `{PIPELINE_TEST_NAME}`.",
        "",
        "## Base, and what was run",
        "",
        f"Made against {BASE}; the newest main fetchable here (5d4dc87, 2026-08-22) predates "
        "its API. The file in the patch is the file measured and tested. Run on TVM "
        f"{tvm.__version__} without and with the patch: TVM's dlight tests and the relax tests "
        "that build for CUDA (5d4dc87's: the wheel has none); none changes outcome, the new "
        "tests fail without the patch and pass with it; TVM's ruff 0.12.3 passes. Not run: "
        "TVM's CI, and any GPU but an H200.",
    ]
    return "\n".join(sections) + "\n"
