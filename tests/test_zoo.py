"""`tune models --zoo` on a tiny zoo: kernels taken and declined, refused models as rows,
resuming, --jobs, --only/--skip, refusals; torchvision's census where installed."""

import re
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from conftest import ROOT, one_line, read_json, tune, tune_killed_when

from pool_fusion_tuning.baselines.models.model_errors import MissingPackage, ModelError
from pool_fusion_tuning.baselines.models.zoo import pick
from pool_fusion_tuning.tuning.cli.main import main

pytestmark = pytest.mark.torch

ZOO = "tests/fixtures/tiny_zoo.py"
MODELS = ["pool", "attention", "global_pool", "branchy"]


def _stamps(out: Path) -> dict:
    return {p: p.stat().st_mtime_ns for p in out.glob("*/analysis.json")}


@pytest.fixture(scope="module")
def census(tmp_path_factory):
    """The census, killed once a model is analysed (the others held: TINY_ZOO_HOLD), then
    finished by the same command."""
    out = tmp_path_factory.mktemp("zoo") / "census"
    args = ["models", "--zoo", ZOO, "--analyze", "--jobs", "2", "--out", str(out)]
    tune_killed_when(lambda: any(out.glob("*/analysis.json")), *args, env={"TINY_ZOO_HOLD": "1"})
    first = _stamps(out)
    assert len(first) == 1, "the census was not killed in the middle"
    assert main(["report", str(out)]) == 0  # the census so far
    partial = read_json(out / "census.json")
    done = tune(*args, check_exit=0)  # the failing model is a row of the census, kept
    return out, args, (first, partial), done


def test_the_census_sorts_the_flagged_kernels_and_keeps_the_failure_as_a_row(census):
    out, _, _, done = census
    rows = {row["model"]: row for row in read_json(out / "census.json")["rows"]}
    assert list(rows) == MODELS
    (pool,) = rows["pool"]["flagged"]
    assert pool["window"] == 4 and pool["window_rule"] == "takes"
    assert pool["rules"] == {"default": "Reduction", "fixed": "WindowReduction"}
    (row,) = rows["attention"]["flagged"]  # a softmax row of 49: the fixed list's RowReduction
    assert row["window_rule"] == "RowReduction takes"
    assert row["rules"] == {"default": "GeneralReduction", "fixed": "RowReduction"}
    (row,) = rows["global_pool"]["flagged"]  # a global pool of 16
    assert row["window_rule"] == "not sliding" and row["rules"]["fixed"] == row["rules"]["default"]
    assert rows["branchy"] == {
        "model": "branchy",
        "failure": rows["branchy"]["failure"],
    } and rows["branchy"]["failure"].startswith(f"torch.export cannot export {ZOO}:branchy: ")
    assert "Traceback" not in done.stdout + done.stderr
    text = (out / "census.md").read_text()
    assert "4 models of tests/fixtures/tiny_zoo.py (4 listed by `tiny_zoo.py: list_models()`)" in (
        text
    )
    assert (
        "3 analysed, 1 failed (each a row with its reason)." in text
        and "The window rule takes 1 of them (1 launches), RowReduction (a warp per short "
        "softmax or layer-norm row) 1 (1 launches) and declines not sliding 1."
        in text
    )
    assert "| pool | 1 | 1 (1) | 1 (1) | 0 (0) | — | Reduction 1 | " in text
    assert "| attention | 8 | 1 (1) | 0 (0) | 1 (1) | — | GeneralReduction 1 | " in text
    assert "| branchy | not analysed: torch.export cannot export" in text
    assert "- not sliding: no reduction slides along the outputs" in text
    csv = (out / "census.csv").read_text().splitlines()
    assert csv[1].startswith("pool,fused_avg_pool2d_add,1,4,64,default,Reduction,64,4,takes")
    assert len(csv) == 1 + 3 * 2  # three flagged kernels, two lists
    assert done.stdout.splitlines()[-1] == f"report: {out / 'census.md'}"


def test_the_interrupted_census_kept_what_it_had_and_a_choice_of_it_analyses_nothing(census):
    out, args, (first, partial), _ = census
    assert [row.get("left", False) for row in partial["rows"]].count(True) == 3
    assert all(path.stat().st_mtime_ns == stamp for path, stamp in first.items())
    stamps = _stamps(out)
    done = tune(*args, "--only", "*pool*,att*,branchy", "--skip", "global_*", check_exit=0)
    assert _stamps(out) == stamps
    assert done.stderr.count("already measured, kept") == 2
    assert done.stderr.count("failed before, kept") == 1
    assert "preparation" not in done.stderr  # nothing submitted
    rows = read_json(out / "census.json")["rows"]
    assert [row["model"] for row in rows] == ["pool", "attention", "branchy"]


def _untimed(text: str) -> str:
    """census.md without its times (the wall of the commands, the seconds per model) and the
    command."""
    text = re.sub(r"Command: `.*`", "", text)
    text = re.sub(r"Wall time of the \d+ command\(s\) that ended: \d+ s", "", text)
    return re.sub(r"\| \d+ \|\n", "|\n", text)


