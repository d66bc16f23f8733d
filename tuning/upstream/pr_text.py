"""The pull request's description (PR.md): why the rule, what it does and declines (the rule's
own docstring), its constants (their own comments), where it goes and where not, the question
of a new rule against fixing GeneralReduction and Reduction, and the figures of the run folders
given (evidence.py, models_section.py). Nothing here states a number of its own: a section whose
folder was not given names the command that measures it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import tvm

import baselines.window_reduction as rule_module
from reports.escape import code

from .patch import SUBJECT
from .rule import source_text
from .tvm_test import EXAMPLES, TVM_TEST
from .tvm_tree import BASE_COMMIT, BASE_DATE, BASE_SUBJECT, CUDA_PIPELINE, RULE, TEST

CONSTANTS = ("MAX_WINDOW", "ROW_REUSE", "BLOCK_THREADS", "MULTIPROCESSORS")


@dataclass(frozen=True)
class Figures:
    """The sections made from the folders given (None where a folder was not given)."""

    study: list[str] | None = None
    sweep: list[str] | None = None
    models: list[str] | None = None
    bench: list[str] | None = None


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
        comment = []
        while at - len(comment) - 1 >= 0 and lines[at - len(comment) - 1].startswith("#"):
            comment.insert(0, lines[at - len(comment) - 1].lstrip("# "))
        value = getattr(rule_module, name)
        shown = f"{len(value)} architectures" if isinstance(value, dict) else repr(value)
        notes.append((name, shown, " ".join(comment)))
    return notes


def _test_names() -> list[str]:
    """The test functions of the shipped TVM test, in order."""
    tree = ast.parse(TVM_TEST.read_text())
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name[:5] == "test_"]


def _missing(what: str, command: str, option: str) -> list[str]:
    return [
        f"Not given. {what}: {code(command)} on a CUDA GPU writes it; then "
        f"`tune upstream --out DIR {option} FOLDER` puts its figures here."
    ]


def render_pr(figures: Figures, author: tuple[str, str]) -> str:
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
        "alternative schedule. The analysis runs once, on the schedule it then changes, and "
        "every step of it and of the schedule runs inside `apply`'s one `try`: a function the "
        "analysis misjudges goes on to the next rule instead of failing the compile. The "
        "schedule uses schedule primitives only (no `sch.state.replace`), so its trace records "
        "every step and replays. Threads per block are `BLOCK_THREADS` at most and never more "
        "than the target's `max_threads_per_block`, halved down to its `thread_warp_size` "
        "where the outputs are few; nothing assumes one backend.",
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
        "**The other GPU pipelines keep their lists** (`gpu_generic` for Metal, Vulkan, WebGPU "
        "and OpenCL; `rocm`; `adreno`). The rule is written for any GPU target (threads per "
        "block from the target's `max_threads_per_block` and `thread_warp_size`; the "
        "multiprocessor count from the device when it is the target's, else from a table of "
        "CUDA architectures, else blocks shrink only while half a block would idle), but its "
        "schedules were measured on CUDA alone; adding it to another list is one line once it "
        "is measured on that GPU. Adreno's pipeline runs its own `Pool2D` first, which maps "
        "pools in the texture layout (NCHW4c) one output per thread already.",
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
        "`reduction-fix`, the project's `baselines/serial_reduction.py`). For a new rule: "
        "kernels outside the class keep their schedule bit for bit (the project tests this on "
        "matmuls, convolutions, softmax, global and 1x1 pools), and the rule holds only what "
        "the class needs. For the fix in place: no new rule in the list, and the rules that "
        "took these kernels handle them. The measurement decides, kernel by kernel on the GPU:",
        "",
        *(
            figures.bench
            or _missing(
                "The two fixes compared kernel by kernel (window_bench.json)",
                "python3 -m baselines.window_bench OUT",
                "--bench",
            )
        ),
        "",
        "## Benchmarks",
        "",
        "### The issue's graph",
        "",
        *(figures.study or _missing("The study run (report.json)", "tune", "--run")),
        "",
        "### Across shapes of the graph",
        "",
        *(figures.sweep or _missing("The sweep (sweep.json)", "tune sweep", "--sweep")),
        "",
        "### Real networks",
        "",
        *(figures.models or _missing("The models (models.json)", "tune models", "--models")),
        "",
        "## Tests",
        "",
        f"`{TEST}`: a Before/After TVMScript pair for each path of the schedule ({paths}), the "
        f"functions it declines left as they were ({declined}, a symbolic shape), the rule's "
        "place in the CUDA pipeline, and the numerics on a CUDA GPU (skipped without one):",
        "",
        *tests,
        "",
        f"They pass against TVM {tvm.__version__} with `{RULE}` registered as this patch "
        "registers it, and every file passes TVM's ruff configuration (ruff 0.12.3, check and "
        "format).",
        "",
        "## Base and testing",
        "",
        f"The patch applies to `{BASE_COMMIT}` ({BASE_DATE}) and to TVM {tvm.__version__}'s "
        "copies of the two files it edits. The rule was written and tested against "
        f"TVM {tvm.__version__}, whose Python API is newer than that commit's in three names "
        "the rule uses: `tvm.sym` (there `tvm.arith`), `s_tir.SBlock` (there `tirx.SBlock`) and "
        "a buffer region's `.source` (there `.buffer`): it is to be sent against a main that "
        "has them.",
    ]
    return "\n".join(sections) + "\n"
