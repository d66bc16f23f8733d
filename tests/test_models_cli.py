"""`tune model` and `tune models` end to end on llvm with small blocks of real networks: the
analysis, kernels and builds checked and timed, the report without TVM, the resume, errors."""

import shutil
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import USER_MODELS, python_without_tvm, read_json, tune

from pool_fusion_tuning.tuning.base.faults import KILL_AFTER_WRITE
from pool_fusion_tuning.tuning.cli.main import main

pytestmark = pytest.mark.torch

BLOCKS = "tests/fixtures/model_blocks.py"
QUICK = ["--target", "llvm", "--number", "1", "--repeat", "2", "--min-repeat-ms", "0"]
QUICK += ["--warmup-s", "0", "--blocks", "2"]
DENSE = f"{BLOCKS}:dense_transition"


@pytest.fixture(scope="module")
def model_run(tmp_path_factory):
    """One block through `tune model` with both peers and two trials."""
    out = tmp_path_factory.mktemp("model") / "dense"
    done = tune("model", DENSE, *QUICK, "--processes", "2", "--out", str(out), check_exit=0)
    return out, done


def test_the_pattern_kernel_is_flagged_and_every_kernel_timed_under_both_lists(model_run):
    out, _ = model_run
    report = read_json(out / "report.json")
    kernels = {k["name"]: k for k in report["kernels"]}
    pool = kernels["avg_pool2d"]
    assert pool["pattern"] and pool["window"] == 4 and pool["calls"] == 1
    assert pool["rules"] == {"default": "Reduction", "fixed": "WindowReduction"}
    assert pool["launches"]["default"] == {"grid": pool["outputs"], "block": 4}
    assert report["rule_changes"] == {"fixed": ["avg_pool2d"]}
    assert [k for k in kernels.values() if k["pattern"]] == [pool]
    times = read_json(out / "kernel_times.json")
    assert times["complete"] and set(times["kernels"]) == set(kernels)
    for name, per_list in times["kernels"].items():
        assert set(per_list) == {"default", "fixed"}
        assert all(o["status"] == "ok" and o["kernel_us"] > 0 for o in per_list.values())
        # The changed kernel checked under both lists; the others timed once.
        against = {r: o["checked_against"] for r, o in per_list.items()}
        want = (
            {"default": "host", "fixed": "host"}
            if name == "avg_pool2d"
            else {"default": "end_to_end", "fixed": "same"}
        )
        assert against == want
    pattern = report["pattern"]
    assert pattern["kernels"] == 1
    assert pattern["default_ms"] == pytest.approx(pool["kernel_us"]["default"] / 1e3)
    total = sum(k["calls"] * k["kernel_us"]["default"] for k in kernels.values()) / 1e3
    assert pattern["kernels_total_ms"] == pytest.approx(total)


def test_every_tvm_build_matches_pytorch_eager_with_tf32_off_and_is_timed_beside_the_peers(
    model_run,
):
    out, _ = model_run
    report = read_json(out / "report.json")
    assert set(report["arms"]) == {"tvm-default", "tvm-fixed", "torch-eager", "torch-compile"}
    assert all(arm["correct"] for arm in report["arms"].values())
    trials = sorted((out / "trials").glob("trial_*.json"))
    assert len(trials) == 2
    for path in trials:
        trial = read_json(path)
        for check in trial["checks"].values():
            assert check["correct"] and check["scale"] > 0
            assert check["tf32"] == {"cudnn_allow_tf32": False, "matmul_allow_tf32": False}
        assert trial["design"]["blocks"] == 2
        assert all(sorted(order) == sorted(report["arms"]) for order in trial["block_orders"])
        samples = trial["block_samples_us"]["call_path"]
        assert all(len(samples[arm]) == 2 for arm in report["arms"])
    ratio = report["ratios_by_figure"]["call_path"]["tvm-fixed/tvm-default"]
    assert ratio["unit"] == "trials" and ratio["low"] <= ratio["ratio"] <= ratio["high"]
    assert "tvm-fixed/torch-compile" in report["ratios_by_figure"]["call_path"]
    recovered = report["recovered"]["fixed"]
    assert recovered["changed_kernels"] == 1 and not recovered["control"]
    walls = report["phase_wall_s"]
    assert {"import", "analysis", "build tvm-default", "build tvm-fixed"} <= set(walls)
    assert {"preparation", "kernel timing", "trials"} <= set(walls)
    assert "torch-compile" in report["trial_walls"][0]["build_s"]  # its compile, in view


