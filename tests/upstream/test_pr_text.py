"""PR.md: the committed evidence without folders, and figures from the folders given, stamped
with the shipped rule's hash and checked against their files."""

import json
import shutil
import tarfile

import pytest
from conftest import ROOT, read_json

from pool_fusion_tuning.baselines.rules import rule_hash
from pool_fusion_tuning.baselines.window_bench import main as window_bench
from pool_fusion_tuning.baselines.window_reduction import (
    BLOCK_THREADS,
    MAX_WINDOW,
    ROW_REUSE,
    ROW_WINDOW,
)
from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.upstream.bundle import PR
from pool_fusion_tuning.tuning.upstream.evidence import EVIDENCE_COMMAND, _verdict
from pool_fusion_tuning.tuning.upstream.tvm_tree import BASE_COMMIT, BASE_RELEASE

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


def _stamp(folder, stamp: str | None = None) -> None:
    """Record `stamp` (default: the shipped rule's hash) in every run under `folder`."""
    for path in [*folder.rglob("environment.json"), *folder.rglob("window_bench.json")]:
        data = read_json(path)
        where = data["environment"] if "environment" in data else data
        where["rule_sha256"] = stamp or rule_hash()
        path.write_text(json.dumps(data))


def _extracted(tmp_path, archive: str):
    with tarfile.open(H200 / archive) as stored:
        stored.extractall(tmp_path)


def test_without_folders_the_stamped_h200_evidence_is_cited(tmp_path):
    """Without folders PR.md cites reports/h200/evidence/ alone."""
    text = _pr(tmp_path)
    assert "Not cited" not in text and len(text.encode()) <= 8 * 1024, len(text.encode())
    assert text.count(f"Rule source SHA-256 `{rule_hash()}`, the shipped file's.") == 2
    assert "`reports/h200/evidence/run.tar.xz/run/report.json`" in text
    assert "| issue-maxpool-add |" in text and "| end to end |" in text
    assert "Across shapes" not in text and "Real networks" not in text


def test_a_committed_run_without_the_rule_s_hash_is_not_cited(tmp_path):
    """A run without the rule's hash is named, not cited, with the command to measure again."""
    with tarfile.open(H200 / "run.tar.xz") as archive:
        archive.extractall(tmp_path / "old")
    assert main(["report", str(tmp_path / "old" / "run")]) == 0
    text = _pr(tmp_path, "--run", tmp_path / "old" / "run")
    assert text.count("Not cited: ") == 1 and text.count(EVIDENCE_COMMAND) == 1
    assert f"`{tmp_path / 'old' / 'run'}` records no hash" in text
    assert "| fused kernel |" not in text


def test_the_text_answers_the_reviewer(tmp_path):
    text = _pr(tmp_path)
    assert "Author:" not in text and "Ada" not in text  # the patch's From: names the author
    assert text.count("Fixes #20401.") == 1
    assert f"{BASE_RELEASE} release (commit `{BASE_COMMIT}`)" in text
    assert "The rule declines, leaving the function to the rules after it:" in text
    for name, value in (
        ("MAX_WINDOW", MAX_WINDOW),
        ("ROW_REUSE", ROW_REUSE),
        ("ROW_WINDOW", ROW_WINDOW),
        ("BLOCK_THREADS", BLOCK_THREADS),
    ):
        assert f"`{name}` = {value}" in text, name
    for place in ("gpu_generic", "rocm", "relax_integration.py"):
        assert place in text, place
    assert "right before `Reduction`" in text and "The decision is isolation" in text
    assert "`test_numerics_on_cuda`" in text and "`test_declined`" in text
    assert "Not run: TVM's CI" in text


def test_the_pr_text_with_every_figure_is_at_most_8_kb(tmp_path, study):
    """The largest PR.md: the H200 benchmark and study, as if stamped."""
    _extracted(tmp_path, "evidence/window_bench.tar.xz")
    _stamp(tmp_path / "window")
    text = _pr(tmp_path, "--run", study, "--bench", tmp_path / "window")
    assert "Not cited" not in text and len(text.encode()) <= 8 * 1024, len(text.encode())
    assert text.count(f"Rule source SHA-256 `{rule_hash()}`, the shipped file's.") == 2


def test_a_run_of_another_rule_is_refused_in_one_line(tmp_path, study, capsys):
    other = tmp_path / "other"
    shutil.copytree(study, other)
    _stamp(other, "0123456789abcdef")
    assert main(["report", str(other)]) == 0
    capsys.readouterr()
    code = main(["upstream", "--out", str(tmp_path / "out"), *AUTHOR, "--run", str(other)])
    assert code == 2 and not (tmp_path / "out").exists()
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "measured another rule (source SHA-256 0123456789abcdef" in (
        error
    )


