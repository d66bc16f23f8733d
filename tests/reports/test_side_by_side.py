"""Every source's best kernel side by side, from committed H200 folders (no TVM needed): the
sweep's table and its sentence on inductor, a Case where inductor is ahead and one where it was
not run, and a study whose tuners searched both kernels naming the graph's tuned optimum."""

import json
import shutil
import tarfile

import pytest
from conftest import ROOT

from reports.render import render_run
from reports.sweep import render_sweep
from tuning.runfolder.store import Run

STORED = ROOT / "reports" / "h200"


def _sweep(tmp_path, archive: str):
    with tarfile.open(STORED / archive / "cases.tar.xz") as stored:
        stored.extractall(tmp_path, filter="data")
    out = tmp_path / "sweep"
    return out, json.loads((out / "sweep.json").read_text())["settings"]["cases"]


def _write(path, data):
    path.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def inductor_sweep(tmp_path_factory):
    """The committed inductor sweep, its Case `issue` changed so that inductor is ahead of
    every TVM source, and inductor left out of Case `tail1`."""
    out, names = _sweep(tmp_path_factory.mktemp("inductor"), "inductor")
    path = out / "issue" / "report.json"
    report = json.loads(path.read_text())
    report["arms"]["torch-compile"]["queued_gpu_us"] = 1.5
    ahead = {"ratio": 1.6, "low": 1.5, "high": 1.7, "confidence": 0.95, "distinguishable": True}
    report["ratios_by_figure"]["gpu_queued"]["one-kernel/torch-compile"] = ahead
    _write(path, report)
    path = out / "tail1" / "report.json"
    report = json.loads(path.read_text())
    for name in [n for n in report["arms"] if n.startswith("torch-compile")]:
        del report["arms"][name]
    for ratios in report["ratios_by_figure"].values():
        for pair in [p for p in ratios if "torch-compile" in p]:
            del ratios[pair]
    report["ratios"] = report["ratios_by_figure"].get("call_path", {})
    _write(path, report)
    sweep = render_sweep(out, names)
    return sweep, (out / "sweep.md").read_text()


def test_the_sweep_says_where_inductor_is_ahead_of_every_tvm_kernel(inductor_sweep):
    sweep, text = inductor_sweep
    issue = next(c for c in sweep["cases"] if c["case"] == "issue")
    assert issue["inductor_ahead"]["tvm"] == "one-kernel"  # TVM's fastest by GPU time
    assert (
        "- Inductor (`torch-compile`) is faster than every TVM kernel on Case issue by 60 % "
        "(GPU time, calls queued, against `one-kernel`: one-kernel/torch-compile = 1.600 "
        "(95% CI 1.500–1.700))." in text
    )
    # the Cases left as measured keep their verdicts (inductor behind, or a tie)
    assert "TVM is ahead of inductor (`torch-compile`) on Case window3-stride2" in text
    assert "On Case no-prelude, TVM's fastest (`one-kernel`) and inductor" in text


def test_a_source_the_sweep_did_not_measure_is_said_not_run(inductor_sweep):
    sweep, text = inductor_sweep
    row = next(line for line in text.splitlines() if line.startswith("| tail1 | — / "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # default, rule, optuna (budget 0), one-kernel, optuna-one-kernel, inductor, fastest
    assert cells[3] == cells[5] == cells[6] == "not run"
    assert cells[4].startswith("— / ") and cells[-1] == "`one-kernel`"
    assert "- Inductor was not run on Case tail1 (it needs PyTorch and a GPU)." in text
    tail1 = next(c for c in sweep["cases"] if c["case"] == "tail1")
    assert tail1["inductor_ahead"] is None
    assert "| case | default `on` | rule `fixed` | `optuna` | `one-kernel` |" in text


def test_a_sweep_without_inductor_says_so_once(tmp_path):
    """The committed sweep with tuners (no PyTorch then): every figure from the Cases' reports;
    an arm measured wrong is said so, not `not run`."""
    out, names = _sweep(tmp_path, "sweep")
    wrong = json.loads((out / "tail1" / "report.json").read_text())
    wrong["arms"]["optuna"].update(correct=False, median_us=None)  # as a wrong arm is stored
    _write(out / "tail1" / "report.json", wrong)
    sweep = render_sweep(out, names)
    text = (out / "sweep.md").read_text()
    assert "- Inductor was not run on any Case (it needs PyTorch and a GPU)." in text
    assert "| tail1 | 99.36 / 105.62 | 2.31 / 6.15 | wrong, not timed | 2.24 / 2.54 |" in text
    issue = next(c for c in sweep["cases"] if c["case"] == "issue")
    by_arm = {row["arm"]: row for row in issue["sources"]}
    report = json.loads((out / "issue" / "report.json").read_text())
    tuned = report["tuners"]["optuna-one-kernel"]
    assert by_arm["optuna-one-kernel"]["kernel_us"] == tuned["best_kernel_us"]
    assert by_arm["one-kernel"]["kernel_us"] == tuned["fixed_kernel_us"]
    assert by_arm["fixed"]["gpu_us"] == report["arms"]["fixed"]["queued_gpu_us"]
    assert by_arm["torch-compile"]["ran"] is False


def test_the_study_names_the_graph_s_tuned_optimum_of_both_kernels(tmp_path):
    """A Case of the committed sweep, rendered as a study: `optuna-one-kernel` is the fastest
    tuned arm end to end, so the tuned optimum the candidate is held against is it."""
    out, _ = _sweep(tmp_path, "sweep")
    run = tmp_path / "case"
    shutil.copytree(out / "window3-stride2", run)
    report = render_run(Run(run))
    assert "fixed/optuna-one-kernel" in report["ratios"]
    text = (run / "report.md").read_text()
    paragraph = text.split("\n\n")[1]
    assert (
        "the tuned optimum of the graph, the fastest tuned arm of both kernels (the fused pool "
        "kernel's and the whole graph's), is `optuna-one-kernel`: end to end, own call path, "
        "fixed/optuna-one-kernel = " in paragraph
    )
    assert (
        "## Tuners (the fused pool kernel; `optuna-one-kernel`: the whole graph's one kernel"
        in (text)
    )
    section = text.split("## Every source's best kernel, side by side")[1].split("\n## ")[0]
    assert "| tuned | `optuna-one-kernel` | whole |" in section
    assert "| inductor | `torch-compile` | own | not run | not run | — |" in section
    assert "Inductor was not run on this Case (it needs PyTorch and a GPU)." in section
    assert "fixed/optuna-one-kernel" in (run / "comment.md").read_text()