def test_the_report_states_the_criterion_the_cost_and_tf32(model_run):
    out, done = model_run
    text = (out / "report.md").read_text()
    assert "A kernel has the idle-lane pattern when" in text
    assert "of its 3 kernels" in text and "Under the default rules they take" in text
    assert "TF32 off" in text and "nothing downloaded" in text
    assert "| `avg_pool2d` | 1 | 4 | Reduction, " in text
    assert done.stdout.splitlines()[-1] == f"report: {out / 'report.md'}"
    for name in ("report.csv", "kernels.png", "arms.png"):
        assert (out / name).stat().st_size > 0
    rows = (out / "report.csv").read_text().splitlines()
    assert rows[0] == "kernel,calls,window,pattern,list,rule,grid,block,kernel_us"
    assert len(rows) == 1 + 3 * 2


def test_the_report_renders_again_without_tvm(model_run, tmp_path):
    out, _ = model_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("tune.lock", "report.*"))
    python_without_tvm(
        "from pool_fusion_tuning.tuning.cli.main import main\n"
        f"assert main(['report', {str(copy)!r}]) == 0\n"
        "import sys\n"
        "assert not any(m == 'tvm' or m.startswith('tvm.') for m in sys.modules)\n"
    )
    assert (copy / "report.md").read_text() == (out / "report.md").read_text()


@pytest.mark.slow
def test_the_same_command_again_measures_nothing(model_run):
    out, _ = model_run
    stamps = {p: p.stat().st_mtime_ns for p in [*out.glob("trials/*"), out / "kernel_times.json"]}
    tune("model", DENSE, *QUICK, "--processes", "2", "--out", str(out), check_exit=0)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def test_a_folder_with_other_settings_is_refused(model_run):
    out, _ = model_run
    done = tune("model", DENSE, *QUICK, "--processes", "3", "--out", str(out), check_exit=2)
    assert done.stderr.strip().splitlines() == [
        f"tune: error: {out} holds a run of {DENSE} with other settings (--processes: 2 in "
        "the folder, 3 here); give the options it was started with to finish it, or choose "
        "another --out"
    ]


def test_analyze_needs_no_gpu_and_runs_nothing(tmp_path):
    out = tmp_path / "inception"
    tune("model", f"{BLOCKS}:inception_block", "--analyze", "--out", str(out), check_exit=0)
    report = read_json(out / "report.json")
    (pool,) = [k for k in report["kernels"] if k["pattern"]]
    assert pool["rules"] == {"default": "GeneralReduction", "fixed": "WindowReduction"}
    assert pool["launches"]["default"] == {"grid": pool["outputs"], "block": 256}
    assert report["analysis_target"]["arch"] == "sm_90"
    assert not (out / "trials").exists() and not (out / "kernel_times.json").exists()
    assert "analysed without running anything" in (out / "report.md").read_text()


def _optuna_measured(out: Path) -> dict:
    """The tuned kernel's measured Optuna trials (number -> value)."""
    import optuna

    from pool_fusion_tuning.tuning.tuners.optuna.optuna_study import STUDY_NAME
    from pool_fusion_tuning.tuning.tuners.optuna.record import measurement

    url = f"sqlite:///{out / 'tuners' / 'avg_pool2d' / 'optuna' / 'study.db'}"
    study = optuna.load_study(study_name=STUDY_NAME, storage=url)
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)
    trials = study.get_trials(deepcopy=False, states=finished)
    return {t.number: t.value for t in trials if measurement(t)}


