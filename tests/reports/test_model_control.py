"""A control list whose interval excludes 1 in one figure (resnet50 on the H200, 2026-12-07:
from Python only): the sentence that says so names that figure and shows its interval."""

from pool_fusion_tuning.reports.model_md import _recovered_text

RATIOS = {
    figure: {"ratio": ratio, "low": low, "high": high, "confidence": 0.95, "units": 3}
    for figure, ratio, low, high in (
        ("gpu_queued", 0.999, 0.997, 1.001),
        ("call_path", 0.999, 0.996, 1.002),
        ("python_call", 0.9995, 0.9992, 0.9998),
    )
}


def _text(python_call_holds_1: bool) -> str:
    holds = {"gpu_queued": True, "call_path": True, "python_call": python_call_holds_1}
    found = {"arm": "tvm-fixed", "control": True, "holds_one": holds, "ratios": RATIOS}
    return _recovered_text("fixed", found)


def test_the_figure_whose_interval_excludes_1_is_named_and_shown():
    text = _text(python_call_holds_1=False)
    assert "**its interval excludes 1** (from Python) though no rule changed" in text
    assert "from Python: tvm-fixed/tvm-default = 1.000 (95% CI 0.999–1.000)" in text


def test_a_control_that_holds_1_shows_the_two_figures_only():
    text = _text(python_call_holds_1=True)
    assert "its interval holds 1, as it should" in text and "from Python" not in text
