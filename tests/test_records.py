"""Record types and their checker: every committed run's files are of their type; each kind of
bad value is one line naming the file and key."""

import dataclasses
import json
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT

from pool_fusion_tuning.baselines.models.analysis import KernelAnalysis, ModelAnalysis
from pool_fusion_tuning.runfolder import records
from pool_fusion_tuning.runfolder.checker import file_problem, problem, record_type, run_problem
from pool_fusion_tuning.runfolder.model_records import Analysis, AnalyzedKernel
from pool_fusion_tuning.runfolder.report_records import Report
from pool_fusion_tuning.runfolder.store import RunError, read_json, read_record

ARCHIVES = sorted((ROOT / "reports" / "h200").rglob("*.tar.xz"))


@pytest.fixture(scope="module")
def committed(tmp_path_factory) -> list[Path]:
    """Every JSON file of the committed H200 archives, extracted once."""
    out = tmp_path_factory.mktemp("h200")
    for index, archive in enumerate(ARCHIVES):
        with tarfile.open(archive) as stored:
            stored.extractall(out / str(index))
    return sorted(out.rglob("*.json"))


def test_every_committed_run_file_is_of_its_type(committed):
    typed = [path for path in committed if record_type(path) is not None]
    assert len(typed) > 100  # trials, summaries, reports, sweeps, models' files
    kinds = {record_type(p, json.loads(p.read_text())) for p in typed}
    assert {records.Trial, records.TunerSummary, Report, records.Sweep} <= kinds
    for path in typed:
        data = json.loads(path.read_text())
        assert file_problem(path, data) is None, path
        if path.name == "run.json":
            assert run_problem(data) is None, path


def _trial() -> dict:
    return {"trial": 0, "checks": {"on": {"correct": True, "max_abs_err": 0.0}}}


# (what is done to a good trial, what the one line says)
BAD = {
    "missing key": (lambda t: t.pop("checks"), "checks is missing"),
    "wrong type": (
        lambda t: t["checks"]["on"].update(correct="yes"),
        "checks.on.correct should be true or false, not text",
    ),
    "out of range": (
        lambda t: t.update(samples_us={"on": [1.0, -2.0]}),
        "samples_us.on[1] should be between 0 and 1000000000, not -2.0",
    ),
    "null for a list": (
        lambda t: t.update(block_orders=None),
        "block_orders should be a list, not null",
    ),
}


@pytest.mark.parametrize("kind", BAD)
def test_a_crafted_trial_is_one_line_naming_the_file_and_the_key(tmp_path, kind):
    change, says = BAD[kind]
    trial = _trial()
    change(trial)
    path = tmp_path / "trials" / "trial_0.json"
    path.parent.mkdir()
    path.write_text(json.dumps(trial))
    for read in (lambda: read_record(path, records.Trial), lambda: read_json(path)):
        with pytest.raises(RunError) as raised:
            read()
        line = str(raised.value)
        assert "\n" not in line and line.startswith(f"{path} is damaged ({says})"), line


def test_a_good_trial_is_read_as_it_is(tmp_path):
    path = tmp_path / "trial_0.json"
    path.write_text(json.dumps(_trial()))
    assert read_record(path, records.Trial) == _trial()


def test_nan_is_refused_in_the_file_and_in_a_value_a_writer_built(tmp_path):
    path = tmp_path / "trial_0.json"
    path.write_text('{"trial": 0, "checks": {"on": {"correct": true, "max_abs_err": NaN}}}')
    with pytest.raises(RunError, match=r"trial_0.json is damaged \(NaN is not a number\)"):
        read_record(path, records.Trial)
    built = _trial()
    built["checks"]["on"]["max_abs_err"] = float("nan")
    found = problem(built, records.Trial)
    assert found == "checks.on.max_abs_err should be a finite number, not nan"
    assert problem({"repeat": float("nan")}, records.ProtocolRecord) == (
        "repeat should be an integer, not a number"
    )
    timed = {"status": "ok", "kernel_us": float("nan")}
    assert "kernel_us should be between 0 and" in str(problem(timed, records.Measurement))


def test_unions_lists_and_maps_are_read_off_the_types():
    summary = {"trials": 3, "valid": 2, "failed_by_reason": {"build": 1}}
    assert problem(summary, records.TunerSummary) is None
    assert problem({**summary, "importances": None}, records.TunerSummary) is None
    assert problem({**summary, "best_kernel_us": "fast"}, records.TunerSummary) == (
        "best_kernel_us should be a number or null, not text"
    )
    assert problem({**summary, "failed_by_reason": {"x": True}}, records.TunerSummary) == (
        "failed_by_reason.x should be an integer, not true or false"
    )
    assert problem([{"status": "ok"}, 3], records.TunerTrials) == (
        "[1] should be an object, not a number"
    )
    assert problem([], records.Trial) == "the file should be an object, not a list"
    assert problem({**summary, "unknown": object()}, records.TunerSummary) is None


def test_a_tune_top_kernel_result_is_read_as_its_own_type(tmp_path):
    """tuners/KERNEL/result.json: its path gives its type, its tuners' summaries beside."""
    from pool_fusion_tuning.runfolder.model_records import TunedKernel

    path = tmp_path / "tuners" / "avg_pool2d" / "result.json"
    path.parent.mkdir(parents=True)
    result = {"kernel": "avg_pool2d", "kind": "pool", "calls": 1, "default_us": 3.0}
    result |= {"fixed_us": 2.0, "best": None, "kernel_us": None, "used": None, "budget": 3}
    path.write_text(json.dumps({**result, "wall_s": 4.5, "optuna": {"trials": 3}}))
    assert read_json(path)["wall_s"] == read_record(path, TunedKernel)["wall_s"] == 4.5
    path.write_text(json.dumps(result))
    with pytest.raises(RunError, match=r"result.json is damaged \(wall_s is missing\)"):
        read_json(path)
    path.write_text(json.dumps({**result, "wall_s": 4.5, "budget": -1}))
    with pytest.raises(RunError, match="budget should be between 0 and 1000000"):
        read_record(path, TunedKernel)


def test_the_analysis_records_have_the_fields_of_the_analysis_they_record():
    """analysis.json's type has exactly `ModelAnalysis`'s fields."""
    for written, record in ((KernelAnalysis, AnalyzedKernel), (ModelAnalysis, Analysis)):
        assert [f.name for f in dataclasses.fields(written)] == list(record.__annotations__)