@pytest.mark.slow
def test_tune_top_killed_mid_search_resumes_and_reports_default_rule_and_tuned(tmp_path):
    out = tmp_path / "tuned"
    args = [
        *QUICK,
        "--processes",
        "1",
        "--peers",
        "torch-eager",
        "--tune-top",
        "1",
        "--budget",
        "3",
    ]
    # SIGKILL right after the first trial's tell (from outside it could come too late).
    killed = tune("model", DENSE, *args, "--out", str(out), env={KILL_AFTER_WRITE: "2"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    before = _optuna_measured(out)
    assert len(before) == 1
    assert "tuned" not in read_json(out / "run.json")
    tune("model", DENSE, *args, "--out", str(out), check_exit=0)
    after = _optuna_measured(out)
    assert len(after) == 3 and all(after[n] == v for n, v in before.items())
    report = read_json(out / "report.json")
    (name,) = report["tuned"]["kernels"]
    assert name == "avg_pool2d"  # the only pattern kernel
    summary = report["tuned"]["kernels"][name]
    for tuner in ("optuna", "metaschedule"):  # every candidate checked on the host reference
        assert summary[tuner]["trials"] == 3 and summary[tuner]["valid"] >= 1
    best = min(("optuna", "metaschedule"), key=lambda t: summary[t]["best_kernel_us"])
    assert summary["best"] == best and summary["kernel_us"] == summary[best]["best_kernel_us"]
    assert summary["default_us"] > 0 and summary["fixed_us"] > 0
    assert report["arms"]["tvm-tuned"]["correct"]
    (pool,) = [k for k in report["kernels"] if k["name"] == name]
    # tvm-tuned's kernel time: the tuned one where taken, else the fixed list's.
    taken = summary["used"] == best
    assert pool["kernel_us"]["tuned"] == (summary["kernel_us"] if taken else None)
    text = (out / "report.md").read_text()
    assert "## Tuned kernels" in text and "| `avg_pool2d` |" in text
    again = tune("model", DENSE, *args, "--out", str(out), check_exit=0)
    assert "tuning 1/1" not in again.stdout + again.stderr  # finished: nothing tuned twice
    assert _optuna_measured(out) == after


MATMUL_HEAD = "tests/fixtures/matmul_head.py:pool_then_linear"


@pytest.mark.slow
def test_tune_top_any_kernel_tunes_a_matmul_with_metaschedule_and_says_why_optuna_skipped(
    tmp_path,
):
    out = tmp_path / "any"
    # PyTorch eager as the peer: torch.compile on a CPU costs a minute.
    args = [*QUICK, "--processes", "1", "--peers", "torch-eager", "--tune-top", "1"]
    done = tune("model", MATMUL_HEAD, *args, "--kernels", "any", "--budget", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    report = read_json(out / "report.json")
    kernels = {k["name"]: k for k in report["kernels"]}
    costs = {n: k["calls"] * k["kernel_us"]["default"] for n, k in kernels.items()}
    (name,) = report["tuned"]["kernels"]
    # The costliest kernel, the matmul, not the model's pattern kernel (the pool).
    assert name == max(costs, key=costs.__getitem__) and not kernels[name]["pattern"]
    assert any(k["pattern"] for k in kernels.values())
    summary = report["tuned"]["kernels"][name]
    assert summary["kind"] == "matmul" and report["tuned"]["chosen"] == "any"
    skipped = "not in the schedule template's space: the kernel is not a sliding-window reduction"
    assert summary["optuna"]["skipped"].startswith(skipped)
    assert not (out / "tuners" / name / "optuna").exists()  # no study made for it
    # MetaSchedule's candidates are checked before their time counts.
    rows = read_json(out / "tuners" / name / "metaschedule" / "trials.json")
    assert len(rows) == 2 and {r["status"] for r in rows} <= {"ok", "wrong", "failed"}
    assert summary["metaschedule"]["valid"] == sum(r["status"] == "ok" for r in rows) >= 1
    assert summary["best"] == "metaschedule"
    # Into tvm-tuned only where it beats the fixed list's schedule of the kernel.
    faster = summary["kernel_us"] < summary["fixed_us"]
    assert summary["used"] == ("metaschedule" if faster else "fixed")
    assert summary["kernel_us"] == summary["metaschedule"]["best_kernel_us"]
    assert summary["default_us"] > 0 and summary["fixed_us"] > 0
    assert report["arms"]["tvm-tuned"]["correct"]
    console = done.stdout + done.stderr
    assert f"{name}: optuna skipped, {skipped}" in console and "Traceback" not in console
    text = (out / "report.md").read_text()
    assert "## Tuned kernels (--tune-top 1 --kernels any, 2 candidates per tuner;" in text
    assert f"| `{name}` | matmul | 1 |" in text and f"skipped: {skipped}" in text
    assert "schedule by `metaschedule` 1) against `tvm-fixed`: end to end" in text
    # Another --kernels is another run: refused in one line, nothing measured again.
    again = tune("model", MATMUL_HEAD, *args, "--budget", "2", "--out", str(out), check_exit=2)
    (line,) = again.stderr.strip().splitlines()
    assert "with other settings (--kernels: any in the folder, not given here); give" in line


@pytest.mark.parametrize(
    "kernel, kind",
    [
        (
            {"name": "fused_conv2d_add_relu", "window": 144, "rules": {"default": "Matmul"}},
            "convolution",
        ),
        (
            {"name": "fused_conv2d3_add", "window": 49, "rules": {"default": "Reduction"}},
            "window reduction",
        ),
        ({"name": "fused_matmul_add_gelu", "window": 96, "rules": {}}, "matmul"),
        (
            {"name": "avg_pool2d", "window": 4, "pattern": True, "rules": {}},
            "window reduction, idle lanes",
        ),
        ({"name": "fused_mean", "window": 49, "rules": {}}, "other reduction"),
        ({"name": "fused_add_multiply", "window": None, "rules": {}}, "elementwise"),
    ],
)
def test_a_tuned_kernel_is_named_for_what_it_computes(kernel, kind):
    from pool_fusion_tuning.tuning.models.kernel_choice import kernel_kind

    assert kernel_kind(kernel) == kind


def test_tuners_names_which_search_each_kernel_and_the_report_says_which_did_not(tmp_path):
    out = tmp_path / "optuna-only"
    args = [*QUICK, "--processes", "1", "--peers", "none", "--tune-top", "1", "--budget", "2"]
    args += ["--kernels", "window-reduction", "--tuners", "optuna", "--out", str(out)]
    done = tune("model", MATMUL_HEAD, *args, check_exit=0)
    (name, summary), *_ = read_json(out / "report.json")["tuned"]["kernels"].items()
    assert summary["metaschedule"] == {"skipped": "left out by --tuners optuna"}
    assert summary["optuna"]["trials"] == 2 and summary["best"] == "optuna"
    assert not (out / "tuners" / name / "metaschedule").exists()
    assert f"{name}: metaschedule skipped, left out by --tuners optuna" in done.stderr
    assert "skipped: left out by --tuners optuna" in (out / "report.md").read_text()
    # Not a setting: a later command may name other tuners; the kernel tuned keeps its result.
    result = (out / "tuners" / name / "result.json").read_bytes()
    others = [*args[: args.index("--tuners")], "--tuners", "metaschedule", "--out", str(out)]
    tune("model", MATMUL_HEAD, *others, check_exit=0)
    assert (out / "tuners" / name / "result.json").read_bytes() == result


@pytest.mark.slow
def test_warm_start_begins_each_search_with_an_earlier_run_s_records(tmp_path):
    args = [*QUICK, "--processes", "1", "--trials", "1", "--peers", "none", "--tune-top", "1"]
    args += ["--kernels", "matmul", "--tuners", "metaschedule", "--budget"]
    a, b = tmp_path / "a", tmp_path / "b"
    tune("model", MATMUL_HEAD, *args, "2", "--out", str(a), check_exit=0)
    done = tune(
        "model", MATMUL_HEAD, *args, "3", "--warm-start", str(a), "--out", str(b), check_exit=0
    )
    (name, found), *_ = read_json(b / "report.json")["tuned"]["kernels"].items()
    taken = {"folder": str(a), "kernel": name, "gpu": None, "records": 2}
    assert found["metaschedule"]["warm_start"] == taken and f"start from {a}" in done.stderr


def test_kernels_takes_the_pattern_any_kernel_or_one_class_costliest_first(model_run):
    from pool_fusion_tuning.reports.kernel_classes import CLASSES
    from pool_fusion_tuning.runfolder.store import Run
    from pool_fusion_tuning.tuning.models.kernel_choice import costliest
    from pool_fusion_tuning.tuning.models.model_plan import KERNEL_CHOICES

    run = Run(model_run[0])
    taken = {choice: [k["name"] for k in costliest(run, 100, choice)] for choice in KERNEL_CHOICES}
    everything = taken["any"]
    assert taken["pattern"] == ["avg_pool2d"] and taken["window-reduction"] == ["avg_pool2d"]
    assert 1 < len(everything) and len(taken["elementwise"]) < len(everything)
    # The classes share the kernels out, each in the order of `any` (costliest first).
    by_class = [taken[name.replace(" ", "-")] for name in CLASSES]
    assert sorted(sum(by_class, [])) == sorted(everything)
    assert all(names == [n for n in everything if n in names] for names in by_class)
    assert costliest(run, 1, "any") == costliest(run, 100, "any")[:1]
    # Classes joined by commas take each class's kernels, in the order of `any`.
    pair = [k["name"] for k in costliest(run, 100, "window-reduction,elementwise")]
    assert pair == [n for n in everything if n in taken["window-reduction"] + taken["elementwise"]]


def test_a_kernels_choice_that_takes_no_kernel_says_so_on_the_console_and_in_the_report(
    tmp_path,
):
    out = tmp_path / "no-matmul"  # the dense block: a convolution, a pool, elementwise
    args = ["model", DENSE, *QUICK, "--peers", "none", "--tune-top", "1", "--kernels", "matmul"]
    done = tune(*args, "--out", str(out), check_exit=0)
    said = "--kernels matmul takes none of the kernels --tune-top considers"
    assert f"tuning: none: {said}" in done.stderr
    assert f"## Tuned kernels\n\nNone: {said}." in (out / "report.md").read_text()


@pytest.fixture(scope="module")
def models_run(tmp_path_factory):
    """`tune models` over a pattern block, a control block and a user's two-input module."""
    folder = tmp_path_factory.mktemp("models")
    user = shutil.copy(USER_MODELS, folder / "user_models.py")  # a user's file, anywhere
    models = f"{DENSE},{BLOCKS}:pool_residual,{user}:two_inputs"
    args = ["models", "--models", models, *QUICK, "--peers", "torch-eager", "--out"]
    done = tune(*args, str(folder / "out"), check_exit=0)
    return folder / "out", args, done


def test_tune_models_writes_one_checked_run_per_model_and_a_summary(models_run):
    out, _, done = models_run
    summary = read_json(out / "models.json")
    assert [r["model"] for r in summary["rows"]] == [
        "dense_transition",
        "pool_residual",
        "two_inputs",
    ]
    rows = {r["model"]: r for r in summary["rows"]}
    assert all(row["correct"] for row in rows.values())
    assert not rows["dense_transition"]["recovered"]["fixed"]["control"]
    assert rows["pool_residual"]["recovered"]["fixed"]["control"]  # no rule changes
    assert rows["pool_residual"]["pattern"]["kernels"] == 0
    for name in rows:
        assert read_json(out / name / "run.json")["kind"] == "model"
    assert (out / "models.png").stat().st_size > 0
    text = (out / "models.md").read_text()
    assert "Controls (no kernel's rule changes): pool_residual (fixed)," in text
    assert done.stdout.splitlines()[-1] == f"report: {out / 'models.md'}"


@pytest.mark.slow
def test_tune_models_again_measures_nothing(models_run):
    out, args, _ = models_run
    measured = [*out.glob("*/trials/*"), *out.glob("*/kernel_times.json")]
    stamps = {p: p.stat().st_mtime_ns for p in measured}
    done = tune(*args, str(out), check_exit=0)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert done.stderr.count("already measured, kept") == 3


def test_a_models_folder_renders_again_without_tvm(models_run):
    out, _, _ = models_run
    python_without_tvm(
        "from pool_fusion_tuning.tuning.cli.main import main\n"
        f"assert main(['report', {str(out)!r}]) == 0\n"
    )


# The one-line errors: each exit code 2, nothing else on stderr, no folder left behind.


def _one_line(capsys, argv: list[str]) -> str:
    """The error's line (after the line naming the run folder, where one was made)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    if lines[0].startswith("run folder: "):
        lines = lines[1:]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    "args, says",
    [
        (["model", "resnet50"], "is not one of torchvision:NAME, timm:NAME or FILE.py:FUNCTION"),
        (["model", f"{BLOCKS}:nothing", "--analyze"], "has no function nothing"),
        (["model", DENSE, "--batch", "2", "--analyze"], "drop the batch option"),
        (["model", DENSE, "--rules", "fixed", "--analyze"], "--rules must start with default"),
        (["model", DENSE, "--rules", "default,best", "--analyze"], "unknown rule list 'best'"),
        (["model", DENSE, "--peers", "jax", "--analyze"], "unknown peer 'jax'"),
        (["model", DENSE, "--budget", "10", "--analyze"], "give --tune-top"),
        (["model", DENSE, "--tune-top", "2", "--analyze"], "give one"),
        (["model", DENSE, "--kernels", "any", "--analyze"], "give --tune-top"),
        (["model", DENSE, "--tuners", "optuna", "--analyze"], "give --tune-top"),
        (
            [
                "model",
                DENSE,
                "--tune-top",
                "1",
                "--tuners",
                "optuna,optuna-one-kernel",
                "--target",
                "llvm",
            ],
            "--tuners takes one or more of optuna, metaschedule for --tune-top, got",
        ),
        (
            ["model", DENSE, "--tune-top", "1", "--tuners", "nothing", "--target", "llvm"],
            "unknown tuner 'nothing'",
        ),
        (
            ["model", DENSE, "--tune-top", "1", "--kernels", "all", "--target", "llvm"],
            "--kernels must be one of pattern, any, matmul, convolution, window-reduction, "
            "other-reduction, elementwise, or classes joined by commas (matmul,convolution), "
            "got 'all'",
        ),
        (
            ["model", DENSE, "--tune-top", "1", "--kernels", "matmul,any", "--target", "llvm"],
            "got 'matmul,any'",
        ),
        (["model", DENSE, "--processes", "0", "--target", "llvm"], "--processes must be between"),
        (["model", DENSE, "--blocks", "many", "--target", "llvm"], "--blocks must be auto"),
        (["model", DENSE, "--dtype", "int8", "--analyze"], "invalid choice"),
        (["model", DENSE], "timing a model needs a CUDA GPU and none is visible"),
        (["model", DENSE, "--target", "cuda"], "timing a model needs a CUDA GPU"),
        (["models", "--models", "nets.txt", "--analyze"], "is not one of"),
    ],
)
def test_bad_input_is_one_line(capsys, tmp_path, args, says):
    out = tmp_path / "out"
    assert says in _one_line(capsys, [*args, "--out", str(out)])
    assert not out.exists()


def test_an_unknown_model_name_lists_close_matches(capsys, monkeypatch, tmp_path):
    from pool_fusion_tuning.baselines.models import load

    hub = SimpleNamespace(models=SimpleNamespace(list_models=lambda: ["resnet50", "resnet18"]))
    real = load.require
    monkeypatch.setattr(
        load, "require", lambda name, by: hub if name == "torchvision" else real(name, by)
    )
    line = _one_line(
        capsys, ["model", "torchvision:resnet5", "--analyze", "--out", str(tmp_path / "o")]
    )
    assert (
        line == "tune: error: torchvision has no model 'resnet5'; close matches: resnet50, resnet18"
    )


@pytest.mark.parametrize(
    "body, says",
    [
        ("return x * 2 if x.sum() > 0 else x", "torch.export cannot export"),
        ("return torch.cummax(x, 1)[0] + 1", "no conversion for cummax.default"),
    ],
)
def test_a_module_that_cannot_be_imported_is_one_line_and_leaves_no_folder(
    capsys, tmp_path, body, says
):
    path = tmp_path / "nets.py"
    path.write_text(
        "import torch\n\n"
        "class Net(torch.nn.Module):\n"
        f"    def forward(self, x):\n        {body}\n\n"
        "def net():\n    return Net(), torch.randn(2, 3)\n"
    )
    out = tmp_path / "out"
    line = _one_line(capsys, ["model", f"{path}:net", "--analyze", "--out", str(out)])
    assert line.startswith("tune: error: ") and says in line
    assert not out.exists()


@pytest.mark.parametrize("peers", ["none", ""])
def test_peers_none_times_no_pytorch_peer(peers):
    from pool_fusion_tuning.tuning.cli.model_options import add_shared, settings_of
    from pool_fusion_tuning.tuning.cli.options import Parser

    parser = Parser(prog="tune model")
    add_shared(parser, trials=1)
    args = parser.parse_args(["--peers", peers, "--analyze"])
    assert settings_of(args)["peers"] == []
