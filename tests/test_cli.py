"""The `tune` command on CPU: a whole run, resume, re-rendering, and every bad input."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, SMALL, one_line, read_json, tune

# The issue's four and the candidate fix; with PyTorch, a CPU run times torch.compile too.
ISSUE_AND_FIX = ["off", "partial", "on", "serial", "fixed"]
CPU_DEFAULT = {*ISSUE_AND_FIX, *(["torch-compile"] if importlib.util.find_spec("torch") else [])}

# Two blocks of two samples per trial, a 16 x 16 graph.
FAST = [
    *"--target llvm --processes 2 --blocks 2 --number 2 --repeat 2 --min-repeat-ms 1".split(),
    *"--warmup-s 0 --case channels=2 height=16 width=16 branches=2".split(),
]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "run"
    # a CPU's default arms without PyTorch
    tune("--budget", "0", "--out", str(out), *FAST, "--arms", ",".join(ISSUE_AND_FIX), check_exit=0)
    return out


def test_budget_zero_run_writes_the_report(finished_run):
    report = read_json(finished_run / "report.json")
    assert set(report["arms"]) == set(ISSUE_AND_FIX)
    assert set(report["figures"]) == {"call_path", "python_call"}  # llvm: no GPU time
    for arm in report["arms"].values():
        assert arm["correct"] is True and arm["max_abs_err"] == 0
        assert arm["median_us"] > 0 and arm["iqr_us"] >= 0 and arm["cv"] >= 0
        assert arm["kernels"] == []  # llvm: no CUDA kernels
        assert arm["queued_gpu_us"] is None  # nor a GPU time
        for figure in arm["figures"].values():
            assert figure["median_us"] > 0 and len(figure["trial_medians_us"]) == 2
            assert set(figure["noise"]) >= {"within_call", "between_blocks", "between_processes"}
    assert {"tvm", "tvm_ffi", "python", "os", "target"} <= set(report["environment"])
    assert report["case"]["channels"] == 2
    assert set(report["ratios"]) == {"on/off", "on/partial", "serial/on", "fixed/on"}
    assert report["ratios_by_figure"]["call_path"] == report["ratios"]
    for ratios in report["ratios_by_figure"].values():
        for ratio in ratios.values():
            assert ratio["low"] <= ratio["ratio"] <= ratio["high"]
            assert ratio["unit"] == "trials" and ratio["units"] == 2
    method = report["ratio_method"]
    assert "Student-t" in method["method"] and method["trials"] == 2
    assert set(method["coverage"]) == {"host", "gpu", "gpu-time"}
    markdown = (finished_run / "report.md").read_text()
    assert "on/off" in markdown and "| `serial` |" in markdown
    for section in (
        "## Paired ratios",
        "## Noise by level",
        "## Order of the blocks",
        "Coverage verified by simulating",
        "end to end, called from Python",
    ):
        assert section in markdown
    # The two blocks are part of a cycle of the design, and the report says so.
    assert "not whole cycles of the design" in markdown
    # No GPU here: the peers not measured are named.
    assert "Not measured: " in markdown and "`torch-compile+capture`" in markdown
    assert (finished_run / "report.csv").read_text().startswith("arm,median_us")
    assert (finished_run / "arms.png").stat().st_size > 0
    assert len(list((finished_run / "ir" / "on").glob("*_FuseTIR.py"))) == 1


def test_all_samples_and_block_orders_are_kept(finished_run):
    trials = sorted((finished_run / "trials").glob("trial_*.json"))
    assert len(trials) == 2
    records = [read_json(path) for path in trials]
    for record in records:
        assert len(record["block_orders"]) == 2  # --blocks 2
        assert all(
            sorted(order) == ["fixed", "off", "on", "partial", "serial"]
            for order in record["block_orders"]
        )
        for figure in ("call_path", "python_call"):
            for blocks in record["block_samples_us"][figure].values():
                assert [len(block) for block in blocks] == [2, 2]  # blocks x repeat
    # Trials start at different rows of the design.
    assert records[0]["block_orders"][0] != records[1]["block_orders"][0]
    # Arms are built before the trials, each trial loads them; trial 0 keeps the build times.
    for record in records:
        assert sorted(record["wall_s"]["libraries_loaded"]) == sorted(record["checks"])
    assert set(records[0]["wall_s"]["build_s"]) == set(records[0]["checks"])
    assert all(seconds > 0 for seconds in records[0]["wall_s"]["build_s"].values())
    assert records[0]["kernels"] == {} and records[0]["cuda_graph_launches"] == {}  # llvm
    meta = read_json(finished_run / "run.json")
    walls = meta["phase_wall_s"]
    assert walls["arm builds"] > 0
    # The run's wall time counts from the process's start: its setup (TVM's import) is in it.
    assert walls["setup"] > 0
    assert meta["wall_s"] >= walls["setup"] + walls["tuning"] + walls["comparison"]
    # Each trial process's start, wait (no CUDA context) and where its time went.
    for record in records:
        walls = record["wall_s"]
        assert walls["startup_s"] > 0 and walls["waited_s"] >= 0
        assert walls["compiler_import_s"] >= 0 and record["cuda_before_trial"] is False
        assert set(walls["load_s"]) == set(walls["check_by_arm_s"]) == set(record["checks"])
        assert walls["warmup_s"] >= 0 and walls["timing_s"] > 0
        assert set(walls["timing_by_arm_s"]) == set(record["checks"])
        assert sum(walls["timing_by_arm_s"].values()) <= walls["timing_s"]
    section = (finished_run / "report.md").read_text().split("## Wall time")[1]
    assert "Where each trial's time went" in section and "| timing: every arm's" in section
    assert "Timing by arm, all its figures, summed over trials: `" in section


def test_report_is_rerendered_from_the_stored_run(finished_run):
    before = read_json(finished_run / "report.json")
    (finished_run / "report.json").unlink()
    tune("report", str(finished_run), check_exit=0)
    assert read_json(finished_run / "report.json")["arms"] == before["arms"]


def test_a_run_recorded_before_blocks_were_kept_still_renders(finished_run, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(finished_run, old)
    for path in (old / "trials").glob("trial_*.json"):
        record = read_json(path)
        flat = {
            arm: [s for block in blocks for s in block]
            for arm, blocks in record.pop("block_samples_us")["call_path"].items()
        }
        for key in ("design", "block_orders", "format"):
            record.pop(key)
        path.write_text(json.dumps({**record, "samples_us": flat, "queued_gpu_us": {}}))
    tune("report", str(old), check_exit=0)
    report = read_json(old / "report.json")
    assert set(report["figures"]) == {"call_path"}
    assert report["ratios"]["serial/on"]["units"] == 2


@pytest.mark.slow
def test_resume_measures_only_what_is_missing(finished_run):
    kept = (finished_run / "trials" / "trial_0.json").read_text()
    os.remove(finished_run / "trials" / "trial_1.json")  # as if interrupted before trial 1 ended
    tune("--resume", str(finished_run), check_exit=0)
    assert (finished_run / "trials" / "trial_0.json").read_text() == kept
    assert (finished_run / "trials" / "trial_1.json").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--target", "cuda"], "needs a CUDA GPU and none is visible; use --target llvm"),
        (["--target", "rocm"], "unknown target 'rocm'"),
        (["--case", "window=99"], "window 99 is larger than the input"),
        (["--case", "colour=1"], "unknown case key 'colour'"),
        (["--budget", "-1"], "--budget must be between 0 and"),
        (["--blocks", "0"], "argument --blocks: takes auto or an integer >= 1"),
        (["--tuners", "autotvm"], "unknown tuner 'autotvm'"),
        (["--budget", "zero"], "argument --budget: takes an integer in digits 0-9, got 'zero'"),
        (["--sampler", "bayes"], "invalid choice: 'bayes'"),
        (["--out", "/etc/hostname/run"], "cannot write the run folder"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    done = tune("--target", "llvm", *args)  # a --target in args overrides this one
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--warmup-s", "inf"], "argument --warmup-s: takes a number in digits 0-9, got 'inf'"),
        (["--warmup-s", "nan"], "argument --warmup-s: takes a number in digits 0-9, got 'nan'"),
        (["--warmup-s", "1e999"], "--warmup-s must be between 0 and 3600, got inf"),
        (["--seed", "-1"], "--seed must be between 0 and 2147483647, got -1"),
        (["--processes", "0"], "--processes must be between 1 and 1000"),
        (["--tuners", "", "--budget", "3"], "--tuners names no tuner and --budget is 3"),
        (["--case", "channels=\u0661\u0662"], "channels must be an integer (digits 0-9)"),
        (["--case", "channels=1_0"], "channels must be an integer (digits 0-9)"),
        (["--case", "channels=100000", "height=4096", "width=4096"], "TVM indexes with int32"),
        (["--out", "x" * 300], "the run folder name is too long"),
        (["--out", "run-\udcff"], "is not valid UTF-8"),
        (["--storage-password-env", "1X"], "takes the name of an environment variable"),
    ],
)
def test_bad_values_are_refused_before_anything_is_written(
    args, message, tmp_path, capsys, monkeypatch
):
    from pool_fusion_tuning.tuning.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["--target", "llvm", "--budget", "0", *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_an_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    done = tune("--out", str(tmp_path / "notes.txt"), *FAST)
    assert done.returncode == 2 and "exists and is not a folder" in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--budget", "7"], "--budget 7 differs from the run's (0)"),
        (["--processes", "5"], "--processes 5 differs from the run's (2)"),
        (
            ["--arms", "off,on"],
            "--arms off,on differs from the run's (off,partial,on,serial,fixed)",
        ),
        (["--tuners", "optuna"], "--tuners optuna differs from the run's (none)"),
        (["--out", "elsewhere"], "--out starts a new run and --resume finishes one"),
    ],
)
def test_a_resume_refuses_options_that_change_the_run(finished_run, args, message, capsys):
    from pool_fusion_tuning.tuning.cli.main import main

    assert main(["--resume", str(finished_run), *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_out_that_is_not_a_run_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    done = tune("--out", str(tmp_path), *FAST)
    assert done.returncode == 2 and "exists and is not a run folder" in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_resume_of_a_run_for_another_case_is_refused(finished_run):
    done = tune("--resume", str(finished_run), "--case", "window=3")
    assert done.returncode == 2 and "was made for another case" in done.stderr


def test_resume_on_another_device_is_refused(finished_run):
    meta = read_json(finished_run / "run.json")
    meta["identity"]["device"] = "NVIDIA H200 sm_90"
    (finished_run / "run.json").write_text(json.dumps(meta))
    done = tune("--resume", str(finished_run))
    assert done.returncode == 2 and "was made for another device" in done.stderr


def test_resume_of_a_folder_that_is_not_a_run(tmp_path):
    done = tune("--resume", str(tmp_path))
    assert done.returncode == 2 and "is not a run folder" in done.stderr


@pytest.mark.slow
def test_optuna_run_reports_tuner_and_exhaustive_optimum(tmp_path):
    out = tmp_path / "run"
    tune(
        "--budget",
        "6",
        "--tuners",
        "optuna",
        "--exhaustive",
        "--out",
        str(out),
        *FAST,
        "--processes",
        "1",
        check_exit=0,
    )
    report = read_json(out / "report.json")
    optuna = report["tuners"]["optuna"]
    assert optuna["trials"] == 6 and optuna["valid"] == 6 and optuna["failed_by_reason"] == {}
    assert optuna["best_kernel_us"] >= optuna["exhaustive_best_kernel_us"] > 0
    assert 1 <= optuna["best_trial"] <= 6
    assert set(optuna["sampler_replay"]) == {"tpe", "random"}
    assert report["arms"]["optuna"]["correct"] is True
    # Where the tuner's time went, from its loop, its builders and its measuring process.
    spent = optuna["time_spent"]
    assert spent["asks"] >= 6 and spent["ask_s"] > 0 and spent["storage_s"] > 0
    assert spent["builds"] >= 6 and spent["build_cpu_s"] > 0 and spent["device_s"] > 0
    assert spent["measured"] >= 1 and spent["wait_s"] > 0
    section = (out / "report.md").read_text().split("## Wall time")[1]
    assert "Where each tuner's time went" in section
    assert "| asking the sampler (Optuna's ask, with the storage writes it makes) | " in section
    # The tuned arm is built as returned and loaded with TVM's other arms (peers load none).
    trial = read_json(out / "trials" / "trial_0.json")
    meta = read_json(out / "run.json")
    tvm_arms = [arm["name"] for arm in meta["arms"] if not arm.get("peer")]
    assert "optuna" in tvm_arms
    assert sorted(trial["wall_s"]["libraries_loaded"]) == sorted(tvm_arms)
    rows = read_json(out / "tuners" / "optuna" / "trials.json")
    assert rows[0]["params"]["outputs_w"] == 1 and rows[0]["params"]["outputs_h"] == 1  # SERIAL
    assert (out / "best_so_far.png").exists()
    assert "Exhaustive optimum of the space" in (out / "report.md").read_text()
    # The study opens in Optuna's own tools as it is (optuna-dashboard takes the same URL).
    import optuna as optuna_library
    import optuna.visualization.matplotlib as plots

    study = optuna_library.load_study(
        study_name="fused-pool", storage=f"sqlite:///{out / 'tuners' / 'optuna' / 'study.db'}"
    )
    assert len(study.trials) >= 6 and study.best_value == pytest.approx(optuna["best_kernel_us"])
    assert plots.plot_optimization_history(study) is not None


@pytest.mark.slow
def test_a_tuner_that_measured_nothing_fails_the_run_but_keeps_the_arms(tmp_path, monkeypatch):
    from pool_fusion_tuning.tuning import study
    from pool_fusion_tuning.tuning.base.errors import TuningFailed
    from pool_fusion_tuning.tuning.cli.main import main

    def nothing_measured(name, *args):
        raise TuningFailed(f"{name} measured no valid candidate in 3 trials: {{'build error': 3}}")

    monkeypatch.setattr(study, "run_tuner", nothing_measured)
    out = tmp_path / "run"
    assert (
        main(["--budget", "3", "--tuners", "optuna", "--out", str(out), *FAST, "--processes", "1"])
        == 1
    )
    report = read_json(out / "report.json")
    assert set(report["arms"]) == CPU_DEFAULT
    assert "measured no valid candidate" in report["tuner_failures"]["optuna"]
    assert "Tuner `optuna` gave no arm" in (out / "report.md").read_text()


def test_the_default_arms_carry_the_fix_and_on_cuda_the_one_kernel_with_its_fair_peers(
    monkeypatch,
):
    from pool_fusion_tuning.tuning.cli import choices

    issue_and_fix = ISSUE_AND_FIX
    monkeypatch.setattr(choices, "torch_available", lambda: False)
    assert choices.default_arms("llvm") == issue_and_fix
    assert choices.default_arms("cuda") == [*issue_and_fix, "one-kernel"]
    monkeypatch.setattr(choices, "torch_available", lambda: True)
    assert choices.default_arms("llvm") == [*issue_and_fix, "torch-compile"]  # on the CPU
    arms = choices.default_arms("cuda")
    assert arms == [
        *issue_and_fix,
        "fixed+capture",
        "one-kernel",
        "one-kernel+capture",
        "torch-compile",
        "torch-compile-max-autotune",
    ]
    # captured arms bring PyTorch's captured peers
    from pool_fusion_tuning.baselines import torch_peer
    from pool_fusion_tuning.baselines.peers import PEERS
    from pool_fusion_tuning.reports.comparisons import like_for_like

    monkeypatch.setattr(torch_peer, "torch_available", lambda: True)
    with_peers, _ = torch_peer.capture_counterparts(arms, "cuda")
    assert {"torch-eager+capture", "torch-compile+capture"} <= set(with_peers)
    pairs = like_for_like(with_peers, [n for n in with_peers if n in PEERS])
    assert ("one-kernel", "torch-compile") in pairs
    assert ("one-kernel+capture", "torch-compile+capture") in pairs


def test_tune_report_renders_a_run_on_a_machine_without_tvm(finished_run, tmp_path, capsys):
    import shutil

    from conftest import python_without_tvm

    from pool_fusion_tuning.tuning.cli.main import main

    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns("tune.lock"))
    assert main(["report", str(copy)]) == 0  # here, with TVM
    with_tvm = (copy / "report.md").read_text()
    (copy / "report.md").unlink()
    python_without_tvm(
        "import sys\nfrom pool_fusion_tuning.tuning.cli.main import main\n"
        f"assert main(['report', {str(copy)!r}]) == 0\n"
        "assert 'tvm' not in sys.modules"
    )
    assert (copy / "report.md").read_text() == with_tvm


def test_tune_without_a_dependency_says_which_and_how_to_install_it(tmp_path):
    """Without TVM or Optuna, `tune` says so in one line and exits 2, no traceback."""
    from conftest import python_without_tvm

    code = f"""
