"""`tvm-tuned` against torch.compile in a model run's paragraph: which is ahead, said plainly, by
GPU time where the run has it."""

import pytest

from pool_fusion_tuning.reports.model_tuned import tuned_section, tuned_text


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
        "kernels": [],
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


def _tuned_all(report: dict) -> dict:
    """The tuned record of `--tune-top all --time-budget 100`, two kernels left untuned."""
    kernel = {"best": "metaschedule", "default_us": 9.0, "fixed_us": 8.0, "kernel_us": 5.0}
    report["tuned"].update(
        kernels={"matmul": {**kernel, "kind": "matmul", "calls": 1, "budget": 16}},
        tune_top="all",
        time_budget_s=100.0,
        commands=2,
        kernels_chosen=3,
        kernels_left=["conv_a", "conv_b"],
    )
    report["phase_wall_s"] = {"tuning": 123.4}
    return report


def test_the_tuned_section_gives_budgets_wall_time_kernels_left_and_torch_compile():
    from pool_fusion_tuning.reports.model_tuned import tuned_section

    text = "\n".join(tuned_section(_tuned_all(_report(_ratio(2.5, 2.4, 2.6), _ratio(1, 0.9, 1.1)))))
    assert "## Tuned kernels (--tune-top all, 16 candidates per tuner;" in text
    assert (
        "Tuning budget 16 candidates per tuner and kernel; time budget 100 s; 123.4 s of tuning "
        "wall time over 2 command(s). Kernels: 1 tuned of 3 chosen, 2 left (the time budget was "
        "spent): `conv_a`, `conv_b`." in text
    )
    assert "Against `torch-compile`: GPU time, calls queued tvm-tuned/torch-compile = 2.50" in text
    assert "**torch.compile is ahead**: `tvm-tuned` takes 2.50x its GPU time" in text


def test_a_run_from_before_the_tuning_kept_its_wall_time_renders_as_it_did():
    from pool_fusion_tuning.reports.model_tuned import tuned_section

    report = _tuned_all(_report(None, _ratio(1, 0.9, 1.1)))
    for key in ("tune_top", "time_budget_s", "commands", "kernels_chosen"):
        del report["tuned"][key]
    del report["tuned"]["kernels_left"]
    text = "\n".join(tuned_section(report))
    assert "## Tuned kernels (--tune-top 1, 16 candidates per" in text
    assert "Tuning budget" not in text and "torch-compile" not in text


@pytest.mark.parametrize("used, tuned_us", [("metaschedule", 40.0), ("fixed", None), (None, None)])
def test_a_kernel_s_tuned_time_is_the_one_tvm_tuned_runs(used, tuned_us):
    """Where tvm-tuned keeps the base schedule, the kernel's tuned time is the base's, not the
    tuner's slower best."""
    from pool_fusion_tuning.reports.kernel_classes import class_rows
    from pool_fusion_tuning.reports.model_report import _kernel_row

    kernel = {"name": "fused_matmul", "window": None, "outputs": 1, "calls": 2, "pattern": False}
    kernel |= {"rules": {}, "launches": {}}
    times = {
        "kernels": {
            "fused_matmul": {r: {"status": "ok", "kernel_us": 60.0} for r in ("default", "fixed")}
        }
    }
    found = {"best": "metaschedule", "kernel_us": 40.0 if used != "fixed" else 90.0, "used": used}
    tuned = {"base": "fixed", "kernels": {"fused_matmul": found}}
    row = _kernel_row(kernel, ["default", "fixed"], times, tuned)
    assert row["kernel_us"]["tuned"] == tuned_us
    report = {"settings": {"rule_lists": ["default", "fixed"]}, "kernels": [row], "peers": []}
    if tuned_us is not None:
        [matmul] = class_rows(report | {"tuned": tuned})
        assert matmul["tvm_ms"]["tuned"] == 2 * tuned_us / 1e3


def test_each_tuner_s_cell_says_which_candidate_was_its_best_and_the_row_its_flop_rate():
    found = {"best_kernel_us": 47.4, "trials": 128, "valid": 127, "best_trial": 97}
    kernel = {"kind": "matmul", "calls": 9, "default_us": 66.4, "fixed_us": 66.4}
    kernel |= {"metaschedule": found, "best": "metaschedule", "kernel_us": 47.4, "budget": 128}
    # 384 multiply-adds into each of 301056 outputs: 0.231 GFLOP in 47.4 us.
    analysed = {"name": "fused_matmul", "window": 384, "outputs": 301056, "calls": 9}
    analysed |= {"rules": {"default": "Matmul"}, "kernel_us": {"fixed": 66.4, "tuned": 47.4}}
    report = {
        "kernels": [analysed],
        "tuned": {"base": "fixed", "kernels": {"fused_matmul": kernel}},
    }
    row = next(line for line in tuned_section(report) if "fused_matmul" in line)
    assert "| 47.4 (127 of 128 valid, best at 97) |" in row
    late = "last quarter of the search: `fused_matmul` (metaschedule, 97 of 128)"
    assert late in "\n".join(tuned_section(report))
    found["best_trial"] = 96  # in the first three quarters: not named
    assert "last quarter" not in "\n".join(tuned_section(report))
    assert row.endswith("| metaschedule | 4.9 |")
    analysed["window"] = None  # its work unknown: no rate
    row = next(line for line in tuned_section(report) if "fused_matmul" in line)
    assert row.endswith("| metaschedule | — |")


def test_a_warm_started_search_says_how_many_candidates_came_from_where():
    begun = {"folder": "runs/h100", "kernel": "mm", "gpu": "NVIDIA H100 80GB HBM3", "records": 32}
    found = {"best_kernel_us": 20.0, "trials": 64, "valid": 64, "best_trial": 3}
    kernel = {"kind": "matmul", "calls": 9, "default_us": 66.4, "fixed_us": 66.4, "budget": 64}
    lacked = {**begun, "kernel": None, "records": 0}
    kernels = {
        k: kernel | {"metaschedule": found | {"warm_start": w}, "best": "metaschedule"}
        for k, w in (("mm", begun), ("conv", lacked))
    }
    text = "\n".join(tuned_section({"kernels": [], "tuned": {"base": "fixed", "kernels": kernels}}))
    assert "| 20.0 (64 of 64 valid, best at 3, 32 from warm start) |" in text
    assert "| 20.0 (64 of 64 valid, best at 3) |" in text  # the kernel the folder lacked
    said = (
        "Warm start from `runs/h100` (NVIDIA H100 80GB HBM3): it held 1 of the 2 kernels searched"
    )
    assert said in text