def test_one_model_at_a_time_gives_the_census_two_at_a_time_gave(census, tmp_path):
    out, args = census[:2]
    tune(*args, check_exit=0)  # the whole census again (another test chooses among it)
    one = tmp_path / "census"
    tune("models", "--zoo", ZOO, "--analyze", "--jobs", "1", "--out", str(one), check_exit=0)
    assert _untimed((one / "census.md").read_text()) == _untimed((out / "census.md").read_text())
    for model in MODELS[:3]:
        assert (one / model / "analysis.json").read_bytes() == (
            out / model / "analysis.json"
        ).read_bytes()


def test_jobs_are_for_an_analysis_alone(capsys, tmp_path):
    out = tmp_path / "out"
    says = "--jobs N analyses N models at once and is for --analyze"
    one_line(capsys, main(["models", "--zoo", ZOO, "--jobs", "2", "--out", str(out)]), says)
    one_line(capsys, main(["models", "--zoo", ZOO, "--analyze", "--jobs", "0"]), "at least 1")
    assert not out.exists()


# The whole census: about 80 models, minutes on 16 cores (the GPU machine), hours on two.
WHOLE_CENSUS_TIMEOUT_S = 3600


@pytest.mark.slow
def test_the_whole_census_of_torchvision_has_every_model_a_row(tmp_path):
    """Every torchvision classification model a census row, analysed or with its reason."""
    from pool_fusion_tuning.baselines.models.zoo import list_zoo

    try:
        zoo = list_zoo("torchvision")
    except MissingPackage as error:
        pytest.skip(f"the whole census needs torchvision, which CI lacks ({error})")
    out = tmp_path / "census"
    done = tune(
        *("models", "--zoo", "torchvision", "--analyze", "--out", str(out)),
        check_exit=0,
        timeout=WHOLE_CENSUS_TIMEOUT_S,
    )
    assert "Traceback" not in done.stdout + done.stderr
    rows = read_json(out / "census.json")["rows"]
    assert [row["model"] for row in rows] == list(zoo.names)
    assert all("failure" in row or row["kernels"] > 0 for row in rows)
    print(done.stdout)  # the census' headline, with its wall time (pytest -s)


def test_a_zoo_decomposed_is_each_model_decomposed_in_a_folder_of_its_own():
    from pool_fusion_tuning.baselines.models.zoo import list_zoo
    from pool_fusion_tuning.tuning.models.model_series import folder_names, zoo_models

    entries = zoo_models(list_zoo(str(ROOT / ZOO)), decompose=True)
    assert all(entry.options.decompose for entry in entries)
    assert folder_names(entries) == [f"{name}-decomposed" for name in MODELS]


def test_pick_keeps_the_order_and_refuses_a_glob_that_matches_nothing():
    assert pick(MODELS, [], []) == MODELS
    assert pick(MODELS, ["*pool*", "branchy"], ["global*"]) == ["pool", "branchy"]
    with pytest.raises(ModelError, match="--skip 'vit_\\*' matches no model"):
        pick(MODELS, [], ["vit_*"])
    with pytest.raises(ModelError, match="leave no model"):
        pick(MODELS, ["pool"], ["p*"])


@pytest.mark.parametrize(
    "args, says",
    [
        (["--zoo", "torchvision"], "--zoo torchvision needs torchvision: pip install torchvision"),
        (["--zoo", "timm"], "--zoo timm needs timm: pip install timm"),
        (["--zoo", "keras"], "--zoo keras: not a zoo; give one of torchvision, timm, FILE.py"),
        (["--zoo", "tests/fixtures/user_models.py"], "has no function list_models()"),
        (["--zoo", ZOO, "--only", "resnet*"], "--only 'resnet*' matches no model"),
        (["--zoo", ZOO, "--models", "x.py:f"], "give --models or --zoo, not both"),
        (["--models", "x.py:f", "--decompose"], "--decompose is for --zoo"),
    ],
)
def test_a_zoo_that_cannot_be_listed_is_one_line(capsys, monkeypatch, tmp_path, args, says):
    for library in ("torchvision", "timm"):  # not importable, as in CI
        monkeypatch.setitem(sys.modules, library, None)
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    one_line(capsys, main(["models", *args, "--analyze", "--out", str(out)]), says)
    assert not out.exists()


@pytest.mark.parametrize(
    "error, line, kept",
    [
        (
            RuntimeError("Traceback (most recent call last):\n  File x\nInternalError: Check"),
            "cannot import or analyse z.py:net: RuntimeError: InternalError: Check",
            True,
        ),
        (MissingPackage("z.py:net needs timm: pip install timm"), "needs timm", False),
        (BrokenProcessPool("gone"), "tried again next time", False),
    ],
)
def test_a_failed_preparation_is_one_line_kept_where_the_model_is_at_fault(
    tmp_path, error, line, kept
):
    from pool_fusion_tuning.runfolder.store import Run
    from pool_fusion_tuning.tuning.models.model_run import prepare_failure

    run = Run.create(tmp_path / "net", {"settings": {"model": {"spec": "z.py:net"}}})
    said = prepare_failure(run, error)
    assert line in said and "\n" not in said
    assert run.meta.get("failure") == (said if kept else None)
