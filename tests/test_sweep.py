"""`tune sweep` on llvm: a run per Case, a table across them, a resume measuring nothing."""

import json
import os
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
from conftest import ROOT, TUNE, one_line, python_without_tvm, read_json, stored_sweep, tune, within

from pool_fusion_tuning.reports.sweep_arms import sweep_tuners
from pool_fusion_tuning.reports.sweep_md import _inductor_table
from pool_fusion_tuning.reports.sweep_report import _case_row

CASES = "small-16x16,odd-23x29"
SWEEP = ["sweep", "--target", "llvm", "--budget", "3", "--cases", CASES, "--blocks", "1"]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "sweep"
    tune(*SWEEP, "--out", str(out), check_exit=0)
    return out


def test_each_case_is_a_run_with_every_arm_checked(sweep_dir):
    sweep = read_json(sweep_dir / "sweep.json")
    assert [c["case"] for c in sweep["cases"]] == CASES.split(",")
    for case in sweep["cases"]:
        report = read_json(sweep_dir / case["case"] / "report.json")
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
    rows = sweep["large_reductions"]  # the softmax's rows of 64: `fixed` gives RowReduction
    assert rows["softmax"]["fixed"] == {"fused_reduce_add": "RowReduction"}
    assert all(row["unchanged"] for name, row in rows.items() if name != "softmax")
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
    row = _case_row("a-case", report, {}, {})
    assert row["fixed_slower_than_on"] is slower
    assert row["one_kernel_slower_than_fixed"] is slower


