"""Every source's best kernel side by side, from the committed H200 sweep (no TVM), some Cases
changed: inductor ahead, tied, not run, an arm wrong; a Case as a study naming the tuned
optimum."""

import json
import shutil

from conftest import read_json, stored_sweep

from pool_fusion_tuning.reports import markdown
from pool_fusion_tuning.reports.render import render_run
from pool_fusion_tuning.reports.sweep_report import render_sweep
from pool_fusion_tuning.runfolder.store import Run


def _change(path, change) -> None:
    report = read_json(path)
    change(report)
    path.write_text(json.dumps(report))


def _inductor_ahead(report):
    report["arms"]["torch-compile"]["queued_gpu_us"] = 1.5
    ahead = {"ratio": 1.6, "low": 1.5, "high": 1.7, "confidence": 0.95, "distinguishable": True}
    report["ratios_by_figure"]["gpu_queued"]["one-kernel/torch-compile"] = ahead


def _tied(report):
    tie = {"ratio": 1.0, "low": 0.99, "high": 1.01, "confidence": 0.95, "distinguishable": False}
    report["ratios_by_figure"]["gpu_queued"]["one-kernel/torch-compile"] = tie


def _no_inductor(report):
    report["arms"] = {k: v for k, v in report["arms"].items() if "torch" not in k}
    for figure, ratios in report["ratios_by_figure"].items():
        report["ratios_by_figure"][figure] = {k: v for k, v in ratios.items() if "torch" not in k}


def test_the_sweep_says_where_inductor_is_ahead_and_where_it_was_not_run(tmp_path):
    out, names = stored_sweep(tmp_path, None)
    _change(out / "issue" / "report.json", _inductor_ahead)
    _change(out / "channels64-no-prelude" / "report.json", _tied)
    _change(out / "tail1" / "report.json", _no_inductor)
    render_sweep(out, names)
    text = (out / "sweep.md").read_text()
    assert (
        "- Inductor (`torch-compile`) is faster than every TVM kernel on Case issue by 60 % "
        "(GPU time, calls queued, against `one-kernel`: one-kernel/torch-compile = 1.600 "
        "(95% CI 1.500–1.700))." in text
    )
    assert "- On Case channels64-no-prelude, TVM's fastest (`one-kernel`) and inductor" in text
    assert "inductor's time longer by: window3-stride2 157 %, " in text
    assert "- Inductor was not run on Case tail1 (it needs PyTorch and a GPU)." in text
    row = next(line for line in text.splitlines() if line.startswith("| tail1 | 98.54/"))
    # default, rule, optuna, one-kernel, optuna-one-kernel, inductor, fastest
    cells = [c.strip() for c in row.strip("|").split("|")][1:]
    assert cells[5] == "not run" and cells[-1] == "`optuna-one-kernel`"
    assert "| case | default `on` | rule `fixed` | `optuna` | `one-kernel` |" in text


def test_a_sweep_without_inductor_takes_every_figure_from_its_cases(tmp_path):
    out, names = stored_sweep(tmp_path, None)
    for name in names:
        _change(out / name / "report.json", _no_inductor)
    _change(out / "tail1" / "report.json", lambda r: r["arms"]["optuna"].update(median_us=None))
    sweep = render_sweep(out, names)
    text = (out / "sweep.md").read_text()
    assert "- Inductor was not run on any Case (it needs PyTorch and a GPU)." in text
    assert "| tail1 | 98.54/105.45 | 2.20/5.84 | wrong, not timed | 2.29/2.34 |" in text
    by_arm = {row["arm"]: row for row in sweep["cases"][0]["sources"]}
    report = read_json(out / "issue" / "report.json")
    tuned = report["tuners"]["optuna-one-kernel"]
    assert by_arm["optuna-one-kernel"]["kernel_us"] == tuned["best_kernel_us"]
    assert by_arm["one-kernel"]["kernel_us"] == tuned["fixed_kernel_us"]
    assert by_arm["fixed"]["gpu_us"] == report["arms"]["fixed"]["queued_gpu_us"]


def test_the_study_names_the_graph_s_tuned_optimum_of_both_kernels(tmp_path):
    out, _ = stored_sweep(tmp_path)  # the Case copied is rendered below
    run = tmp_path / "case"
    shutil.copytree(out / "window3-stride2", run)  # optuna-one-kernel is the fastest tuned arm
    report = render_run(Run(run))
    assert "fixed/optuna-one-kernel" in report["ratios"]
    text = (run / "report.md").read_text()
    assert (
        "the tuned optimum of the graph, the fastest tuned arm of both kernels (the fused pool "
        "kernel's and the whole graph's), is `optuna-one-kernel`: end to end, own call path, "
        "fixed/optuna-one-kernel = " in text.split("\n\n")[1]
    )
    assert "## Tuners (the fused pool kernel; `optuna-one-kernel`: the whole graph's" in text
    section = text.split("## Every source's best kernel, side by side")[1].split("\n## ")[0]
    assert "| tuned | `optuna-one-kernel` | whole |" in section
    assert "| inductor | `torch-compile` | own | — | 7.23 | 2.571 |" in section  # as measured
    _no_inductor(report)
    section = markdown.render(report).split("## Every source's best kernel, side by side")[1]
    assert "| inductor | `torch-compile` | own | not run | not run | — |" in section
    assert "Inductor was not run on this Case (it needs PyTorch and a GPU)." in section
    assert "fixed/optuna-one-kernel" in (run / "comment.md").read_text()
