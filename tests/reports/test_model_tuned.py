"""`tvm-tuned` against torch.compile in a model run's paragraph: which is ahead, said plainly, by
GPU time where the run has it."""

import pytest

from reports.model_tuned import tuned_text


def _ratio(ratio: float, low: float, high: float) -> dict:
    return {"ratio": ratio, "low": low, "high": high, "confidence": 0.95}


def _report(gpu: dict | None, call_path: dict) -> dict:
    figures = {"call_path": {"tvm-tuned/torch-compile": call_path}}
    if gpu is not None:
        figures["gpu_queued"] = {"tvm-tuned/torch-compile": gpu}
    for pair in figures.values():
        for ratio in pair.values():
            ratio["distinguishable"] = not ratio["low"] <= 1 <= ratio["high"]
    figures["call_path"]["tvm-tuned/tvm-fixed"] = {
        **_ratio(0.9, 0.85, 0.95),
        "distinguishable": True,
    }
    return {
        "arms": {"tvm-tuned": {}, "tvm-fixed": {}, "torch-compile": {}},
        "tuned": {"base": "fixed", "kernels": {"matmul": {"best": "metaschedule"}}},
        "ratios_by_figure": figures,
    }


@pytest.mark.parametrize(
    "gpu, call_path, said",
    [
        (
            _ratio(2.5, 2.4, 2.6),
            _ratio(0.5, 0.4, 0.6),
            "**torch.compile is ahead**: `tvm-tuned` takes 2.50x its GPU time, calls queued.",
        ),
        (
            _ratio(0.8, 0.7, 0.9),
            _ratio(2.0, 1.9, 2.1),
            "**`tvm-tuned` is ahead of torch.compile**: 0.80x its GPU time, calls queued.",
        ),
        (
            _ratio(1.0, 0.9, 1.1),
            _ratio(2.0, 1.9, 2.1),
            "In GPU time, calls queued, `tvm-tuned` and torch.compile cannot be told apart.",
        ),
        (
            None,
            _ratio(1.6, 1.5, 1.7),
            "**torch.compile is ahead**: `tvm-tuned` takes 1.60x its end to end, own call path.",
        ),
    ],
)
def test_which_of_tvm_tuned_and_torch_compile_is_ahead_is_said_by_gpu_time_first(
    gpu, call_path, said
):
    text = tuned_text(_report(gpu, call_path))
    assert said in text
    assert "1 kernel(s) tuned; schedule by `metaschedule` 1) against `tvm-fixed`" in text


def test_a_kernel_whose_tuned_schedule_is_no_faster_keeps_the_rule_s_in_tvm_tuned():
    report = _report(None, _ratio(1.0, 0.9, 1.1))
    report["tuned"]["kernels"]["matmul"]["used"] = "fixed"
    assert "1 kernel(s) tuned; schedule by `fixed` 1) against `tvm-fixed`" in tuned_text(report)
