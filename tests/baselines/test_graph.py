"""The default Case's module is the issue's module, built from its own TVMScript."""

import lzma
from pathlib import Path

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.graph import build_graph


def _issue_script() -> dict:
    """The names the issue's script defines (kept xz-compressed: ../shared/seed's
    repro_pool_fusion.py byte for byte), run as a module that is not __main__."""
    source = lzma.decompress(
        (Path(__file__).parents[1] / "fixtures" / "issue_repro.py.xz").read_bytes()
    )
    names: dict = {"__name__": "issue"}
    exec(compile(source, "issue_repro.py", "exec"), names)  # noqa: S102 (the issue's own script)
    return names


ISSUE = _issue_script()


def _parse(text):
    return tvm.script.from_source(text, extra_vars=dict(I=I, R=R, T=T), s_tir=True)


def test_default_graph_is_structurally_the_issues_module():
    tvm.ir.assert_structural_equal(build_graph(Case()), _parse(ISSUE["SOURCE"]))


def test_partial_graph_is_the_issues_partial_module():
    expected = _parse(ISSUE["partial_source"](ISSUE["SOURCE"]))
    tvm.ir.assert_structural_equal(build_graph(Case(), split_after_pool=True), expected)


def test_another_case_differs_from_the_issues_module():
    with pytest.raises(ValueError):
        tvm.ir.assert_structural_equal(build_graph(Case(window=3)), _parse(ISSUE["SOURCE"]))
