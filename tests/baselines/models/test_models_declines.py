"""The fixed list on flagged kernels: rows of at most 64 to RowReduction, longer rows and
global pools declined with their reasons."""

import pytest
from tvm import relax
from tvm.script import relax as R

from pool_fusion_tuning.baselines.models.analysis import KernelLaunch, analyze
from pool_fusion_tuning.baselines.models.declines import OVER, REASONS, ROWS
from pool_fusion_tuning.reports.census import _kernel
from pool_fusion_tuning.reports.census_counts import ROW_TAKES, TAKES, tally
from pool_fusion_tuning.reports.census_md import census_markdown

LAYER_NORM = "layer_norm"


def _analysed(shape: tuple, op: str):
    """The one kernel of a module computing `op` over the last axis (a global mean over the
    last two for "mean") of an input of `shape`."""
    params = [relax.Var("x", relax.TensorType(shape, "float32"))]
    if op == LAYER_NORM:
        params += [relax.Var(n, relax.TensorType((shape[-1],), "float32")) for n in "gb"]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            if op == "softmax":
                value = R.nn.softmax(params[0], -1)
            elif op == LAYER_NORM:
                value = R.nn.layer_norm(*params, [-1], 1e-5)
            else:
                value = R.mean(params[0], axis=[-2, -1])
            out = bb.emit_output(value)
        bb.emit_func_output(out)
    (kernel,) = analyze(bb.get()).kernels
    return kernel


@pytest.mark.parametrize(("shape", "op"), [((2, 3, 49), "softmax"), ((5, 64), LAYER_NORM)])
def test_a_flagged_short_row_is_taken_by_row_reduction_under_fixed(shape, op):
    kernel = _analysed(shape, op)
    assert kernel.pattern and kernel.window == shape[-1]  # the block of 256 per row
    assert kernel.rules == {"default": "GeneralReduction", "fixed": "RowReduction"}
    assert kernel.launches["default"] == KernelLaunch(kernel.outputs, 256)
    assert kernel.launches["fixed"].block == 32  # a warp per row
    assert kernel.declines == {}  # taken, not declined


@pytest.mark.parametrize(("shape", "op"), [((4, 96), "softmax"), ((4, 96), LAYER_NORM)])
def test_a_row_over_64_is_declined_with_the_reason(shape, op):
    kernel = _analysed(shape, op)
    assert kernel.rules == {"default": "GeneralReduction", "fixed": "GeneralReduction"}
    assert kernel.declines == {"fixed": OVER} and not kernel.pattern


def test_a_global_pool_is_still_declined_as_not_sliding():
    kernel = _analysed((1, 8, 4, 4), "mean")
    assert kernel.pattern and kernel.rules["fixed"] == kernel.rules["default"] == "Reduction"
    assert kernel.declines == {"fixed": ROWS}


def test_the_census_counts_the_rows_row_reduction_takes_apart():
    taken, pool = (_analysed(*case).to_dict() for case in [((2, 3, 49), "softmax"),
                                                            ((1, 8, 4, 4), "mean")])  # fmt: skip
    for kernel in (taken, pool):
        kernel["kernel_us"] = {}
    flagged = [_kernel(taken, taken["declines"]), _kernel(pool, pool["declines"])]
    assert [k["window_rule"] for k in flagged] == [ROW_TAKES, ROWS]
    count = tally(flagged)
    assert (count["taken"], count["rows"], count["declined"]) == (0, 1, {ROWS: 1})
    census = {
        "zoo": {"source": "z", "listed": 1, "listed_by": "l"},
        "device": None,
        "rule_lists": ["default", "fixed"],
        "rows": [{"model": "m", "kernels": 2, "flagged": flagged, "analysis_s": 1.0,
                  "rule_failures": []}],
        "reasons": dict(REASONS),
        "command": "c",
    }  # fmt: skip
    text = census_markdown(census)
    assert "The window rule takes 0 of them (0 launches), RowReduction (a warp per short " in text
    assert "| window rule takes (launches) | RowReduction takes (launches) | declines: why |" in (
        text
    )
    assert "| m | 2 | 2 (2) | 0 (0) | 1 (1) | not sliding 1 |" in text
    flagged[0]["window_rule"] = TAKES  # a census without such rows: no column, as before
    text = census_markdown(census)
    assert "RowReduction takes" not in text and "RowReduction (a warp" not in text
    assert "| m | 2 | 2 (2) | 1 (1) | not sliding 1 |" in text
