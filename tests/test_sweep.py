"""`tune sweep` on llvm: one run per Case, a table across them, and a resume that re-measures
nothing. (On llvm `fixed` equals `on`: the rule is a GPU rule; its rule choice is still shown.
`one-kernel` is one kernel on llvm too, unscheduled.)"""

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, python_without_tvm, tune

from reports.sweep import _case_row
from reports.sweep_md import _inductor_table

CASES = "small-16x16,odd-23x29"
SWEEP = ["sweep", "--target", "llvm", "--budget", "3", "--cases", CASES, "--blocks", "1"]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "sweep"
    tune(*SWEEP, "--out", str(out), check_exit=0)
    return out


def test_each_case_is_a_run_with_every_arm_checked(sweep_dir):
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert [c["case"] for c in sweep["cases"]] == CASES.split(",")
    for case in sweep["cases"]:
        report = json.loads((sweep_dir / case["case"] / "report.json").read_text())
        assert set(report["arms"]) == {
            "partial",
            "on",
            "fixed",
            "serial",
            "one-kernel",
            "optuna",
            "optuna-one-kernel",
        }
        assert all(arm["correct"] for arm in report["arms"].values())
        assert case["rule"] and set(case["rule"].values()) == {"WindowReduction"}
        assert set(case["one_kernel_rule"].values()) == {"WindowReduction"}
        assert all(
            case["kernel_us"][k] > 0
            for k in ("default", "fixed", "serial", "optuna", "one-kernel", "optuna-one-kernel")
        )
        assert case["fixed_gap"] == pytest.approx(
            case["kernel_us"]["fixed"] / case["kernel_us"]["optuna"] - 1
        )
        assert case["one_kernel_gap"] == pytest.approx(
            case["kernel_us"]["one-kernel"] / case["kernel_us"]["optuna-one-kernel"] - 1
        )
        assert case["one_kernel_over_fixed"]["ratio"] > 0
        assert case["fixed_slower_than_on"] == _above_one(case["fixed_over_on"])
        assert case["one_kernel_slower_than_fixed"] == _above_one(case["one_kernel_over_fixed"])
    assert sweep["fixed_slower_than_on"] == [
        c["case"] for c in sweep["cases"] if _above_one(c["fixed_over_on"])
    ]
    assert all(row["unchanged"] for row in sweep["large_reductions"].values())
    assert (sweep_dir / "sweep.md").exists() and (sweep_dir / "sweep.png").exists()
    assert "## One kernel for the whole graph" in (sweep_dir / "sweep.md").read_text()


def _above_one(ratio: dict) -> bool:
    """The whole interval above 1 (none without an interval)."""
    return ratio.get("low") is not None and ratio["low"] > 1


@pytest.mark.parametrize(
    "low, high, slower",
    [(1.02, 1.1, True), (0.97, 1.1, False), (0.9, 0.95, False), (None, None, False)],
)
def test_a_case_is_slower_only_where_the_whole_interval_is_above_one(low, high, slower):
    ratio = {} if low is None else {"ratio": (low + high) / 2, "low": low, "high": high}
    report = {
        "case": {},
        "device": "a device",
        "arms": {},
        "tuners": {},
        "ratios": {"fixed/on": ratio, "one-kernel/fixed": ratio},
    }
    row = _case_row("a-case", report, {})
    assert row["fixed_slower_than_on"] is slower
    assert row["one_kernel_slower_than_fixed"] is slower


def _render_without_tvm(out: Path, names: list[str], runs: list[str] = ()) -> None:
    python_without_tvm(f"""
from pathlib import Path
from reports.render import render_run
from reports.sweep import render_sweep
from tuning.runfolder.store import Run
out = Path({str(out)!r})
for name in {list(runs)!r}:
    render_run(Run(out / name))
render_sweep(out, {names!r})
""")


def test_the_sweep_and_its_cases_render_the_same_without_tvm(sweep_dir, tmp_path):
    copy = tmp_path / "sweep"
    shutil.copytree(sweep_dir, copy)
    _render_without_tvm(copy, CASES.split(","), runs=CASES.split(","))
    for name in (
        "sweep.md",
        "sweep.json",
        *(f"{case}/report.{kind}" for case in CASES.split(",") for kind in ("md", "json")),
    ):
        assert (copy / name).read_text() == (sweep_dir / name).read_text(), name


def test_a_sweep_stored_before_rules_were_recorded_renders_without_tvm(tmp_path):
    """The H200 sweep (reports/h200/sweep/): its cases' folders hold no rules; the table says
    so, and every other cell is as committed."""
    stored = ROOT / "reports" / "h200" / "sweep"
    with tarfile.open(stored / "cases.tar.xz") as archive:
        archive.extractall(tmp_path, filter="data")
    out = tmp_path / "sweep"
    shutil.copy(stored / "sweep.json", out / "sweep.json")
    names = json.loads((out / "sweep.json").read_text())["settings"]["cases"]
    _render_without_tvm(out, names)
    rendered = (out / "sweep.md").read_text()
    assert rendered.count("| not recorded |") == 2 * len(names)
    assert (
        rendered.replace("| not recorded |", "| WindowReduction |")
        == (stored / "sweep.md").read_text()
    )


def test_running_the_sweep_again_measures_nothing(sweep_dir):
    trial = sweep_dir / "small-16x16" / "trials" / "trial_0.json"
    before = trial.read_bytes()
    done = tune(*SWEEP, "--out", str(sweep_dir), "--verbose", check_exit=0)
    assert done.stderr.count("already measured, kept") == 2
    assert trial.read_bytes() == before


