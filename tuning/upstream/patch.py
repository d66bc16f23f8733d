"""The patch to apache/tvm: the files it adds and edits, and one commit as `git format-patch` writes
it, made against the base's files (tvm_tree.py).

It adds the rule (rule.py), its test (tvm_test.py) and the issue's graph to relax's pipeline tests,
exports the rule from dlight's `gpu` package, lists it in dlight's rule catalog, and puts it right
before `Reduction` in the CUDA backend's rule list (Reduction would give a 2x2 average pool one
block of 4 threads per output). Other pipelines keep theirs (pr_text.py says why).

The output depends only on its inputs (author, files): no date or local commit hash, so it is
reproducible byte for byte.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from pool_fusion_tuning.baselines.window_reduction import MAX_WINDOW

from .git import run_git
from .rule import rule_source
from .tvm_test import PIPELINE_ADDITION, shipped_test
from .tvm_tree import (
    BASE,
    BASE_COMMIT,
    CUDA_PIPELINE,
    DOCS,
    EDITED,
    GPU_INIT,
    PIPELINE_TEST,
    RULE,
    TEST,
    base_text,
)

SUBJECT = "[Dlight] Add WindowReduction, a GPU rule for small-window reductions such as pooling"
BODY = f"""\
A reduction over a small constant window followed by elementwise work
(a MaxPool and the Add after it, an average pool with its padding, a
depthwise convolution with its bias, BatchNorm and activation) falls to
GeneralReduction, which gives each output a block of 256 threads and
reduces its few elements across them, or to Reduction, which gives a
2x2 average pool a block of 4 threads per output (apache/tvm#20401).

WindowReduction gives each thread one output (two rows of outputs
where windows overlap much), reduces the window in registers, unrolled,
loads its rows as vectors where they are aligned, and applies the
elementwise epilogue in place. Blocks are sized from the target's
thread limit and warp size alone, so that small outputs still fill a
large GPU and the same target compiles the same code on any host. It
takes windows of 2 to {MAX_WINDOW} elements in any rank, NCHW-like
or NHWC, with constant shapes; anything else is left to the rules after
it. The CUDA backend tries it right before Reduction.
"""
PATCH = "window_reduction.patch"
# The rule's row in dlight's rule catalog (the tutorial's list-table), after GeneralReduction.
CATALOG = (
    "#    * - ``WindowReduction``",
    f"#      - One reduction over a small constant window (2 to {MAX_WINDOW} elements) sliding",
    "#        along the outputs, then elementwise work",
    "#      - pooling, depthwise convolution, with the epilogue fused after them",
)


def _insert(text: str, anchor: str, line: str, before: bool) -> str:
    """`line` next to the one line equal to `anchor`; refuses a file whose anchor moved."""
    lines = text.splitlines(keepends=True)
    found = [i for i, existing in enumerate(lines) if existing.rstrip("\n") == anchor]
    if len(found) != 1:
        raise RuntimeError(
            f"the base file has {len(found)} lines {anchor.strip()!r} where the patch expects one"
        )
    at = found[0] if before else found[0] + 1
    return "".join(lines[:at] + [line + "\n"] + lines[at:])


def patched_files() -> dict[str, str]:
    """TVM path -> the file's text after the patch: the two edited files and the two added."""
    return {
        RULE: rule_source(),
        GPU_INIT: _insert(
            base_text(GPU_INIT),
            "from .general_reduction import GeneralReduction",
            "from .window_reduction import WindowReduction",
            before=False,
        ),
        CUDA_PIPELINE: _insert(
            base_text(CUDA_PIPELINE),
            " " * 12 + "dl.gpu.Reduction(),",
            " " * 12 + "dl.gpu.WindowReduction(),",
            before=True,
        ),
        DOCS: _insert(
            base_text(DOCS),
            "#      - softmax, layer norm, RMS norm",
            "\n".join(CATALOG),
            before=False,
        ),
        TEST: shipped_test(),
        PIPELINE_TEST: _insert(
            base_text(PIPELINE_TEST).replace(
                "from tvm import relax\n", "from tvm import relax, tirx\n"
            ),
            'if __name__ == "__main__":',
            PIPELINE_ADDITION,
            before=True,
        ),
    }


def _git(repo: Path, *args: str, env: dict) -> str:
    done = run_git(["-C", str(repo), "-c", "commit.gpgsign=false", *args], repo, env)
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def _identity(author: tuple[str, str]) -> dict:
    """git's variables for a commit by `author` (name, email); `run_git` leaves the user's and
    system's configuration out, so they cannot change the patch's form."""
    env: dict[str, str] = {}
    for role in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{role}_NAME"], env[f"GIT_{role}_EMAIL"] = author
    return env


def format_patch(files: dict[str, str], author: tuple[str, str]) -> str:
    """One commit by `author` on the base's files as `git format-patch` writes it, the base named
    after `---` (which `git am` ignores), no date (`git am` stamps its own). No `base-commit:`
    trailer: the release names its commit abbreviated only."""
    env = _identity(author)
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch)
        _git(repo, "init", "-q", env=env)
        _write_tree(repo, {path: base_text(path) for path in EDITED})
        _git(repo, "add", "-A", env=env)
        _git(repo, "commit", "-q", "-m", f"apache/tvm {BASE_COMMIT}", env=env)
        _write_tree(repo, files)
        _git(repo, "add", "-A", env=env)
        _git(repo, "commit", "-q", "-m", f"{SUBJECT}\n\n{BODY}", env=env)
        text = _git(
            repo, "format-patch", "-1", "--stdout", "--zero-commit", "--no-signature", env=env
        )
    header, separator, rest = text.partition("\n---\n")
    header = "\n".join(line for line in header.split("\n") if not line.startswith("Date: "))
    note = f"Made against {BASE.replace('`', '')}.\n\n"
    return f"{header}{separator}{note}{rest}"


def _write_tree(root: Path, files: dict[str, str]) -> None:
    """Files of the scratch repository (a fresh temporary folder: nothing is planted there)."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
