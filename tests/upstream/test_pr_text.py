"""PR.md, the pull request's description: what it says without run folders (the figures of the
H200 runs committed under reports/h200/, each with its command and date), and the figures it
takes from the folders given, checked against the files they come from."""

import json
import re
import shutil
import tarfile

import pytest
from conftest import ROOT

from baselines.window_bench import main as window_bench
from baselines.window_reduction import BLOCK_THREADS, MAX_WINDOW, ROW_REUSE
from tuning.cli.main import main
from tuning.upstream.bundle import PR
from tuning.upstream.evidence import _verdict
from tuning.upstream.tvm_tree import BASE_COMMIT, BASE_DATE

AUTHOR = ["--author", "Ada Lovelace <ada@example.org>"]
H200 = ROOT / "reports" / "h200"


def _committed_sweep() -> dict:
    """The committed sweep's sweep.json, kept in the archive of its folder."""
    with tarfile.open(H200 / "sweep" / "cases.tar.xz") as archive:
        member = archive.extractfile("sweep/sweep.json")
        assert member is not None
        return json.load(member)


def _pr(tmp_path, *folders) -> str:
    out = tmp_path / "out"
    assert main(["upstream", "--out", str(out), *AUTHOR, *map(str, folders)]) == 0
    return (out / PR).read_text()


def test_without_folders_the_figures_are_the_committed_h200_runs(tmp_path):
    """Every benchmark section is there, each naming its command and date, with no module path
    of the toolkit's (one closing line names the toolkit)."""
    text = _pr(tmp_path)
    assert "Not given" not in text and "baselines" not in text and "python3 -m" not in text
    sweep = _committed_sweep()
    with tarfile.open(H200 / "window" / "window_bench.tar.xz") as archive:
        bench = json.load(archive.extractfile("window/window_bench.json"))
    with tarfile.open(H200 / "run.tar.xz") as archive:
        report = json.load(archive.extractfile("run/report.json"))
    with tarfile.open(H200 / "models" / "models.tar.xz") as archive:
        models = json.load(archive.extractfile("models/models.json"))
        date = json.load(archive.extractfile("models/resnet50/environment.json"))["date"]
    on = report["arms"]["on"]
    assert f"`{report['command']}` on NVIDIA H200, {report['environment']['date'][:10]}" in text
    assert f"| fused kernel | {on['kernel_us']:.2f} us |" in text
    assert f"`{sweep['command']}` on {sweep['device']}, 2026-12-02 (" in text
    assert f"`{models['command']}` on {models['device']}, {date[:10]} (" in text
    assert f"(`window_bench`) on NVIDIA H200, {bench['environment']['date'][:10]}" in text
    assert text.count("| issue-maxpool-add |") == 1 and text.count("| issue |") == 1