def test_the_benchmark_notes_what_the_in_place_fix_changes_and_what_is_tvms(tmp_path):
    """A global average pool is rescheduled by the in-place fix only; the 1x1 pool is wrong
    under every list."""
    _extracted(tmp_path, "evidence/window_bench.tar.xz")
    _stamp(tmp_path / "window")
    text = _pr(tmp_path, "--bench", tmp_path / "window")
    assert "the in-place fix reschedules them: control-global-avgpool (Reduction → Serial" in text
    assert "control-window1-avgpool is WRONG under every list, the default one too" in text


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The H200 study of 2026-12-02 (reports/h200/run.tar.xz), its report rendered here."""
    folder = tmp_path_factory.mktemp("study")
    with tarfile.open(H200 / "run.tar.xz") as archive:
        archive.extractall(folder)
    _stamp(folder / "run")
    assert main(["report", str(folder / "run")]) == 0
    return folder / "run"


def test_the_study_section_gives_the_runs_own_figures(tmp_path, study):
    text = _pr(tmp_path, "--run", study)
    report = read_json(study / "report.json")
    on, fixed = report["arms"]["on"], report["arms"]["fixed"]
    assert f"| fused kernel | {on['kernel_us']:.2f} us | {fixed['kernel_us']:.2f} us |" in text
    assert "blocks x threads" not in text  # the launches are the repro script's (test_pr_repro)
    assert f"{on['median_us']:.2f} us ({on['q1_us']:.2f}–{on['q3_us']:.2f})" in text
    ratio = report["ratios"]["fixed/on"]
    assert f"fixed/on = {ratio['ratio']:.3f} (95% CI {ratio['low']:.3f}–{ratio['high']:.3f})" in (
        text
    )
    assert report["command"] in text and "Not cited" not in text  # the committed bench too


def test_the_sweep_section_gives_a_row_per_case(tmp_path):
    with tarfile.open(H200 / "sweep" / "cases.tar.xz") as archive:  # the sweep's folder
        archive.extractall(tmp_path / "committed")
    _stamp(tmp_path / "committed")
    text = _pr(tmp_path, "--sweep", tmp_path / "committed" / "sweep")
    sweep = _committed_sweep()
    for case in sweep["cases"]:
        row = next(line for line in text.splitlines() if line.startswith(f"| {case['case']} |"))
        assert f"{case['kernel_us']['fixed']:.2f} us" in row
        assert f"{case['end_to_end_us']['on']:.2f} us" in row
        assert f"{case['fixed_over_on']['ratio']:.3f}" in row


@pytest.mark.torch
def test_the_bench_section_gives_the_benchmarks_table(tmp_path):
    """A CPU run of the benchmark: rules and launches, nothing timed, and the text says so."""
    bench = tmp_path / "bench"
    assert window_bench([str(bench), "--target", "llvm", "--kernels", "issue-maxpool-add"]) == 0
    text = _pr(tmp_path, "--bench", bench / "window_bench.json")
    row = "| issue-maxpool-add | GeneralReduction | WindowReduction | SerialGeneralReduction |"
    assert row in text and "median in us" not in text
    assert f"Rule source SHA-256 `{rule_hash()}`" in text  # the run recorded it itself


def test_the_verdict_counts_lower_medians_and_overlapping_ranges():
    def entry(q1, median, q3):
        return {"q1_us": q1, "median_us": median, "q3_us": q3}

    rows = [
        {"kernel": "a", "lists": {"fixed": entry(1, 2, 3), "reduction-fix": entry(5, 6, 7)}},
        {"kernel": "b", "lists": {"fixed": entry(4, 5, 6), "reduction-fix": entry(3, 4, 5)}},
    ]
    assert _verdict(rows) == (
        "WindowReduction (`fixed`) has the lower median on 1 of 2 kernels timed under both; "
        "their interquartile ranges overlap on 1."
    )
    assert _verdict([{"kernel": "c", "lists": {"fixed": {"rule": "x"}}}]) is None


def test_the_models_section_gives_the_h200_run_s_figures(tmp_path):
    """The H200's tune models: a row per model, its pattern kernels and end to end per list."""
    with tarfile.open(H200 / "models" / "models.tar.xz") as stored:
        stored.extractall(tmp_path)
    models = tmp_path / "models"
    _stamp(models)
    data = read_json(models / "models.json")
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
