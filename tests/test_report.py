"""The report of a CUDA run, on CPU: a run folder written with known figures (the H200's, from
issue 12's table) and the H200's noise, rendered as `tune report` renders it."""

import json

import numpy as np
import pytest

from baselines.case import Case
from reports.markdown import render
from reports.summary import summarize_run
from tuning.design import block_orders, start_row
from tuning.harness import Protocol
from tuning.store import Run, write_json
from tuning.study import new_meta

# us: end to end through the call path, called from Python, GPU time with calls queued.
FIGURES = {
    "on": (107.4, 110.0, 107.3),
    "fixed": (13.5, 15.9, 7.80),
    "fixed+capture": (6.97, 8.4, 7.04),
    "torch-compile": (52.3, 52.6, 6.83),
    "torch-compile-max-autotune": (45.4, 45.7, 5.91),
    "torch-eager+capture": (29.6, 31.0, 29.7),
    "torch-compile+capture": (6.07, 7.5, 6.13),
    "torch-compile-max-autotune+capture": (5.98, 7.4, 5.95),
}
HOST_BOUND = {"fixed", "torch-compile", "torch-compile-max-autotune"}
REQUESTED = ["on", "fixed", "fixed+capture", "torch-compile", "torch-compile-max-autotune"]
TRIALS, BLOCKS, REPEAT = 3, 8, 5


def _trial(index, rng) -> dict:
    names = sorted(FIGURES)
    orders = block_orders(names, BLOCKS, start_row(index, len(names)))
    process = rng.normal(0, 0.10)  # shared by the host-bound arms in this process
    samples = {figure: {} for figure in ("call_path", "python_call", "gpu_queued")}
    for f, figure in enumerate(samples):
        for name in names:
            host = name in HOST_BOUND or figure == "python_call"
            sd = (0.08, 0.03) if host and figure != "gpu_queued" else (0.0005, 0.0005)
            shift = process if host and figure != "gpu_queued" else rng.normal(0, 0.0005)
            samples[figure][name] = [
                list(FIGURES[name][f] * np.exp(shift + rng.normal(0, sd[0])
                                               + rng.normal(0, sd[1], REPEAT)))
                for _ in range(BLOCKS)]
    checks = {name: {"correct": True, "max_abs_err": 0.0} for name in names}
    return {"trial": index, "format": 2, "checks": checks, "kernels": {},
            "design": {"arms": names, "rows": 8, "start_row": start_row(index, 8),
                       "blocks": BLOCKS, "positions": True, "carryover": True},
            "block_orders": orders, "block_samples_us": samples, "cuda_graph_launches": {}}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    names = [*REQUESTED, "torch-eager+capture", "torch-compile+capture",
             "torch-compile-max-autotune+capture"]
    identity = {"case": Case().to_dict(), "target": "cuda", "device": "NVIDIA H200 sm_90"}
    run = Run.create(tmp_path_factory.mktemp("h200") / "run", new_meta(
        Case(), {"kind": "cuda", "arch": "sm_90"}, identity,
        Protocol(trials=TRIALS, blocks=BLOCKS, repeat=REPEAT), [], 0, "tune ...", {}, names))
    run.update_meta(peers_added=names[len(REQUESTED):], peers_not_measured={})
    write_json(run.path / "environment.json", {"gpu": "NVIDIA H200"})  # a report needs one
    rng = np.random.default_rng(0)
    for index in range(TRIALS):
        run.save_trial(_trial(index, rng))
    return summarize_run(run)


def test_every_arm_has_three_figures(report):
    for name, (call_path, python_call, gpu) in FIGURES.items():
        figures = report["arms"][name]["figures"]
        assert figures["call_path"]["median_us"] == pytest.approx(call_path, rel=0.2)
        assert figures["python_call"]["median_us"] == pytest.approx(python_call, rel=0.2)
        assert figures["gpu_queued"]["median_us"] == pytest.approx(gpu, rel=0.01)


def test_pytorch_is_compared_like_for_like_in_every_figure(report):
    for figure, ratios in report["ratios_by_figure"].items():
        assert {"fixed+capture/torch-compile+capture", "fixed+capture/torch-eager+capture",
                "fixed/torch-compile", "fixed/torch-compile-max-autotune",
                "fixed+capture/torch-compile-max-autotune+capture"} <= set(ratios), figure
        assert "fixed/torch-compile+capture" not in ratios  # not like for like


def test_gpu_time_ratios_are_within_one_percent(report):
    for pair, ratio in report["ratios_by_figure"]["gpu_queued"].items():
        assert ratio["half_width"] < 0.01, pair
        top, bottom = pair.split("/")
        assert ratio["low"] <= FIGURES[top][2] / FIGURES[bottom][2] <= ratio["high"], pair


def test_the_verdicts_name_their_figure_and_say_where_pytorch_is_ahead(report):
    text = render(report)
    headline = text.split("\n\n")[1]
    assert ("Like for like (captured), `fixed+capture` against `torch-compile+capture`: "
            "end to end, called from Python: fixed+capture/torch-compile+capture = ") in headline
    sentence = headline.split("`fixed+capture` against `torch-compile+capture`: ")[1].split(". ")[0]
    assert sentence.count("`torch-compile+capture` is faster") == 2
    assert "GPU time, calls queued: fixed/torch-compile-max-autotune = " in headline
    assert "`torch-compile-max-autotune` (5.91 us) GPU time, calls queued." in headline
    assert "Added beside the TVM `+capture` arms" in text
    assert json.dumps(report)  # report.json is plain JSON
