"""One way in to the tuners: a new tuner is one subpackage and one registry line. A toy
random-search tuner (tests/fixtures/random_tuner), registered so, runs through the study
(`tune`), `tune sweep` and `tune model --tune-top`, on llvm with real builds of tiny graphs; no
subcommand names it."""

import pytest
from conftest import ROOT, read_json, tuners_only
from fixtures.random_tuner import RANDOM

from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.tuners.registry import TUNERS, tuners_for
from pool_fusion_tuning.tuning.tuners.spec import Role

QUICK = [
    *"--target llvm --processes 1 --blocks 1 --number 1 --repeat 1 --min-repeat-ms 0".split(),
    *"--warmup-s 0 --budget 2".split(),
]


@pytest.fixture
def only_random():
    with tuners_only(RANDOM):
        assert tuners_for(Role.SWEEP) == tuners_for(Role.TUNE_TOP) == [RANDOM.name]
        yield


def _valid(summary: dict) -> None:
    assert summary["trials"] == 2 and summary["valid"] >= 1 and summary["best_kernel_us"] > 0


def test_the_study_runs_a_registered_tuner_and_compares_its_arm(tmp_path, only_random):
    out = tmp_path / "run"
    case = ["--case", "channels=2", "height=12", "width=12", "branches=2"]
    args = ["--tuners", "random", "--arms", "serial,fixed", "--out", str(out)]
    assert main([*QUICK, *case, *args]) == 0
    _valid(read_json(out / "tuners" / "random" / "summary.json"))
    report = read_json(out / "report.json")
    assert set(report["arms"]) == {"serial", "fixed", "random"}
    assert all(arm["correct"] for arm in report["arms"].values())
    # Its ratio against the rule-made arm its spec names, with no edit to reports/.
    assert "fixed/random" in report["ratios"]
    assert "fixed/random" in (out / "report.md").read_text()


def test_the_sweep_runs_the_tuners_that_take_it(tmp_path, only_random):
    out = tmp_path / "sweep"
    tiny = ["--case", "tiny", "channels=2", "height=12", "width=12", "branches=2"]
    args = ["sweep", "--target", "llvm", "--budget", "2", "--processes", "1", "--blocks", "1"]
    assert main([*args, *tiny, "--out", str(out)]) == 0
    run = out / "tiny"
    assert read_json(run / "run.json")["tuners"] == ["random"]
    _valid(read_json(run / "tuners" / "random" / "summary.json"))
    assert read_json(run / "report.json")["arms"]["random"]["correct"]
    # The sweep's tables take their tuner columns from what the sweep recorded.
    assert read_json(out / "sweep.json")["tuners"] == {"random": "fixed"}
    assert "| fixed gap to random |" in (out / "sweep.md").read_text()


@pytest.mark.torch
def test_tune_top_runs_the_tuners_that_take_it(tmp_path, only_random, capsys):
    out = tmp_path / "model"
    model = f"{ROOT / 'tests' / 'fixtures' / 'model_blocks.py'}:dense_transition"
    # K beyond the model's one pattern kernel: one is tuned, and the progress line says one.
    args = ["model", model, *QUICK, "--peers", "torch-eager", "--tune-top", "3"]
    assert main([*args, "--out", str(out)]) == 0
    assert "1 kernel(s)" in capsys.readouterr().err
    summary = read_json(out / "report.json")["tuned"]["kernels"]["avg_pool2d"]
    _valid(summary["random"])
    assert (
        summary["best"] == "random" and summary["kernel_us"] == summary["random"]["best_kernel_us"]
    )
    assert read_json(out / "report.json")["arms"]["tvm-tuned"]["correct"]
    assert "| `avg_pool2d` |" in (out / "report.md").read_text()


def test_the_registry_is_put_back_in_its_order():
    before = list(TUNERS)
    with tuners_only(RANDOM):
        assert list(TUNERS) == [RANDOM.name]
    assert list(TUNERS) == before