import contextlib, io, sys
from pool_fusion_tuning.tuning.cli.main import main
sys.meta_path.insert(0, type("NoOptuna", (), {{"find_spec": staticmethod(
    lambda name, path=None, target=None: (_ for _ in ()).throw(
        ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    ) if name.split(".")[0] in ("tvm", "optuna") else None)}})())
err = io.StringIO()
with contextlib.redirect_stderr(err):
    code = main(["--budget", "1", "--out", {str(tmp_path / "run")!r}])
lines = err.getvalue().strip().splitlines()
assert code == 2 and len(lines) == 1, (code, err.getvalue()[-2000:])
assert "is not installed" in lines[0] and "pip install -e ." in lines[0], lines
"""
    python_without_tvm(code)


# Round 3: every option's text, every integer's digits, the machine's bounds.


# (command, option): every option that names a folder, file, URL, name or list of names.
NAMING_OPTIONS = [
    ([], "--out"),
    ([], "--resume"),
    ([], "--storage"),
    ([], "--storage-password-env"),
    ([], "--arms"),
    ([], "--target"),
    ([], "--rpc-tracker"),
    ([], "--rpc-key"),
    (["model", "net.py:make", "--tune-top", "1"], "--rpc-tracker"),
    (["model", "net.py:make", "--tune-top", "1"], "--rpc-key"),
    (["sweep"], "--out"),
    (["sweep"], "--cases"),
    (["sweep"], "--cases-file"),
    (["sweep"], "--target"),
    (["worker", "--budget", "1"], "--storage"),
    (["worker", "--budget", "1", "--storage", "journal:///nowhere"], "--study"),
]


@pytest.mark.parametrize("text", ["", "  ", "\t"], ids=["empty", "blank", "tab"])
@pytest.mark.parametrize("command, option", NAMING_OPTIONS)
def test_an_empty_or_blank_name_is_refused_before_anything_runs(
    command, option, text, tmp_path, capsys, monkeypatch
):
    """`tune --resume "$DIR"` with DIR unset must not start a new study in runs/."""
    from pool_fusion_tuning.tuning.cli.main import main

    monkeypatch.chdir(tmp_path)
    code = main([*command, option, text])
    one_line(capsys, code, option)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text", ["run\nx", "run\rx", "run\x1b[2Jx", "run\u2028x", "run\x00x"])
@pytest.mark.parametrize(
    "args",
    [
        ["--out", "{}"],
        ["--resume", "{}"],
        ["--storage", "sqlite:///{}"],
        ["--case", "channels=2{}"],
        ["sweep", "--out", "{}"],
        ["sweep", "--case", "{}", "channels=2"],
        ["report", "{}"],
        ["worker", "--budget", "1", "--storage", "journal:///x", "--study", "{}"],
    ],
    ids=lambda args: " ".join(args[:-1]).strip(),
)
def test_a_control_character_in_any_option_is_refused(args, text, tmp_path, capsys, monkeypatch):
    from pool_fusion_tuning.tuning.cli.main import main

    monkeypatch.chdir(tmp_path)
    code = main([a.format(text) if "{}" in a else a for a in args])
    line = one_line(capsys, code, "holds a control character")
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert list(tmp_path.iterdir()) == []


# Integer options of every command, with texts Python's int() or float() would take.
NUMBER_OPTIONS = [
    ([], option)
    for option in (
        "--budget",
        "--processes",
        "--blocks",
        "--number",
        "--repeat",
        "--min-repeat-ms",
        "--seed",
        "--workers",
        "--warmup-s",
    )
] + [(["sweep"], option) for option in ("--budget", "--processes", "--blocks")]
NOT_ASCII_DIGITS = {"arabic-indic": "\u0663", "fullwidth": "\uff13", "underscore": "1_0"}


@pytest.mark.parametrize("text", NOT_ASCII_DIGITS.values(), ids=NOT_ASCII_DIGITS)
@pytest.mark.parametrize("command, option", NUMBER_OPTIONS)
def test_numbers_in_other_digits_are_refused_by_every_option(
    command, option, text, tmp_path, capsys, monkeypatch
):
    """As a Case value is (`channels=١٢`): `--blocks ٣` is not 3."""
    from pool_fusion_tuning.tuning.cli.main import main

    monkeypatch.chdir(tmp_path)
    code = main([*command, "--target", "llvm", option, text])
    one_line(capsys, code, f"argument {option}:", "in digits 0-9", repr(text))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--budget", "--seed"])
def test_a_worker_s_numbers_are_ascii_digits_too(option, capsys):
    from pool_fusion_tuning.tuning.cli.main import main

    args = ["worker", "--storage", "journal:///x", "--budget", "1", option, "\u0663"]
    one_line(capsys, main(args), f"argument {option}:", "in digits 0-9")


def test_workers_beyond_what_the_machine_holds_are_refused(tmp_path, capsys, monkeypatch):
    from pool_fusion_tuning.tuning.cli.main import main
    from pool_fusion_tuning.tuning.limits import max_workers

    monkeypatch.chdir(tmp_path)
    most = max_workers()
    code = main(["--target", "llvm", "--budget", "3", "--workers", str(most + 1)])
    one_line(capsys, code, f"--workers {most + 1} is more than this machine holds: at most {most}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "cores, available, most",
    [(2, 100e9, 2), (16, 100e9, 12), (64, 8e9, 1), (8, 0, 1)],
)
def test_the_workers_bound_is_the_cores_and_the_memory_they_need(cores, available, most):
    """At most one per core, and as many as 60 % of free memory holds (limits.py)."""
    from pool_fusion_tuning.baselines.case import CaseError
    from pool_fusion_tuning.tuning.limits import check_workers_fit, max_workers, worker_bytes

    assert max_workers(cores, available) == most
    assert most == max(1, min(cores, int(0.6 * available // worker_bytes(cores))))
    check_workers_fit(most, cores, available)
    if most > 1 or cores > 1:
        with pytest.raises(CaseError, match=f"at most {most} "):
            check_workers_fit(max(most + 1, 2), cores, available)


@pytest.mark.parametrize(
    "storage",
    [
        "sqlite:///{tmp}/missing/folder/study.db",
        "journal://{tmp}/missing/study.journal",
        "nope://x",
    ],
)
def test_a_storage_that_cannot_be_used_leaves_no_run_folder(storage, tmp_path, capsys):
    """Tried before the folder is made, so the same command works once the storage does."""
    from pool_fusion_tuning.tuning.cli.main import main

    out = tmp_path / "run"
    args = ["--storage", storage.format(tmp=tmp_path), "--out", str(out), "--budget", "2"]
    one_line(capsys, main([*args, "--tuners", "optuna", *FAST]), "cannot open the Optuna storage")
    assert not out.exists()


def test_a_storage_whose_package_is_missing_says_which_and_the_way_round(tmp_path):
    """Without SQLAlchemy, the line names it and the journal file, not a damaged storage."""
    out = tmp_path / "run"
    args = ["--storage", f"sqlite:///{tmp_path}/study.db", "--out", str(out), "--budget", "2"]
    code = (
        "import sys; sys.modules['sqlalchemy'] = None\n"  # as if it were not installed
        "from pool_fusion_tuning.tuning.cli.main import main\n"
        f"sys.exit(main({[*args, '--tuners', 'optuna', *FAST]!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "tune: error: this Optuna storage needs the Python package sqlalchemy, which is not "
        "installed: pip install sqlalchemy, or pass --storage journal:///PATH (a journal file, "
        "no package needed)"
    )
    assert not out.exists()


def test_a_worker_joins_only_a_study_its_storage_holds(tmp_path, capsys):
    """A misspelt --study (or storage file) creates nothing: no study, no file."""
    import optuna

    from pool_fusion_tuning.tuning.cli.main import main
    from pool_fusion_tuning.tuning.tuners.optuna.optuna_study import STUDY_NAME, open_study
    from pool_fusion_tuning.tuning.tuners.optuna.samplers import make_sampler

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # as the worker sets it
    url = f"journal://{tmp_path / 'study.journal'}"
    open_study(url, STUDY_NAME, make_sampler("tpe", 0), {"case": "x"})
    capsys.readouterr()
    before = (tmp_path / "study.journal").read_bytes()
    worker = ["worker", "--budget", "1", "--target", "llvm"]
    code = main([*worker, "--storage", url, "--study", "fused-pol"])
    one_line(capsys, code, "holds no study 'fused-pol' (it holds 'fused-pool')", "--study")
    assert (tmp_path / "study.journal").read_bytes() == before
    code = main([*worker, "--storage", f"journal://{tmp_path / 'typo.journal'}"])
    one_line(capsys, code, "typo.journal does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study.journal"]


def test_an_interrupted_report_does_not_claim_the_run_folder_was_not_written():
    from pool_fusion_tuning.tuning.cli.main import _interrupted

    line = _interrupted(["report", "runs/x"], None)
    assert line.startswith("tune report: interrupted") and "not written" not in line


def test_tune_report_comment_prints_the_comment_for_the_thread(finished_run, tmp_path, capsys):
    """A CPU run's comment: within its limit, no GPU column, the environment folded."""
    import shutil

    from pool_fusion_tuning.tuning.cli.main import main

    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns("tune.lock"))
    capsys.readouterr()
    assert main(["report", str(copy), "--comment"]) == 0
    printed = capsys.readouterr().out
    assert printed == (copy / "comment.md").read_text() and len(printed) <= 2500
    assert printed.startswith("`tune --budget 0 --out ")
    assert "| arm | end to end, us | / ON (95% CI) |" in printed and "GPU time" not in printed
    assert "<details><summary>Environment</summary>" in printed and "tvm: " in printed
    assert main(["report", str(copy), "--commnt"]) == 2
    assert "tune report takes one run folder" in capsys.readouterr().err


