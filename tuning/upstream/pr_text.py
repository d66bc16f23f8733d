"""The pull request's description (PR.md): why the rule, what it does and declines (the rule's
own docstring), its constants (their own comments), where it goes and where not, the question
of a new rule against fixing GeneralReduction and Reduction, and the figures of the run folders
given, or of the H200 runs committed under reports/h200/ (evidence.py, committed.py,
models_section.py). Nothing here states a number of its own.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import tvm

import baselines.window_reduction as rule_module
from reports.escape import code

from .patch import SUBJECT
from .rule import source_text
from .tvm_examples import EXAMPLES
from .tvm_test import shipped_test
from .tvm_tree import BASE, CUDA_PIPELINE, TEST

CONSTANTS = ("MAX_WINDOW", "ROW_REUSE", "ROW_WINDOW", "BLOCK_THREADS", "MULTIPROCESSORS")


@dataclass(frozen=True)
class Figures:
    """The sections made from the folders given, or from the committed H200 runs."""

    study: list[str]
    sweep: list[str]
    models: list[str]
    bench: list[str]


def _docstring_parts() -> tuple[str, str]:
    """The rule's docstring: (what it does, what it declines and why)."""
    text = rule_module.__doc__ or ""
    paragraphs = text.strip().split("\n\n")
    declines = [p for p in paragraphs if p.startswith("The rule declines")]
    does = [p for p in paragraphs if p not in declines]
    return "\n\n".join(does), "\n\n".join(declines)


def constant_notes() -> list[tuple[str, str, str]]:
    """(name, value, the comment above it in the rule's source) for each of CONSTANTS."""
    lines = source_text().splitlines()
    notes = []
    for name in CONSTANTS:
        (at,) = [i for i, line in enumerate(lines) if line.startswith(f"{name} = ")]
        comment: list[str] = []
        while at - len(comment) - 1 >= 0 and lines[at - len(comment) - 1].startswith("#"):
            comment.insert(0, lines[at - len(comment) - 1].lstrip("# "))
        value = getattr(rule_module, name)
        shown = f"{len(value)} architectures" if isinstance(value, dict) else repr(value)
        notes.append((name, shown, " ".join(comment)))
    return notes


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
    constants = [f"- {code(name)} = {value}: {note}" for name, value, note in constant_notes()]
    tests = ", ".join(code(name) for name in _test_names())
    paths = ", ".join(example.name for example in EXAMPLES if example.scheduled)
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
        "Its constants:",
        "",
        *constants,
        "",
        "## Where it goes",
        "",
        f"`{CUDA_PIPELINE}`: after `Matmul` and `GEMV`, right before `Reduction` (which would "
        "give a 2x2 average pool a block of 4 threads). What it declines goes on to "
        "`Reduction`, `GeneralReduction` and `Fallback` as today. `gpu_generic`, `rocm` and "
        "MetaSchedule's fallback list (`relax_integration.py`) keep their lists: the constants "
        "were measured on an NVIDIA H200 alone, so adding the rule there is a follow-up for "
        "those who can measure those GPUs (the rule itself is target-generic; a Vulkan "
        "structural test is included).",
        "",
        "## A new rule, or GeneralReduction and Reduction fixed in place?",
        "",
        "Both were built and measured: this rule, and the two rules given a serial path for "
        "small reductions, a smaller change. Kernel by kernel the two are close (the lines "
        "under the table count where). The decision is isolation: the in-place fix also "
        "changes reductions that are no sliding window, such as a global average pool, "
        "whose schedules are then new and unmeasured across TVM's targets, while a new rule "
        "leaves every kernel outside the class as it is today (see the line under the table). "
        "`reduction.py`'s TODO to merge the reduction rules can absorb this rule later.",
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
        f"`{TEST}`: {tests}. Before/After pairs for each path ({paths}).",
        "",
        "## Base, and what was run",
        "",
        f"Made against {BASE}, the newest apache/tvm tree whose API the rule could be written "
        "in: the newest main fetchable here (5d4dc87, 2026-08-22) predates that API. The "
        "file in the patch is the file measured and tested. Run: TVM's dlight tests and the "
        "relax tests that build for CUDA (those of the nearest tree, 5d4dc87; the release's "
        f"tests are not in its wheel) against TVM {tvm.__version__}, without and with the "
        "patch: none changes outcome, the new tests fail without the patch and pass with it; "
        "TVM's ruff 0.12.3 passes. Not run: TVM's CI, and any GPU but an H200.",
    ]
    return "\n".join(sections) + "\n"