def test_a_sweep_folder_with_other_settings_is_refused(sweep_dir):
    done = tune(*SWEEP[:-2], "--blocks", "2", "--out", str(sweep_dir), check_exit=2)
    assert "other settings" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_unknown_sweep_case_is_one_line_and_exit_2():
    done = tune("sweep", "--cases", "issue,nope", check_exit=2)
    assert "unknown sweep case 'nope'" in done.stderr


def test_a_case_whose_tuner_measured_nothing_is_reported_and_the_sweep_fails(tmp_path, monkeypatch):
    from tuning import study
    from tuning.cli.main import main
    from tuning.errors import TuningFailed

    def nothing_measured(name, *args):
        raise TuningFailed(f"{name} measured no valid candidate in 3 trials")

    monkeypatch.setattr(study, "tuned_arm", nothing_measured)
    out = tmp_path / "sweep"
    assert (
        main(
            [
                "sweep",
                "--target",
                "llvm",
                "--budget",
                "3",
                "--cases",
                "odd-23x29",
                "--blocks",
                "1",
                "--out",
                str(out),
            ]
        )
        == 1
    )
    sweep = json.loads((out / "sweep.json").read_text())
    (case,) = sweep["cases"]
    assert case["kernel_us"]["optuna"] is None and case["fixed_gap"] is None
    assert case["end_to_end_us"]["fixed"] > 0 and case["fixed_correct"]
    assert "odd-23x29" in sweep["tuner_failures"]
    assert "no tuned optimum" in (out / "sweep.md").read_text()


def test_the_users_own_cases_from_a_file_and_from_case_groups(tmp_path):
    cases = tmp_path / "cases.toml"
    cases.write_text(
        "[tiny-w3]\nchannels = 2\nheight = 9\nwidth = 11\nwindow = 3\nstride = 1\nprelude = false\n"
    )
    out = tmp_path / "sweep"
    tune(
        "sweep",
        "--target",
        "llvm",
        "--budget",
        "0",
        "--blocks",
        "1",
        "--cases-file",
        str(cases),
        "--case",
        "tiny-tail1",
        "channels=2",
        "height=8",
        "width=8",
        "tail=1",
        "--out",
        str(out),
        check_exit=0,
    )
    sweep = json.loads((out / "sweep.json").read_text())
    assert [c["case"] for c in sweep["cases"]] == ["tiny-w3", "tiny-tail1"]
    shapes = {c["case"]: c["shape"] for c in sweep["cases"]}
    assert shapes["tiny-w3"]["window"] == 3 and shapes["tiny-w3"]["prelude"] is False
    assert shapes["tiny-tail1"]["tail"] == 1 and shapes["tiny-tail1"]["width"] == 8
    for name in shapes:
        report = json.loads((out / name / "report.json").read_text())
        assert all(arm["correct"] for arm in report["arms"].values())


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("cases.json", '{"a": {"windw": 3}}', "unknown case key 'windw'"),
        ("cases.json", '{"a": {"window": "3"}}', "window must be an integer"),
        ("cases.json", '{"../escape": {"window": 3}}', "case name '../escape'"),
        ("cases.json", "[1, 2]", "one table of case fields per name"),
        ("cases.toml", "[a\nwindow = 3", "cannot read the Cases file"),
        ("missing.json", None, "cannot read the Cases file"),
    ],
)
def test_a_bad_cases_file_is_one_line_and_exit_2(tmp_path, name, text, message):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    done = tune(
        "sweep",
        "--target",
        "llvm",
        "--cases-file",
        str(path),
        "--out",
        str(tmp_path / "sweep"),
        check_exit=2,
    )
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "sweep").exists()


def test_one_kernel_is_held_against_inductor_where_the_sweep_ran_it(tmp_path):
    """A Case that ran `torch-compile` (a GPU with PyTorch) gets a row in the inductor table,
    by GPU time with calls queued and captured whole; a slower verdict needs the interval."""
    stored = ROOT / "reports" / "h200" / "sweep"
    with tarfile.open(stored / "cases.tar.xz") as archive:
        archive.extractall(tmp_path, filter="data")
    report = json.loads((tmp_path / "sweep" / "issue" / "report.json").read_text())
    meta = json.loads((tmp_path / "sweep" / "issue" / "run.json").read_text())
    assert "inductor" not in _case_row("issue", report, meta)  # an older sweep: no inductor
    report["arms"]["torch-compile"] = {"queued_gpu_us": 6.0}
    report["arms"]["torch-compile+capture"] = {"median_us": 6.1}
    ratio = {"ratio": 1.05, "low": 1.02, "high": 1.08}
    report["ratios_by_figure"]["gpu_queued"]["one-kernel/torch-compile"] = ratio
    case = _case_row("issue", report, meta)
    row = case["inductor"]
    assert row["gpu_us"]["torch-compile"] == 6.0 and row["slower"]
    assert row["captured_us"]["torch-compile"] == 6.1
    table = "\n".join(
        _inductor_table({"cases": [case], "one_kernel_slower_than_inductor": ["issue"]})
    )
    assert "| issue | 576 x 256 |" in table and "1.050 (1.020–1.080)" in table
    assert "slower than inductor by GPU time in: issue." in table
    report["ratios_by_figure"]["gpu_queued"]["one-kernel/torch-compile"]["low"] = 0.99
    assert not _case_row("issue", report, meta)["inductor"]["slower"]


def test_the_sweep_runs_inductor_on_cuda_with_pytorch():
    from baselines.torch_peer import torch_available
    from tuning.sweep import sweep_arms

    assert "torch-compile" not in sweep_arms("llvm")
    if torch_available():
        assert {"torch-compile", "torch-compile+capture"} <= set(sweep_arms("cuda"))
