"""`tune upstream`: the patch to apache/tvm applies to the installed TVM's files, and TVM's test
of the rule, shipped with it, passes here with the rule registered as the patch registers it."""

import ast
import importlib
import importlib.util
import subprocess
import sys

import pytest
import tvm
from conftest import CASES, tune

from baselines.arms import ARMS
from baselines.pipeline import fused_stage, make_target
from baselines.rules import WindowReduction
from tuning.cli.main import main
from tuning.upstream.patch import EDITED, RULE, TEST, patched_files, pristine
from tuning.upstream.tvm_test import TVM_TEST, render

CUDA = make_target("cuda")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    out = tmp_path_factory.mktemp("upstream")
    assert main(["upstream", "--out", str(out)]) == 0
    return out


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def test_writes_the_patch_and_the_files_as_tvm_lays_them_out(upstream):
    written = {str(p.relative_to(upstream)) for p in upstream.rglob("*") if p.is_file()}
    (patch,) = [name for name in written if name.startswith("0001-")]
    assert written - {patch} == set(patched_files())
    for path, text in patched_files().items():
        assert (upstream / path).read_text() == text, path
    assert "Subject: [PATCH] [Dlight] Add WindowReduction" in (upstream / patch).read_text()


def test_the_patch_applies_to_the_installed_tvm_and_gives_the_files(upstream, tmp_path):
    assert _git(tmp_path, "init", "-q").returncode == 0
    for path in EDITED:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(pristine(path))
    (patch,) = upstream.glob("0001-*.patch")
    check = _git(tmp_path, "apply", "--check", str(patch))
    assert check.returncode == 0, check.stderr
    assert _git(tmp_path, "apply", str(patch)).returncode == 0
    for path in (RULE, *EDITED, TEST):
        assert (tmp_path / path).read_text() == (upstream / path).read_text(), path


def _module_name(path: str) -> str:
    """`python/tvm/a/b/__init__.py` -> `tvm.a.b`, `python/tvm/a/c.py` -> `tvm.a.c`."""
    parts = path.removeprefix("python/").removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def register_as_the_patch_does(out, monkeypatch) -> None:
    """The patch's files in place of the installed TVM's modules, the added module first."""
    for path in (RULE, *EDITED):
        name = _module_name(path)
        parent, _, leaf = name.rpartition(".")
        installed = sys.modules.get(name) or (
            importlib.import_module(name) if path in EDITED else None
        )
        search = installed.__path__ if path.endswith("__init__.py") else None
        spec = importlib.util.spec_from_file_location(
            name, out / path, submodule_search_locations=search
        )
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        monkeypatch.setattr(importlib.import_module(parent), leaf, module, raising=False)


def test_tvms_test_of_the_rule_passes_against_the_shipped_rule(upstream, monkeypatch):
    register_as_the_patch_does(upstream, monkeypatch)
    spec = importlib.util.spec_from_file_location("test_gpu_window_reduction", upstream / TEST)
    tvm_test = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, tvm_test)  # TVMScript reads its classes' source
    spec.loader.exec_module(tvm_test)
    names = [name for name in vars(tvm_test) if name.startswith("test_")]
    assert "test_max_pool_add" in names and len(names) >= 3
    for name in names:
        getattr(tvm_test, name)()


def test_the_shipped_rule_schedules_every_kernel_as_the_projects_rule(upstream, monkeypatch):
    register_as_the_patch_does(upstream, monkeypatch)
    shipped = sys.modules[_module_name(RULE)].WindowReduction()
    taken = 0
    with CUDA:
        for case in CASES:
            for arm in ("on", "one-kernel"):  # the second inlines a prologue into the window
                mod = fused_stage(case, ARMS[arm], CUDA)
                for func in mod.functions.values():
                    if isinstance(func, tvm.tirx.PrimFunc):
                        ours, theirs = (
                            rule.apply(func, CUDA, False) for rule in (WindowReduction(), shipped)
                        )
                        assert (ours is None) == (theirs is None)
                        if ours is not None:
                            tvm.ir.assert_structural_equal(ours.mod, theirs.mod)
                            taken += 1
    assert taken == 2 * len(CASES)


def test_the_shipped_rule_needs_only_tvm_and_defines_every_name_it_uses(upstream):
    tree = ast.parse((upstream / RULE).read_text())
    roots = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    roots |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    assert roots - sys.stdlib_module_names == {"tvm", "tvm_ffi"}
    lint = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--select",
            "F,E9",
            str(upstream / RULE),
        ],
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout


def test_the_checked_in_tvm_test_is_the_rule_output_of_today():
    assert TVM_TEST.read_text() == render(), (
        "the rule or the pipeline changed its output: render the test again with "
        f"python -m tuning.upstream.tvm_test > {TVM_TEST}"
    )


def test_an_out_that_is_a_file_is_refused_in_one_line(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("")
    done = tune("upstream", "--out", str(taken), check_exit=2)
    assert done.stderr.count("\n") == 1 and "is a file" in done.stderr


@pytest.mark.parametrize("argv", [[], ["--out", "{file}/inside"]], ids=["no-out", "under-file"])
def test_bad_out_is_a_usage_error(argv, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    argv = [a.format(file=tmp_path / "file") for a in argv]
    assert main(["upstream", *argv]) == 2
    error = capsys.readouterr().err
    assert error.startswith("tune: error:") and error.count("\n") == 1