def test_the_text_answers_the_reviewer(tmp_path):
    text = _pr(tmp_path)
    assert "Author: Ada Lovelace <ada@example.org>" in text
    assert f"`{BASE_COMMIT}` ({BASE_DATE}" in text
    assert "apache/tvm#20401" in text
    assert "The rule declines, leaving the function to the rules after it:" in text
    for name, value in (
        ("MAX_WINDOW", MAX_WINDOW),
        ("ROW_REUSE", ROW_REUSE),
        ("BLOCK_THREADS", BLOCK_THREADS),
    ):
        assert re.search(rf"- `{name}` = {value}: \w", text), name
    for place in ("gpu_generic", "rocm", "adreno", "relax_integration.py", "Pool2D"):
        assert place in text, place
    assert "right before `dl.gpu.Reduction()`" in text
    assert "A new rule, or GeneralReduction and Reduction fixed?" in text
    assert "`test_numerics_on_cuda`" in text and "`test_declined`" in text
    assert "`gpu_generic` and `rocm` keep their lists in this patch** (decided" in text
    assert "- `tvm.arith.detect_linear_equation(` → `tvm.sym.detect_linear_equation(`" in text


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The H200 study of 2026-11-30 (reports/h200/run.tar.xz), its report rendered here."""
    folder = tmp_path_factory.mktemp("study")
    with tarfile.open(H200 / "run.tar.xz") as archive:
        archive.extractall(folder, filter="data")
    assert main(["report", str(folder / "run")]) == 0
    return folder / "run"


def test_the_study_section_gives_the_runs_own_figures(tmp_path, study):
    text = _pr(tmp_path, "--run", study)
    report = json.loads((study / "report.json").read_text())
    on, fixed = report["arms"]["on"], report["arms"]["fixed"]
    kernels = {row["arm"]: row for row in report["fused_kernel"]}
    assert f"| fused kernel | {on['kernel_us']:.2f} us | {fixed['kernel_us']:.2f} us |" in text
    assert (
        f"| fused kernel's launch (blocks x threads) | {kernels['on']['grid']} x "
        f"{kernels['on']['block']} | {kernels['fixed']['grid']} x {kernels['fixed']['block']} |"
    ) in text
    assert f"{on['median_us']:.2f} us ({on['q1_us']:.2f}–{on['q3_us']:.2f})" in text
    ratio = report["ratios"]["fixed/on"]
    assert f"fixed/on = {ratio['ratio']:.3f} (95% CI {ratio['low']:.3f}–{ratio['high']:.3f})" in (
        text
    )
    assert report["command"] in text and "Not given" not in text


def test_the_sweep_section_gives_a_row_per_case(tmp_path):
    with tarfile.open(H200 / "sweep" / "cases.tar.xz") as archive:  # the sweep's folder
        archive.extractall(tmp_path / "committed", filter="data")
    text = _pr(tmp_path, "--sweep", tmp_path / "committed" / "sweep")
    sweep = _committed_sweep()
    for case in sweep["cases"]:
        row = next(line for line in text.splitlines() if line.startswith(f"| {case['case']} |"))
        assert f"{case['kernel_us']['fixed']:.2f} us" in row
        assert f"{case['end_to_end_us']['on']:.2f} us" in row
        assert f"{case['fixed_over_on']['ratio']:.3f}" in row


@pytest.mark.torch
def test_the_bench_section_gives_the_benchmarks_table(tmp_path):
    """A real (CPU) run of the benchmark: rules and launches, nothing timed, and the text says
    so; on the GPU the same table carries times (window_bench's own tests)."""
    bench = tmp_path / "bench"
    assert window_bench([str(bench), "--target", "llvm", "--kernels", "issue-maxpool-add"]) == 0
    text = _pr(tmp_path, "--bench", bench / "window_bench.json")
    assert "| issue-maxpool-add | GeneralReduction 147456x256 | WindowReduction 576x256 |" in text
    assert "nothing was timed" in text


def test_the_verdict_counts_lower_medians_and_overlapping_ranges():
    def entry(q1, median, q3):
        return {"q1_us": q1, "median_us": median, "q3_us": q3}

    rows = [
        {"kernel": "a", "lists": {"fixed": entry(1, 2, 3), "reduction-fix": entry(5, 6, 7)}},
        {"kernel": "b", "lists": {"fixed": entry(4, 5, 6), "reduction-fix": entry(3, 4, 5)}},
    ]
    assert _verdict(rows) == (
        "WindowReduction (`fixed`) has the lower median on 1 of 2 kernels timed under both; "
        "their interquartile ranges overlap on 1 (b)."
    )
    assert _verdict([{"kernel": "c", "lists": {"fixed": {"rule": "x"}}}]) is None


def test_the_models_section_gives_the_h200_run_s_figures(tmp_path):
    """tune models on the H200 (reports/h200/models/): a row per model with its pattern
    kernels' time and the model end to end under both lists, from models.json."""
    with tarfile.open(H200 / "models" / "models.tar.xz") as stored:
        stored.extractall(tmp_path, filter="data")
    models = tmp_path / "models"
    data = json.loads((models / "models.json").read_text())
    text = _pr(tmp_path, "--models", models)
    for row in data["rows"]:
        line = next(line for line in text.splitlines() if line.startswith(f"| {row['label']} |"))
        assert f"| {row['pattern']['kernels']} of {row['kernels']} |" in line
    inception = next(r for r in data["rows"] if r["model"] == "inception_v3")
    ratio = inception["recovered"]["fixed"]["ratios"]["gpu_queued"]
    assert (
        f"| {inception['gpu_ms']['tvm-default']:.3f} ms → {inception['gpu_ms']['tvm-fixed']:.3f} "
        f"ms (GPU time) | {ratio['ratio']:.3f} (95% CI {ratio['low']:.3f}–{ratio['high']:.3f}) |"
    ) in text


def test_a_models_json_without_rows_is_one_line(tmp_path, capsys):
    models = tmp_path / "models"
    models.mkdir()
    (models / "models.json").write_text('{"models": []}')
    code = main(["upstream", "--out", str(tmp_path / "out"), *AUTHOR, "--models", str(models)])
    assert code == 2
    assert "holds no model rows" in capsys.readouterr().err


def test_a_damaged_figures_file_is_one_line(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    shutil.copytree(H200 / "sweep", sweep, ignore=shutil.ignore_patterns("*.xz", "*.png"))
    (sweep / "sweep.json").write_text('{"cases": [')
    assert main(["upstream", "--out", str(tmp_path / "out"), *AUTHOR, "--sweep", str(sweep)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "sweep.json is damaged" in error
