"""`tune upstream --check TVM_TREE`: names looked up in a tree, and the whole check on a small
TVM tree of the installed TVM's files with a few dlight and relax tests."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import tvm

from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.upstream.tree_names import missing_names, used_names
from pool_fusion_tuning.tuning.upstream.tvm_tree import EDITED, base_text

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
    """git on `repo` itself, whatever GIT_* variables a test exports."""
    command = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.org"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run([*command, *args], capture_output=True, text=True, check=True, env=env)


# A committed conftest.py that writes into the user's tree and HOME where it finds them.
INTRUDER = """
import pathlib, subprocess
done = subprocess.run(["git", "remote", "get-url", "origin"], capture_output=True, text=True)
if done.returncode == 0:
    pathlib.Path(done.stdout.strip(), "written-by-the-tree").write_text("x")
(pathlib.Path.home() / "written-by-the-tree").write_text("x")
"""


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory) -> Path:
    """A TVM tree with a few tests and hostile parts: a conftest.py that writes where it can,
    links to /dev/zero and outside, an uncommitted edit, an untracked file."""
    tree = tmp_path_factory.mktemp("tvm")
    shutil.copytree(
        Path(tvm.__file__).parent,
        tree / "python" / "tvm",
        ignore=lambda folder, names: [n for n in names if not n.endswith(".py") and "." in n],
    )
    for path in EDITED:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(base_text(path))
    outside = tmp_path_factory.mktemp("outside") / "test_outside.py"
    outside.write_text(RELAX_TEST)
    for path, text in {
        "tests/python/s_tir/dlight/test_small.py": DLIGHT_TEST,
        "tests/python/relax/test_small_cuda.py": RELAX_TEST,
        "conftest.py": INTRUDER,
    }.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    (tree / "tests/python/relax/test_zero.py").symlink_to("/dev/zero")
    (tree / "tests/python/relax/test_elsewhere.py").symlink_to(outside)
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "a small TVM tree")
    (tree / "conftest.py").write_text(INTRUDER + "# an uncommitted edit\n")
    (tree / "untracked.txt").write_text("not committed")
    return tree


@pytest.fixture
def hostile_environment(tmp_path, monkeypatch) -> tuple[Path, str]:
    """GIT_* variables and HOME of the test's own, pytest files planted where the scratch clone
    goes; the repository and its `git status`."""
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    _git(decoy, "init", "-q")
    (decoy / "staged.txt").write_text("staged work")
    _git(decoy, "add", "staged.txt")
    _git(decoy, "commit", "-qm", "the user's own work")
    (decoy / "staged.txt").write_text("more staged work")
    _git(decoy, "add", "staged.txt")
    state = _decoy_state(decoy)
    for name, value in {
        "GIT_DIR": decoy / ".git",
        "GIT_WORK_TREE": decoy,
        "GIT_INDEX_FILE": decoy / ".git" / "index",
        "HOME": tmp_path / "home",
        "PYTEST_ADDOPTS": "-p planted_plugin",
    }.items():
        monkeypatch.setenv(name, str(value))
    (tmp_path / "home").mkdir()
    planted = tmp_path / "tmp"
    planted.mkdir()
    (planted / "pytest.ini").write_text("[pytest]\naddopts = -p planted_plugin\n")
    (planted / "conftest.py").write_text('raise SystemExit("the planted conftest ran")\n')
    monkeypatch.setattr(tempfile, "tempdir", str(planted))
    return decoy, state


def _decoy_state(decoy: Path) -> str:
    return _git(decoy, "log", "--format=%H", "-1").stdout + _git(decoy, "status").stdout


def test_the_check_on_a_small_tree(small_tree, hostile_environment, capsys):
    decoy, state = hostile_environment
    head = _git(small_tree, "rev-parse", "HEAD").stdout
    assert main(["upstream", "--check", str(small_tree)]) == 1
    report = capsys.readouterr().out
    assert "(its HEAD, the nearest tree): it applies." in report
    assert "Missing: none." in report and "`tvm.sym.detect_linear_equation`" in report
    assert "What it does not show: the tests are the nearest tree's, not the base's" in report
    # The links to /dev/zero and outside the tree are neither read nor counted.
    # The small relax test and relax's pipeline tests.
    assert "`tests/python/s_tir/dlight/` and 2 relax test files" in report
    assert "(test_pipeline.py, test_small_cuda.py)" in report
    assert "TVM's tests whose outcome changed: 1." in report
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
    assert "test code (its `conftest.py` files and tests) ran in the scratch clone" in report
    assert "2 uncommitted or untracked file(s) of the tree (`conftest.py`, `untracked.txt`)" in (
        report
    )
    assert "2 symbolic link(s)" in report and "`tests/python/relax/test_zero.py`" in report
    # The user's tree, HOME and the repository the variables name are left as they were.
    assert _git(small_tree, "rev-parse", "HEAD").stdout == head
    assert _git(small_tree, "status", "--porcelain").stdout == " M conftest.py\n?? untracked.txt\n"
    assert not (Path(os.environ["HOME"]) / "written-by-the-tree").exists()
    assert _decoy_state(decoy) == state


def test_out_leaves_the_repository_git_variables_name_alone(hostile_environment, tmp_path):
    decoy, state = hostile_environment
    out = tmp_path / "out"
    assert main(["upstream", "--out", str(out), "--author", "A <a@example.org>"]) == 0
    assert (out / "window_reduction.patch").is_file()
    assert _decoy_state(decoy) == state


def test_a_pytest_that_cannot_start_is_one_line(small_tree, tmp_path, capsys):
    tree = tmp_path / "tree"
    _git(tmp_path, "clone", "-q", str(small_tree), str(tree))
    (tree / "pytest.ini").write_text("[pytest]\nminversion = 999\n")
    _git(tree, "add", "pytest.ini")
    _git(tree, "commit", "-qm", "a pytest too old")
    assert main(["upstream", "--check", str(tree)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("tune: error: pytest could not start") and error.count("\n") == 1
    assert "exit status 4" in error and "999" in error, error


@pytest.mark.parametrize("kind", ["empty", "not-git", "inside-another"])
def test_a_folder_that_is_not_a_tvm_checkout_is_one_line(tmp_path, capsys, kind):
    tree = tmp_path / "sub" if kind == "inside-another" else tmp_path
    if kind != "empty":
        (tree / "python" / "tvm").mkdir(parents=True)
    if kind == "inside-another":
        _git(tmp_path, "init", "-q")
    assert main(["upstream", "--check", str(tree)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("tune: error:") and error.count("\n") == 1, error
    assert ("no python/tvm" in error) == (kind == "empty")
    assert ("a folder inside the git checkout" in error) == (kind == "inside-another"), error


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a tree to another user takes root")
def test_a_tree_of_another_user_is_one_line_saying_so(tmp_path, capsys, monkeypatch):
    tree = tmp_path / "theirs"
    (tree / "python" / "tvm").mkdir(parents=True)
    _git(tree, "init", "-q")
    for path in [tree, *tree.rglob("*")]:
        os.lchown(path, 65534, 65534)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)  # no safe.directory of this machine's
    assert main(["upstream", "--check", str(tree)]) == 2
    error = capsys.readouterr().err
    assert "owned by another user" in error and error.count("\n") == 1, error
