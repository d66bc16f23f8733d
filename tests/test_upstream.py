"""`tune upstream`: the patch applies to the installed TVM's files, the rule ships as measured,
and bad inputs."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tvm
from conftest import ROOT, python_path, tune

from pool_fusion_tuning.baselines.window_bench import without_bindings
from pool_fusion_tuning.baselines.window_reduction import WindowReduction
from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.upstream.bundle import PR
from pool_fusion_tuning.tuning.upstream.patch import PATCH, patched_files
from pool_fusion_tuning.tuning.upstream.rule import relative_import, rule_source, source_text
from pool_fusion_tuning.tuning.upstream.tvm_test import PIPELINE_TEST_NAME, render, shipped_test
from pool_fusion_tuning.tuning.upstream.tvm_tree import (
    BASE_COMMIT,
    BASE_RELEASE,
    DOCS,
    EDITED,
    IN_WHEEL,
    PIPELINE_TEST,
    RULE,
    base_text,
    installed_commit,
    installed_text,
)

AUTHOR = ["--author", "Ada Lovelace <ada@example.org>"]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    out = tmp_path_factory.mktemp("upstream")
    assert main(["upstream", "--out", str(out), *AUTHOR]) == 0
    return out


def _git(repo, *args):
    command = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.org"]
    return subprocess.run([*command, *args], capture_output=True, text=True)


def test_writes_the_files_as_tvm_lays_them_out_the_patch_and_the_pr_text(upstream):
    written = {str(p.relative_to(upstream)) for p in upstream.rglob("*") if p.is_file()}
    assert written == {*patched_files(), PATCH, PR}
    for path, text in patched_files().items():
        assert (upstream / path).read_text() == text, path
    patch = (upstream / PATCH).read_text()
    assert "From: Ada Lovelace <ada@example.org>" in patch
    assert "Subject: [PATCH] [Dlight] Add WindowReduction" in patch
    assert f"Made against the apache/tvm {BASE_RELEASE} release (commit {BASE_COMMIT})" in patch
    assert "\nDate: " not in patch  # git am stamps the day it is applied


@pytest.mark.parametrize("files", ["base", "installed"])
def test_the_patch_applies_to_the_base_commit_and_to_the_installed_tvm(upstream, tmp_path, files):
    """`git am` on the stored base files and the installed TVM's leaves the files written."""
    assert _git(tmp_path, "init", "-q").returncode == 0
    for path in EDITED:
        source = installed_text if files == "installed" and path in IN_WHEEL else base_text
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(source(path))
    assert _git(tmp_path, "add", "-A").returncode == 0
    assert _git(tmp_path, "commit", "-qm", "base").returncode == 0
    check = _git(tmp_path, "apply", "--check", str(upstream / PATCH))
    assert check.returncode == 0, check.stderr
    applied = _git(tmp_path, "am", "--keep-non-patch", str(upstream / PATCH))
    assert applied.returncode == 0, applied.stderr
    log = _git(tmp_path, "log", "-1", "--format=%an <%ae>|%s").stdout.strip()
    assert log == "Ada Lovelace <ada@example.org>|" + (
        "[Dlight] Add WindowReduction, a GPU rule for small-window reductions such as pooling"
    )
    for path in patched_files():
        assert (tmp_path / path).read_text() == (upstream / path).read_text(), path


def test_the_base_is_the_installed_release():
    """The stored base files are the installed wheel's, which is the base's build."""
    assert tvm.__version__ == BASE_RELEASE and installed_commit() == BASE_COMMIT
    for path in IN_WHEEL:
        assert base_text(path) == installed_text(path), path


def test_the_cuda_list_gets_the_rule_right_before_reduction(upstream):
    pipeline = (upstream / "python/tvm/relax/backend/cuda/pipeline.py").read_text()
    assert (
        "dl.gpu.GEMV(),\n            dl.gpu.WindowReduction(),\n            dl.gpu.Reduction(),"
        in (pipeline)
    )
    init = (upstream / "python/tvm/s_tir/dlight/gpu/__init__.py").read_text()
    assert "from .window_reduction import WindowReduction\n" in init
    catalog = (upstream / DOCS).read_text()
    assert "#      - softmax, layer norm, RMS norm\n#    * - ``WindowReduction``\n" in catalog


def test_the_issue_s_graph_joins_relax_s_pipeline_tests(upstream):
    """The issue's graph is a relax pipeline test beside the CUDA rules' one."""
    tests = (upstream / PIPELINE_TEST).read_text()
    assert tests.startswith(base_text(PIPELINE_TEST).split("from tvm import relax\n")[0])
    assert "from tvm import relax, tirx\n" in tests
    assert tests.count(f"def {PIPELINE_TEST_NAME}():") == 1
    assert tests.index(f"def {PIPELINE_TEST_NAME}():") < tests.index('if __name__ == "__main__":')
    assert (
        "_issue_graph"
        not in (upstream / "tests/python/s_tir/dlight/test_gpu_window_reduction.py").read_text()
    )


