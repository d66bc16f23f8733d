"""The candidate rule as a pull request to apache/tvm 0.27 (`tune upstream --out DIR`).

DIR gets the files as they would be in TVM's tree (`python/...`, `tests/...`) and one
`git format-patch` file against TVM's files as the installed package ships them: the rule
(`rule.py` makes it from the project's code), its import in dlight's `gpu` package,
its place right before `GeneralReduction` in the CUDA backend's default rules, and TVM's kind
of test (`tvm_test.py`).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import tvm

from baselines.rules import MAX_WINDOW
from tuning.errors import UsageError

from .rule import rule_source
from .tvm_test import TVM_TEST

RULE = "python/tvm/s_tir/dlight/gpu/window_reduction.py"
GPU_INIT = "python/tvm/s_tir/dlight/gpu/__init__.py"
CUDA_PIPELINE = "python/tvm/relax/backend/cuda/pipeline.py"
TEST = "tests/python/s_tir/dlight/test_gpu_window_reduction.py"
EDITED = (GPU_INIT, CUDA_PIPELINE)  # TVM files the patch changes (the others it adds)

SUBJECT = "[Dlight] Add WindowReduction, a GPU rule for small-window reductions such as pooling"
BODY = f"""\
A reduction over a small constant window followed by elementwise work
(MaxPool + Add, fused) falls to GeneralReduction, which spreads each
window of a few elements over a block of 256 threads and synchronizes
them: the fused kernel is slower than the pool and the add apart
(apache/tvm#20401).

WindowReduction takes such functions (a window of at most {MAX_WINDOW}
elements, NCHW outputs, a chain of elementwise blocks over them) and
gives each thread one output, or two rows of outputs where windows
overlap. The window is unrolled in registers and loaded with vector
instructions where its columns are aligned, and the elementwise chain
is applied in place. Any other function is left to the rules after it.
The CUDA backend tries it right before GeneralReduction.
"""
# Who the patch is from where git knows no one: the maintainer who sends it amends it.
FALLBACK_AUTHOR = {
    f"GIT_{role}_{key}": value
    for role in ("AUTHOR", "COMMITTER")
    for key, value in (("NAME", "tune upstream"), ("EMAIL", "tune-upstream@localhost"))
}


def pristine(path: str) -> str:
    """A TVM file as the installed package ships it (`python/tvm/...` in TVM's tree)."""
    return (Path(tvm.__file__).parent / Path(path).relative_to("python/tvm")).read_text()


def _insert(text: str, anchor: str, line: str, before: bool) -> str:
    """`line` next to the one line equal to `anchor`; refuses a file whose anchor moved."""
    lines = text.splitlines(keepends=True)
    found = [i for i, existing in enumerate(lines) if existing.rstrip("\n") == anchor]
    if len(found) != 1:
        raise RuntimeError(
            f"the installed TVM has {len(found)} lines {anchor.strip()!r} "
            "where tune upstream expects one"
        )
    at = found[0] if before else found[0] + 1
    return "".join(lines[:at] + [line + "\n"] + lines[at:])


def patched_files() -> dict[str, str]:
    """TVM path -> the file's text after the patch: the two edited files and the two added."""
    return {
        RULE: rule_source(),
        GPU_INIT: _insert(
            pristine(GPU_INIT),
            "from .general_reduction import GeneralReduction",
            "from .window_reduction import WindowReduction",
            before=False,
        ),
        CUDA_PIPELINE: _insert(
            pristine(CUDA_PIPELINE),
            " " * 12 + "dl.gpu.GeneralReduction(),",
            " " * 12 + "dl.gpu.WindowReduction(),",
            before=True,
        ),
        TEST: TVM_TEST.read_text(),
    }


def _git(repo: Path, *args: str, env: dict | None = None) -> str:
    command = ["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env)
    except FileNotFoundError:
        raise UsageError("tune upstream needs git on the PATH to write the patch") from None
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def format_patch(files: dict[str, str], out: Path) -> Path:
    """One commit on top of the pristine files, as `git format-patch` writes it into `out`."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch)
        _git(repo, "init", "-q")
        if not all(
            _git(repo, "config", "--default", "", key).strip()
            for key in ("user.name", "user.email")
        ):
            env.update(FALLBACK_AUTHOR)
        _write(repo, {path: pristine(path) for path in EDITED})
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"TVM {tvm.__version__} as installed", env=env)
        _write(repo, files)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"{SUBJECT}\n\n{BODY}", env=env)
        return Path(_git(repo, "format-patch", "-1", "-o", str(out.resolve())).strip())


def write_upstream(out: Path) -> Path:
    """Write the patched and added files under `out` and the patch beside them."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder (new or existing)")
    files = patched_files()
    try:
        _write(out, files)
    except OSError as error:
        raise UsageError(f"cannot write under --out {out}: {error.strerror}") from None
    return format_patch(files, out)
