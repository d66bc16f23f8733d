"""`tune upstream --check TVM_TREE` (tuning/upstream/check.py, names.py): names looked up in a
tree's files, and the whole check on a small TVM tree the test builds: the installed TVM's
Python files (the base's), one dlight test, and two relax tests that build for CUDA, one of which
pins the CUDA rule list and so changes outcome with the patch."""

import shutil
import subprocess
from pathlib import Path

import pytest
import tvm

from tuning.cli.main import main
from tuning.upstream.names import missing_names, used_names
from tuning.upstream.tvm_tree import EDITED, base_text

DLIGHT_TEST = """\
import tvm
from tvm import te
from tvm.s_tir import dlight as dl


def test_fallback_binds_threads():
    x = te.placeholder((64, 64), name="x")
    y = te.compute((64, 64), lambda i, j: x[i, j] * 2, name="y")
    target = tvm.target.Target("nvidia/geforce-rtx-3090-ti")
    with target:
        mod = tvm.IRModule({"main": te.create_prim_func([x, y])})
        mod = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(mod)
    assert "threadIdx.x" in mod.script()
"""
RELAX_TEST = """\
import tvm
from tvm.relax.backend.cuda import pipeline
from tvm.s_tir import dlight as dl
from tvm.script import ir as I
from tvm.script import relax as R

TARGET = tvm.target.Target("nvidia/geforce-rtx-3090-ti")  # a "cuda" target


def test_the_default_pipeline_schedules_every_kernel():
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((8, 8), "float32")):
            with R.dataflow():
                y = R.nn.relu(x)
                R.output(y)
            return y

    with TARGET:
        mod = pipeline.get_default_pipeline(TARGET)(Module)
    funcs = [f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    assert funcs and all(f.attrs["tirx.is_scheduled"] for f in funcs)


def test_the_rule_list_has_five_rules():
    passes = pipeline.legalize_passes(TARGET)
    (schedule,) = [p for p in passes if isinstance(p, dl.ApplyDefaultSchedule)]
    assert len(schedule.rules) == 5
"""


def test_the_names_a_module_uses_are_its_imports_and_their_attributes():
    source = (
        "import tvm\nfrom tvm import tirx\nfrom .. import analysis\nfrom .base import Rule\n"
        "x = tvm.arith.detect_linear_equation(a, b)\ny = tirx.IterVar.DataPar\n"
        "z = analysis.get_root_block(sch).name\nw = region.buffer\n"
    )
    assert used_names(source, "tvm.s_tir.dlight.gpu") == [
        "tvm.arith.detect_linear_equation",
        "tvm.s_tir.dlight.analysis.get_root_block",
        "tvm.s_tir.dlight.gpu.base.Rule",
        "tvm.tirx.IterVar.DataPar",
    ]


def test_names_are_looked_up_in_the_trees_files(tmp_path):
    files = {
        "tvm/__init__.py": "from . import arith\nfrom .tirx import *\n",
        "tvm/arith/__init__.py": "from .pattern import detect_linear_equation\n",
        "tvm/arith/pattern.py": "def detect_linear_equation(expr, variables):\n    pass\n",
        "tvm/tirx/__init__.py": "from .stmt import BufferRegion\n",
        "tvm/tirx/stmt.py": "class BufferRegion:\n    buffer: object\n    region: list\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    names = [
        "tvm.arith.detect_linear_equation",
        "tvm.tirx.BufferRegion.buffer",
        "tvm.BufferRegion",  # through the star import
        "tvm.sym.detect_linear_equation",
        "tvm.tirx.BufferRegion.source",
        "tvm.tirx.SBlock",
    ]
    assert missing_names(names, tmp_path) == names[3:]


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    command = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.org"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=True)


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("tvm")
    shutil.copytree(
        Path(tvm.__file__).parent,
        tree / "python" / "tvm",
        ignore=lambda folder, names: [n for n in names if not n.endswith(".py") and "." in n],
    )
    for path in EDITED:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(base_text(path))
    for path, text in {
        "tests/python/s_tir/dlight/test_small.py": DLIGHT_TEST,
        "tests/python/relax/test_small_cuda.py": RELAX_TEST,
    }.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "a small TVM tree")
    return tree


def test_the_check_on_a_small_tree(small_tree, capsys):
    head = _git(small_tree, "rev-parse", "HEAD").stdout
    assert main(["upstream", "--check", str(small_tree)]) == 1
    report = capsys.readouterr().out
    assert "(its HEAD, the nearest tree): it applies." in report
    assert "Missing: none." in report and "`tvm.sym.detect_linear_equation`" in report
    assert "What it does not show: the tests are the nearest tree's, not the base's" in report
    assert "`tests/python/s_tir/dlight/` and 1 relax test files" in report
    assert "| TVM's (3) | 3 passed | 1 failed, 2 passed |" in report
    assert "| `tests.python.relax.test_small_cuda::test_the_rule_list_has_five_rules` " in report
    rows = [line for line in report.splitlines() if line.startswith("| `test_")]
    assert len(rows) >= 10
    for row in rows:
        _, name, before, after, _ = row.split("|")
        if "_on_cuda" in name and not tvm.cuda(0).exist:
            assert (before.strip(), after.strip()) == ("skipped", "skipped")
        else:
            assert (before.strip(), after.strip()) == ("failed", "passed"), row
    assert "The patch does not hold (above)." in report
    # The user's tree is left as it was.
    assert _git(small_tree, "rev-parse", "HEAD").stdout == head
    assert _git(small_tree, "status", "--porcelain").stdout == ""


@pytest.mark.parametrize("kind", ["empty", "not-git"])
def test_a_folder_that_is_not_a_tvm_checkout_is_one_line(tmp_path, capsys, kind):
    if kind == "not-git":
        (tmp_path / "python" / "tvm").mkdir(parents=True)
    assert main(["upstream", "--check", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("tune: error:") and error.count("\n") == 1, error
    assert ("no python/tvm" in error) == (kind == "empty")
