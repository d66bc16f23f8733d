"""A control list (no kernel's rule changed) whose interval excludes 1 in one figure: the
sentence that says so names that figure and shows its interval (on the H200, 2026-12-07,
resnet50's `fixed` held 1 by GPU time and own call path and excluded it from Python only)."""

from pool_fusion_tuning.reports.model_md import _recovered_text


def _ratio(ratio: float, low: float, high: float) -> dict:
    return {"ratio": ratio, "low": low, "high": high, "confidence": 0.95, "units": 3}


def _control(holds_one: dict[str, bool]) -> dict:
    ratios = {
        "gpu_queued": _ratio(0.999, 0.997, 1.001),
        "call_path": _ratio(0.999, 0.996, 1.002),
        "python_call": _ratio(0.9995, 0.9992, 0.9998),
    }
    return {"arm": "tvm-fixed", "control": True, "holds_one": holds_one, "ratios": ratios}


def test_the_figure_whose_interval_excludes_1_is_named_and_shown():
    text = _recovered_text(
        "fixed", _control({"gpu_queued": True, "call_path": True, "python_call": False})
    )
    assert "**its interval excludes 1** (from Python) though no rule changed" in text
    assert "from Python: tvm-fixed/tvm-default = 1.000 (95% CI 0.999–1.000)" in text


def test_a_control_that_holds_1_shows_the_two_figures_only():
    text = _recovered_text(
        "fixed", _control({"gpu_queued": True, "call_path": True, "python_call": True})
    )
    assert "its interval holds 1, as it should" in text and "from Python" not in text
