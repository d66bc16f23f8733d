"""The kernel-code comparison: its PTX counts on a kernel TVM builds here, and its committed H200
table rendered again from the archived figures."""

import json
import tarfile
from pathlib import Path

import pytest

from pool_fusion_tuning.baselines.anatomy import cuda_source
from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.kernel_code import _nvcc, main, ptx_counts, render
from pool_fusion_tuning.baselines.pipeline import build, make_target

COMMITTED = Path(__file__).resolve().parents[2] / "reports" / "h200" / "kernel_code"


@pytest.mark.nvcc
def test_counts_a_one_kernel_built_here(tmp_path):
    case = Case(channels=4, height=8, width=8, prelude=False, tail=1)
    source = cuda_source(build(case, ARMS["one-kernel"], make_target("cuda")))
    counts = ptx_counts(_nvcc(source, tmp_path, "tvm"))
    assert counts["global_stores"] >= 1
    assert counts["global_loads"] >= 1
    assert counts["integer_divisions"] == 0  # constant divisors become multiplications
    assert counts["instructions"] > counts["global_loads"] + counts["global_stores"]


def test_committed_table_renders_from_its_figures():
    with tarfile.open(COMMITTED / "cases.tar.xz") as archive:
        member = archive.extractfile("kc/kernel_code.json")
        assert member is not None
        found = json.load(member)
    assert render(found) == (COMMITTED / "kernel_code.md").read_text()
    assert {"s1-32", "s1-h6", "issue"} <= set(found)


def test_without_cases_it_says_how_to_call_it(capsys):
    assert main([]) == 2
    assert "python3 -m pool_fusion_tuning.baselines.kernel_code OUT" in capsys.readouterr().err