def test_the_rule_ships_as_the_project_measures_it(upstream):
    """The shipped file is window_reduction.py plus the ASF header, imports made relative."""
    shipped = (upstream / RULE).read_text()
    assert shipped == rule_source()
    assert shipped.startswith("# Licensed to the Apache Software Foundation")
    source = source_text().splitlines()
    moved = [line for line in source if relative_import(line)]
    assert moved and all(relative_import(line) in shipped.splitlines() for line in moved)
    kept = [line for line in shipped.splitlines() if not line.startswith(("from .", "#"))]
    assert [line for line in kept if line] == [
        line for line in source if line and not line.startswith("#") and line not in moved
    ]
    assert "from tvm.s_tir.dlight" not in shipped
    assert "state.replace" not in shipped  # schedule primitives only: the trace replays
    assert "Not `normalize_prim_func`" in shipped  # why it starts otherwise than its neighbours


def test_the_checked_in_tvm_test_is_todays_rendering():
    assert shipped_test() == render(), (
        "the rule or the pipeline changed its output: render TVM's test of the rule again with "
        "python -m pool_fusion_tuning.tuning.upstream.tvm_test"
    )


def test_writing_again_changes_nothing(upstream, capsys):
    """A second run finds every file as it would write it (no date, no local hash)."""
    assert main(["upstream", "--out", str(upstream), *AUTHOR]) == 0
    assert "0 files written, 8 unchanged" in capsys.readouterr().out


def test_the_author_comes_from_git_or_the_command_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / "gc")}
    (home / "gc").write_text("[user]\n\tname = Grace Hopper\n\temail = grace@example.org\n")
    done = _tune_with(env, tmp_path, "--out", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert "From: Grace Hopper <grace@example.org>" in (tmp_path / "a" / PATCH).read_text()
    (home / "gc").write_text("")
    done = _tune_with(env, tmp_path, "--out", str(tmp_path / "b"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert '--author "Name <email>"' in done.stderr and not (tmp_path / "b").exists()


def _tune_with(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        [sys.executable, "-m", "pool_fusion_tuning", "upstream", *args],
        cwd=cwd,
        env={**clean, "PYTHONPATH": python_path(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--out", ""],
        ["--out", "  "],
        ["--out", "{file}"],
        ["--out", "{file}/inside"],
        ["--out", "{dir}", "--author", "nobody"],
        ["--out", "{dir}", "--run", "{dir}/no-run"],
        ["--out", "{dir}", "--sweep", "{file}"],
    ],
    ids=["no-out", "empty", "blank", "file", "under-file", "bad-author", "no-run", "bad-sweep"],
)
def test_bad_input_is_one_line_and_writes_nothing(argv, tmp_path, capsys):
    (tmp_path / "file").write_text("not json")
    argv = [a.format(file=tmp_path / "file", dir=tmp_path / "dir") for a in argv]
    if "--author" not in argv:
        argv += AUTHOR
    assert main(["upstream", *argv]) == 2
    error = capsys.readouterr().err
    assert error.startswith("tune: error:") and error.count("\n") == 1, error
    assert not (tmp_path / "dir").exists()


def test_a_bad_out_from_the_console_is_one_line(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("")
    done = tune("upstream", "--out", str(taken), *AUTHOR, check_exit=2)
    assert done.stderr.count("\n") == 1 and "is a file" in done.stderr


def test_the_numeric_tests_kernels_and_references_agree_on_llvm(monkeypatch, tmp_path):
    """The shipped CUDA numeric test, replayed on the CPU: its NumPy references are right."""
    source = tmp_path / "shipped_tvm_test.py"
    source.write_text(shipped_test())
    spec = importlib.util.spec_from_file_location("shipped_tvm_test", source)
    shipped = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "shipped_tvm_test", shipped)  # TVMScript reads its source
    spec.loader.exec_module(shipped)
    cuda = tvm.target.Target("nvidia/geforce-rtx-3090-ti")
    assert len(shipped.WORKLOADS) == 5
    for func, shape, reference in (workload() for workload in shipped.WORKLOADS):
        with cuda:
            sch = WindowReduction().apply(func, cuda, False)
        assert sch is not None
        kernel = tvm.compile(
            tvm.IRModule({"main": without_bindings(func, sch.trace)}), target="llvm"
        )
        data = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
        wants = reference(data)
        gots = [tvm.runtime.empty(want.shape, "float32", tvm.cpu()) for want in wants]
        kernel["main"](tvm.runtime.tensor(data, tvm.cpu()), *gots)
        for got, want in zip(gots, wants, strict=True):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
