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
from .rule import API_NAMES, source_text
from .tvm_examples import EXAMPLES
from .tvm_test import shipped_test
from .tvm_tree import BASE_COMMIT, BASE_DATE, BASE_SUBJECT, CUDA_PIPELINE, RULE, TEST

CONSTANTS = ("MAX_WINDOW", "ROW_REUSE", "BLOCK_THREADS", "MULTIPROCESSORS")


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
    every fact read from where it lives, so the text cannot drift from the patch."""
    does, declines = _docstring_parts()
    constants = [f"- {code(name)} = {value}: {note}" for name, value, note in constant_notes()]
    tests = [f"- {code(name)}" for name in _test_names()]
    paths = ", ".join(example.name for example in EXAMPLES if example.scheduled)
    declined = ", ".join(example.name for example in EXAMPLES if not example.scheduled)
    sections = [
        f"# {SUBJECT}",
        "",
        f"Author: {author[0]} <{author[1]}>. Made against apache/tvm main at `{BASE_COMMIT}` "
        f"({BASE_DATE}, {BASE_SUBJECT}); the patch names it (`base-commit:`).",
        "",
        "## Motivation",
        "",
        "apache/tvm#20401: when Relax fuses a 2x2 MaxPool with the Add that consumes it, the "
        "default CUDA schedule (dlight `GeneralReduction`) launches one block of 256 threads per "
        "output, of which 4 (the window) work, with barriers and shuffles to reduce 4 elements, "
        "and the fused graph is slower than the unfused one. The same schedule meets every small "
        "window reduction with an epilogue: padded average pools (the legalized pad + sum + "
        "divide needs no fusion), pool + residual Add, depthwise convolutions with a bias or, "
        "after `DecomposeOpsForInference`, BatchNorm and an activation (ConvNeXt, MobileNet, "
        "EfficientNet); `Reduction` gives 2x2 average pools (DenseNet) one block of 4 threads "
        "per output.",
        "",
        "## What the rule does",
        "",
        does,
        "",
        "## What it declines, and why",
        "",
        declines,
        "",
        "## How it is built",
        "",
        "One file, one class with one `apply`, and only the default path: no option, no "
        "alternative schedule. The analysis runs once, on the schedule it then changes, with "
        "dlight's own helpers (`get_root_block`, `get_sblock_info(...).dom_kind()`, "
        "`collect_vars_used_in_prim_expr`), and declines by explicit checks, as the "
        "neighbouring rules do; the one exception it catches is the `ScheduleError` of a "
        "block that cannot be inlined. The schedule uses schedule primitives only (no "
        "`sch.state.replace`), so its trace records every step and replays. The launch depends "
        "on the target alone, never on the machine that compiles: threads per block are "
        "`BLOCK_THREADS` at most and never more than the target's `max_threads_per_block`, "
        "halved down to its `thread_warp_size` where the outputs are few, and blocks are sized "
        "for `MULTIPROCESSORS`, a constant, since TVM's targets record no multiprocessor count.",
        "",
        "## Its constants",
        "",
        *constants,
        "",
        "## Where it goes",
        "",
        f"`{CUDA_PIPELINE}`: right before `dl.gpu.Reduction()`, after `Matmul` and `GEMV`, so "
        "those keep every kernel they take, and before `Reduction` because `Reduction` takes "
        "2x2 average pools (a `sum` is its `X = X + Y`) and gives them a block of 4 threads per "
        "output. A function the rule declines goes on to `Reduction`, `GeneralReduction` and "
        "`Fallback` as today.",
        "",
        "**`gpu_generic` and `rocm` keep their lists in this patch** (decided, not "
        "overlooked). Both have the list the CUDA backend has (`Matmul`, `GEMV`, `Reduction`, "
        "`GeneralReduction`, `Fallback`) and so the same thread mapping for small windows, and "
        "the rule is written for any GPU target: threads per block from the target's "
        "`max_threads_per_block` and `thread_warp_size` (ROCm's wavefront of 64 gives blocks "
        "of 64 to 256 threads), nothing CUDA-specific in the schedule. But its constants "
        "(`BLOCK_THREADS`, `ROW_WINDOW`, `ROW_REUSE`, `MULTIPROCESSORS`) were measured on an "
        "NVIDIA H200 alone, and `gpu_generic` serves Metal, Vulkan, WebGPU and OpenCL, whose "
        "GPUs differ more; adding the rule there is one line each once measured on such a "
        "GPU, a follow-up this PR leaves to those who can measure it. Adreno's pipeline runs "
        "its own `Pool2D` first, which maps pools in the texture layout (NCHW4c) one output "
        "per thread already.",
        "",
        "**MetaSchedule's fallback list** (`s_tir/meta_schedule/relax_integration.py`, "
        "`compile_relax`) is one list for every GPU kind, so adding the rule there would "
        "enable it on the targets above unmeasured; it keeps its list here. A kernel MetaSchedule "
        "has no record for therefore still gets today's schedule there. The better follow-up "
        "is for `compile_relax` to take the backend's own rule list (`legalize_passes(target)`) "
        "instead of its copy, so that the two cannot drift.",
        "",
        "**dlight's Adreno rule `Pool2D`** (`adreno/pool.py`) is the nearest existing rule: one "
        "output per thread, but found by block name (`pool_max`, `adaptive_pool_sum`) and for "
        "Adreno's NCHW4c layout only; WindowReduction finds the window from the access pattern, "
        "so depthwise convolutions and NHWC pools are taken too.",
        "",
        "## A new rule, or GeneralReduction and Reduction fixed?",
        "",
        "The root cause is the thread mapping `GeneralReduction` and `Reduction` choose for a "
        "reduction of a few elements. Both answers were built: this rule (rule list `fixed`), "
        "and the two rules given a serial path for small reductions in place (rule list "
        "`reduction-fix`). For a new rule: "
        "kernels outside the class keep their schedule bit for bit (the toolkit tests this on "
        "matmuls, convolutions, softmax, global and 1x1 pools), and the rule holds only what "
        "the class needs. For the fix in place: no new rule in the list, and the rules that "
        "took these kernels handle them. The measurement decides, kernel by kernel on the GPU:",
        "",
        *figures.bench,
        "",
        "## Benchmarks",
        "",
        "### The issue's graph",
        "",
        *figures.study,
        "",
        "### Across shapes of the graph",
        "",
        *figures.sweep,
        "",
        "### Real networks",
        "",
        *figures.models,
        "",
        "## Tests",
        "",
        f"`{TEST}`: a Before/After TVMScript pair for each path of the schedule ({paths}), "
        f"checked by one parametrized test; the functions it declines left as they were "
        f"({declined}, a symbolic shape); the issue's Relax graph through the default CUDA "
        "pipeline without a GPU, asserting one thread per output (the rule's place in the list "
        "is what makes it so); and the numerics on a CUDA GPU, parametrized over two "
        "workloads (skipped without one):",
        "",
        *tests,
        "",
        f"They fail without the patch and pass with it against TVM {tvm.__version__} (the "
        "patch's modules registered in place of the installed ones), no test of TVM's dlight "
        "suite or of the relax tests that build for CUDA changes outcome, and every file passes "
        "TVM's ruff configuration (ruff 0.12.3, check and format).",
        "",
        "## Base and testing",
        "",
        f"The patch is made against apache/tvm main at `{BASE_COMMIT}` ({BASE_DATE}), the "
        "newest main available when it was written, applies there with `git am`, and uses "
        "only names that commit has. The rule was developed and measured against TVM "
        f"{tvm.__version__} (built from apache/tvm `7b5acb32b`), whose Python API renamed "
        f"{len(API_NAMES)} of the names it uses since; the patch carries the base commit's "
        "spelling. To rebase onto a main with the newer API, change these lines of "
        f"`{RULE}` (nothing else in the patch depends on them):",
        "",
        *(f"- `{base.strip()}` → `{new.strip()}`" for new, base, _ in API_NAMES),
        "",
        "Figures and checks were made with the auto-tuning comparison toolkit for "
        "apache/tvm#20401 (`tune`).",
    ]
    return "\n".join(sections) + "\n"