@pytest.mark.torch
@pytest.mark.slow  # torch.compile builds its C++ kernel in the trial's process: 111 s here
def test_a_cpu_run_with_pytorch_times_torch_compile_and_says_why_not_the_captured_peers(tmp_path):
    """With PyTorch the CPU's default run times torch.compile, checked against NumPy; the
    captured peers, which need CUDA, are named in the report with the reason."""
    from pool_fusion_tuning.baselines.peers import captured_peers

    out = tmp_path / "run"
    tune("--budget", "0", "--out", str(out), *SMALL, check_exit=0)
    report = read_json(out / "report.json")
    assert set(report["arms"]) == {*ISSUE_AND_FIX, "torch-compile"}
    peer = report["arms"]["torch-compile"]
    assert peer["correct"] and peer["max_abs_err"] < 1e-5 and peer["median_us"] > 0
    assert "fixed/torch-compile" in report["ratios_by_figure"]["python_call"]
    assert set(report["peers_not_measured"]) == set(captured_peers())
    text = (out / "report.md").read_text()
    assert "| `torch-compile` |" in text and "needs a CUDA GPU" in text


# `tune` as without PyTorch: every import of torch fails.
_WITHOUT_TORCH = """
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, NoTorch())
from pool_fusion_tuning.tuning.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_cpu_run_without_pytorch_names_every_peer_with_a_command_that_pastes(tmp_path):
    """Each peer is named in the report with the reason; the console prints the install
    command unescaped."""
    from pool_fusion_tuning.baselines.torch_peer import PEERS

    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TORCH, "--budget", "0", "--out", str(out), *SMALL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = read_json(out / "report.json")
    assert set(report["arms"]) == set(ISSUE_AND_FIX)
    assert set(report["peers_not_measured"]) == set(PEERS)
    assert "pip install -e '.[torch]')" in done.stdout, done.stdout  # on one line, as typed
    assert "\\" not in done.stdout and "`" not in done.stdout
    text = (out / "report.md").read_text()
    assert "`torch-compile`" in text and "PyTorch is not installed" in text