def _render_without_tvm(out: Path, names: list[str], runs: list[str] = ()) -> None:
    python_without_tvm(f"""
from pathlib import Path
from pool_fusion_tuning.reports.render import render_run
from pool_fusion_tuning.reports.sweep_report import render_sweep
from pool_fusion_tuning.runfolder.store import Run
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
    """The H200 sweep without its Cases' rules: the table says so, other cells as committed."""
    stored = ROOT / "reports" / "h200" / "sweep"
    out, names = stored_sweep(tmp_path)
    for name in names:
        meta = read_json(out / name / "run.json")
        del meta["fused_kernel_rules"]
        (out / name / "run.json").write_text(json.dumps(meta))
    _render_without_tvm(out, names)
    rendered = (out / "sweep.md").read_text()
    assert rendered.count("| not recorded |") == 2 * len(names)
    assert (
        rendered.replace("| not recorded |", "| WindowReduction |")
        == (stored / "sweep.md").read_text()
    )


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_case_whose_tuner_measured_nothing_is_reported_and_the_sweep_fails(tmp_path, monkeypatch):
    from pool_fusion_tuning.tuning import study
    from pool_fusion_tuning.tuning.base.errors import TuningFailed
    from pool_fusion_tuning.tuning.cli.main import main

    def nothing_measured(name, *args):
        raise TuningFailed(f"{name} measured no valid candidate in 3 trials")

    monkeypatch.setattr(study, "run_tuner", nothing_measured)
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
    sweep = read_json(out / "sweep.json")
    (case,) = sweep["cases"]
    assert case["kernel_us"]["optuna"] is None and case["fixed_gap"] is None
    assert case["end_to_end_us"]["fixed"] > 0 and case["fixed_correct"]
    assert "odd-23x29" in sweep["tuner_failures"]
    assert "no tuned optimum" in (out / "sweep.md").read_text()


@pytest.mark.slow
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
    sweep = read_json(out / "sweep.json")
    assert [c["case"] for c in sweep["cases"]] == ["tiny-w3", "tiny-tail1"]
    shapes = {c["case"]: c["shape"] for c in sweep["cases"]}
    assert shapes["tiny-w3"]["window"] == 3 and shapes["tiny-w3"]["prelude"] is False
    assert shapes["tiny-tail1"]["tail"] == 1 and shapes["tiny-tail1"]["width"] == 8
    for name in shapes:
        report = read_json(out / name / "report.json")
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
    """A Case that ran `torch-compile` gets an inductor row; a slower verdict needs the interval."""
    out, _ = stored_sweep(tmp_path, ("issue",))
    report = read_json(out / "issue" / "report.json")
    meta = read_json(out / "issue" / "run.json")
    tuners = sweep_tuners(read_json(out / "sweep.json"))
    measured = _case_row("issue", report, meta, tuners)["inductor"]
    assert measured["gpu_us"]["torch-compile"] == report["arms"]["torch-compile"]["queued_gpu_us"]
    assert not measured["slower"]
    queued = {k: v for k, v in report["ratios_by_figure"]["gpu_queued"].items() if "torch" not in k}
    older = {**report, "ratios_by_figure": {"gpu_queued": queued}}
    assert "inductor" not in _case_row("issue", older, meta, tuners)  # a sweep without it
    report["arms"]["torch-compile"] = {"queued_gpu_us": 6.0}
    report["arms"]["torch-compile+capture"] = {"median_us": 6.1}
    ratio = {"ratio": 1.05, "low": 1.02, "high": 1.08}
    report["ratios_by_figure"]["gpu_queued"]["one-kernel/torch-compile"] = ratio
    case = _case_row("issue", report, meta, tuners)
    row = case["inductor"]
    assert row["gpu_us"]["torch-compile"] == 6.0 and row["slower"]
    assert row["captured_us"]["torch-compile"] == 6.1
    table = "\n".join(
        _inductor_table({"cases": [case], "one_kernel_slower_than_inductor": ["issue"]})
    )
    assert "| issue | 576 x 256 |" in table and "1.050 (1.020–1.080)" in table
    assert "slower than inductor by GPU time in: issue." in table
    report["ratios_by_figure"]["gpu_queued"]["one-kernel/torch-compile"]["low"] = 0.99
    assert not _case_row("issue", report, meta, tuners)["inductor"]["slower"]


def test_the_sweep_runs_inductor_on_cuda_with_pytorch():
    from pool_fusion_tuning.baselines.torch_peer import torch_available
    from pool_fusion_tuning.tuning.sweep import sweep_arms

    assert "torch-compile" not in sweep_arms("llvm")
    if torch_available():
        assert {"torch-compile", "torch-compile+capture"} <= set(sweep_arms("cuda"))


# Round 3: folders the sweep does not own, Case names and sizes, special files.


def _sweep(*args) -> int:
    from pool_fusion_tuning.tuning.cli.main import main

    return main(["sweep", "--target", "llvm", "--budget", "0", "--blocks", "1", *args])


def _foreign_run(folder: Path) -> None:
    (folder / "run.json").write_text('{"format": 1}')


FOREIGN = {
    "a user's sweep.md": lambda folder: (folder / "sweep.md").write_text("mine"),
    "a user's details.log": lambda folder: (folder / "details.log").write_text("mine"),
    "notes": lambda folder: (folder / "notes.txt").write_text("mine"),
    "a run folder": _foreign_run,
    "another tool's sweep.json": lambda folder: (folder / "sweep.json").write_text('{"a": 1}'),
    "sweep.json a FIFO": lambda folder: os.mkfifo(folder / "sweep.json"),
    "a folder": lambda folder: (folder / "data").mkdir(),
}


@pytest.mark.parametrize("plant", FOREIGN.values(), ids=FOREIGN)
def test_a_folder_that_is_not_a_sweep_s_is_refused_and_left_as_it_is(plant, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    plant(out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    code = _sweep("--cases", "small-16x16", "--out", str(out))
    one_line(capsys, code, f"{out} exists and is not a sweep folder", "choose another --out")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert len(list(out.iterdir())) == 1


def test_a_sweep_folder_is_known_by_its_marker_and_an_older_one_by_its_shape(sweep_dir, tmp_path):
    from pool_fusion_tuning.runfolder.records import SWEEP_KIND
    from pool_fusion_tuning.tuning.sweep import check_sweep_folder

    assert read_json(sweep_dir / "sweep.json")["kind"] == SWEEP_KIND
    check_sweep_folder(sweep_dir)
    older = tmp_path / "older"  # the H200 sweep without its marker, as sweeps before it
    older.mkdir()
    with tarfile.open(ROOT / "reports" / "h200" / "sweep" / "cases.tar.xz") as archive:
        stored = archive.extractfile("sweep/sweep.json")  # kept in the archive of its folder
        assert stored is not None
        unmarked = json.load(stored)
    del unmarked["kind"]
    (older / "sweep.json").write_text(json.dumps(unmarked))
    check_sweep_folder(older)
    stopped = tmp_path / "stopped"  # a sweep killed before it wrote its sweep.json
    stopped.mkdir()
    (stopped / "tune.lock").write_text("1\n")
    check_sweep_folder(stopped)
    check_sweep_folder(tmp_path / "new")


def test_a_marked_sweep_json_of_the_wrong_shape_is_damage_in_one_line(tmp_path, capsys):
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.json").write_text('{"kind": "tune sweep", "settings": []}')
    code = _sweep("--cases", "small-16x16", "--out", str(out))
    one_line(capsys, code, "sweep.json is damaged (settings should be an object, not a list)")


def test_a_case_report_of_the_wrong_shape_is_named_when_the_sweep_renders(tmp_path):
    """The H200 sweep's folders, one Case's report.json of another shape (no TVM needed)."""
    from pool_fusion_tuning.reports.sweep_report import render_sweep
    from pool_fusion_tuning.runfolder.store import RunError

    out, names = stored_sweep(tmp_path, ("issue",))
    report = read_json(out / names[0] / "report.json")
    (out / names[0] / "report.json").write_text(json.dumps({**report, "arms": []}))
    with pytest.raises(RunError, match=r"report.json is damaged \(arms should be an object"):
        render_sweep(out, names)


def test_the_sweep_s_tables_take_their_tuners_from_what_it_recorded(tmp_path):
    """A sweep.json recording one tuner: the tables name it alone."""
    from pool_fusion_tuning.reports.sweep_report import render_sweep

    out, _ = stored_sweep(tmp_path)
    recorded = read_json(out / "sweep.json")
    (out / "sweep.json").write_text(json.dumps({**recorded, "tuners": {"optuna": "fixed"}}))
    sweep = render_sweep(out, recorded["settings"]["cases"])
    assert all(
        list(c["kernel_us"]) == ["default", "fixed", "serial", "optuna", "one-kernel"]
        for c in sweep["cases"]
    )
    assert all(c["fixed_gap"] is not None and c["one_kernel_gap"] is None for c in sweep["cases"])
    text = (out / "sweep.md").read_text()
    assert "| fixed gap to optuna |" in text and "| kernel us: rule | gap |" in text


@pytest.mark.parametrize(
    "args, message",
    [
        *(
            (["--case", name, "channels=2"], f"case name '{name}' is a file the sweep writes")
            for name in ("sweep.md", "sweep.json", "sweep.png", "tune.lock", "details.log")
        ),
        (["--case", "issue", "channels=2"], "case name 'issue' is a built-in Case's"),
        (
            ["--case", "a", "channels=2", "--case", "a", "channels=3"],
            "case 'a' is given twice in --case",
        ),
        (
            ["--case", "big", "channels=200", "height=1024", "width=1024"],
            "case big: the Case needs about",
        ),
        (
            ["--case", "huge", "channels=100000", "height=4096", "width=4096"],
            "case huge: the Case's largest tensor",
        ),
        (["--cases", ""], "--cases is empty"),
        (["--cases", " , "], "unknown sweep case"),
    ],
)
def test_case_names_and_sizes_are_checked_before_anything_runs(args, message, tmp_path, capsys):
    out = tmp_path / "sweep"
    one_line(capsys, _sweep(*args, "--out", str(out)), message)
    assert not out.exists()


def test_a_name_in_the_cases_file_and_in_case_is_refused(tmp_path, capsys):
    (tmp_path / "cases.json").write_text('{"a": {"channels": 2}}')
    args = ["--cases-file", str(tmp_path / "cases.json"), "--case", "a", "channels=3"]
    code = _sweep(*args, "--out", str(tmp_path / "sweep"))
    one_line(capsys, code, f"case 'a' is given in {tmp_path / 'cases.json'} and in --case")


CASES_FILES = {
    "fifo": (lambda path: os.mkfifo(path), "is a FIFO, not a regular file"),
    "folder": (lambda path: path.mkdir(), "is a folder, not a regular file"),
    "deep json": (lambda path: path.write_text("[" * 200_000), "nested too deeply"),
    "deep toml": (
        lambda path: path.with_suffix(".toml").write_text("a = " + "[" * 200_000),
        "nested too deeply",
    ),
    "NaN": (lambda path: path.write_text('{"a": {"channels": NaN}}'), "NaN is not a number"),
    "a name twice": (
        lambda path: path.write_text('{"a": {"channels": 2}, "a": {"channels": 3}}'),
        "key 'a' is given twice",
    ),
    "built-in name": (
        lambda path: path.write_text('{"issue": {"channels": 2}}'),
        "case name 'issue' is a built-in Case's",
    ),
    "an output's name": (
        lambda path: path.write_text('{"sweep.md": {"channels": 2}}'),
        "case name 'sweep.md' is a file the sweep writes",
    ),
}


@pytest.mark.parametrize("make, message", CASES_FILES.values(), ids=CASES_FILES)
def test_a_cases_file_that_cannot_be_read_as_cases_is_one_line(make, message, tmp_path, capsys):
    path = tmp_path / "cases.json"
    make(path)
    path = path if path.exists() else path.with_suffix(".toml")
    with within(30):
        code = _sweep("--cases-file", str(path), "--out", str(tmp_path / "sweep"))
    one_line(capsys, code, message)
    assert not (tmp_path / "sweep").exists()


def test_a_cases_file_that_is_a_device_is_one_line(tmp_path, capsys):
    with within(30):
        code = _sweep("--cases-file", "/dev/zero", "--out", str(tmp_path / "sweep"))
    one_line(capsys, code, "/dev/zero is a character device, not a regular file")


@pytest.mark.slow
def test_a_sweep_stopped_by_sigterm_leaves_nothing_in_tmpdir(tmp_path):
    """Every temporary file of the command and its children goes in one folder, removed."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(
        [*TUNE, "sweep", "--target", "llvm", "--budget", "0", "--blocks", "1"]
        + ["--cases", "odd-23x29", "--out", str(tmp_path / "sweep")],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline, exporting = time.monotonic() + 600, False
    while time.monotonic() < deadline and process.poll() is None and not exporting:
        exporting = any(p.suffix in (".o", ".so") for p in scratch.rglob("*"))
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert exporting and process.returncode == 130, err[-2000:]
    assert "tune: interrupted" in err
    assert list(scratch.iterdir()) == []


def test_the_committed_stride1_cases_file_holds_the_swept_cases_and_they_stay_fit():
    """reports/h200/stride1/cases.toml reads, holds every Case sweep.md names, each a
    stride-1 Case without the prelude whose graph builds."""
    import re

    from pool_fusion_tuning.baselines.graph import build_graph
    from pool_fusion_tuning.tuning.sweep import user_cases

    folder = ROOT / "reports" / "h200" / "stride1"
    cases = user_cases(str(folder / "cases.toml"))
    swept = set(
        re.findall(
            r"^\| ([a-z0-9-]+) \| WindowReduction \|", (folder / "sweep.md").read_text(), re.M
        )
    )
    assert swept and swept <= set(cases)
    for case in cases.values():
        assert case.stride == 1 and not case.prelude
        build_graph(case)
