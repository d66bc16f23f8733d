"""TVM's own kind of test for the window rule: `Before` and `After` TVMScript modules.

The checked-in file (`TVM_TEST`) is what `tune upstream` ships. Its `After` is the rule's real
output when the file was rendered, and the project's tests run it against the rule: a change to
the rule's schedules fails them until the file is rendered again, with

    python -m tuning.upstream.tvm_test > tuning/upstream/tvm_tests/test_gpu_window_reduction.py
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import tvm
from tvm.s_tir import dlight as dl

from baselines.arms import ARMS
from baselines.case import Case
from baselines.graph import REDUCTION_GRAPHS
from baselines.pipeline import fused_pool_function, fused_stage, make_target, unscheduled
from baselines.rules import WindowReduction

from .rule import ASF_HEADER

TVM_TEST = Path(__file__).parent / "tvm_tests" / "test_gpu_window_reduction.py"
TARGET = "nvidia/geforce-rtx-3090-ti"  # the target of TVM's own dlight tests
INDENT = " " * 4

TEMPLATE = """\
# pylint: disable=missing-docstring
# ruff: noqa: E501, F841

import tvm
import tvm.testing
from tvm.ir import IRModule, assert_structural_equal
from tvm.relax.backend.cuda import pipeline as cuda_pipeline
from tvm.s_tir import dlight as dl
from tvm.script import ir as I
from tvm.script import tirx as T
from tvm.target import Target


def _check(mod_before: IRModule, mod_after: IRModule):
    target = Target("{target}")
    with target:
        mod = dl.ApplyDefaultSchedule(  # pylint: disable=not-callable
            dl.gpu.WindowReduction(),
        )(mod_before)
    assert_structural_equal(mod, mod_after)


def test_max_pool_add():
    # MaxPool2d (2x2 window, stride 2) and the Add after it, fused: apache/tvm#20401.
    # fmt: off
{issue_before}

{issue_after}
    # fmt: on
    _check(Before, After)


def test_global_pool_is_left_alone():
    # A 64x64 window is too long for one thread to reduce: GeneralReduction keeps it.
    # fmt: off
{global_before}
    # fmt: on
    _check(Before, Before)


def test_cuda_pipeline_tries_window_reduction_before_general_reduction():
    (schedule,) = [
        transform
        for transform in cuda_pipeline.legalize_passes(Target("{target}"))
        if isinstance(transform, dl.ApplyDefaultSchedule)
    ]
    rules = [type(rule) for rule in schedule.rules]
    assert rules.index(dl.gpu.WindowReduction) + 1 == rules.index(dl.gpu.GeneralReduction)


if __name__ == "__main__":
    tvm.testing.main()
"""


def issue_kernel() -> tvm.IRModule:
    """The fused MaxPool + Add function of the issue's graph, as the CUDA pipeline makes it."""
    _, func = fused_pool_function(fused_stage(Case(), ARMS["on"], make_target("cuda")))
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def global_pool_kernel() -> tvm.IRModule:
    """A global average pool + Add: a reduction whose window is not small."""
    mod = unscheduled(REDUCTION_GRAPHS["global_avg_pool"](), make_target("cuda"))
    (func,) = [f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def scheduled(mod: tvm.IRModule) -> tvm.IRModule:
    with tvm.target.Target(TARGET):
        return dl.ApplyDefaultSchedule(WindowReduction())(mod)


def _module_class(mod: tvm.IRModule, name: str) -> str:
    """The module's TVMScript as `class name`, indented into a test function."""
    lines = [line for line in mod.script().splitlines() if not line.startswith("# from ")]
    text = "\n".join(lines).strip().replace("class Module:", f"class {name}:", 1)
    return textwrap.indent(text, INDENT)


def render() -> str:
    issue = issue_kernel()
    return ASF_HEADER + TEMPLATE.format(
        target=TARGET,
        issue_before=_module_class(issue, "Before"),
        issue_after=_module_class(scheduled(issue), "After"),
        global_before=_module_class(global_pool_kernel(), "Before"),
    )


if __name__ == "__main__":
    print(render(), end="")
