"""`tune model --warm-start DIR`: a kernel's MetaSchedule search begins with DIR's best records of
it, each measured again here (llvm builds), DIR left as it was; one-line refusals."""

import io
import shutil

import pytest
from conftest import ROOT, one_line, read_json
from tvm import te
from tvm.s_tir import meta_schedule as ms

from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.runfolder.store import RunError
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.outcome import Status
from pool_fusion_tuning.tuning.candidates.task import ModelKernel
from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.tuners.metaschedule import tuner as metaschedule
from pool_fusion_tuning.tuning.tuners.spec import KernelJob

LLVM = TargetSpec("llvm")
SOURCE_BUDGET, BUDGET = 6, 9


def _matmul(n: int, name: str = "", inputs: str = "ab") -> ModelKernel:
    a, b = te.placeholder((n, 32), name=inputs[0]), te.placeholder((32, 16), name=inputs[1])
    r = te.reduce_axis((0, 32), name="r")
    c = te.compute((n, 16), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="c")
    return ModelKernel(name or f"matmul{n}", te.create_prim_func([a, b, c]))


def _tune(folder, task: ModelKernel, budget: int, warm_start=None, console=None) -> dict:
    """`tune model --tune-top`'s MetaSchedule on one kernel, in run folder `folder`."""
    folder, progress = folder / "tuners" / task.name / "metaschedule", Progress(stream=console)
    phase = f"metaschedule {task.name}"
    job = KernelJob(task, folder, LLVM, budget, {}, progress, phase, warm_start=warm_start)
    with CandidateEvaluator(task, LLVM, workers=2) as evaluator:
        return metaschedule.tune_kernel(job, evaluator)


def _contents(folder) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A kernel tuned in one run folder, then searched in another that starts from it."""
    source, run = (tmp_path_factory.mktemp(name) for name in ("source", "run"))
    task = _matmul(16)
    _tune(source, task, SOURCE_BUDGET)
    before, console = _contents(source), io.StringIO()
    summary = _tune(run, task, BUDGET, warm_start=source, console=console)
    said = f"metaschedule matmul16: warm start from {source}: the best "
    assert said in console.getvalue()
    return source, before, run / "tuners" / task.name / "metaschedule", summary


def test_the_search_begins_with_the_source_s_best_records_each_measured_here(warm):
    source, _, folder, summary = warm
    rows = read_json(source / "tuners" / "matmul16" / "metaschedule" / "trials.json")
    valid = [row for row in rows if row["status"] == Status.OK]
    taken = {"folder": str(source), "kernel": "matmul16", "gpu": None, "records": len(valid)}
    assert summary["warm_start"] == taken
    rows = read_json(folder / "trials.json")
    assert [row["trial"] for row in rows] == list(range(1, BUDGET + 1))  # counted in --budget
    assert [bool(row.get("warm_start")) for row in rows] == [
        index < len(valid) for index in range(BUDGET)
    ]
    assert all(row["status"] == Status.OK for row in rows[: len(valid)])  # checked here
    assert summary["trials"] == BUDGET


def test_the_new_database_holds_the_times_measured_here_not_the_source_s(warm):
    _, _, folder, _ = warm
    rows = read_json(folder / "trials.json")
    database = ms.database.JSONDatabase(work_dir=str(folder), allow_missing=False)
    stored = sorted(float(r.run_secs[0]) for r in database.get_all_tuning_records())
    here = sorted(row["kernel_us"] * 1e-6 for row in rows if row["status"] == Status.OK)
    assert len(stored) == BUDGET and stored[: len(here)] == pytest.approx(here, rel=1e-6)


def test_the_source_folder_is_left_as_it_was(warm):
    source, before, _, _ = warm
    assert _contents(source) == before


def test_a_resume_measures_nothing_and_keeps_what_the_warm_start_took(warm):
    source, _, folder, summary = warm
    rows = (folder / "trials.json").read_bytes()
    again = _tune(folder.parents[2], _matmul(16), BUDGET, warm_start=source)
    assert (folder / "trials.json").read_bytes() == rows
    assert again["warm_start"] == summary["warm_start"]


def test_the_same_kernel_of_another_network_is_found_whatever_its_names(warm, tmp_path):
    other = _matmul(16, "fused_matmul3_add6", inputs="xw")
    summary = _tune(tmp_path, other, 2, warm_start=warm[0])
    assert summary["warm_start"]["kernel"] == "matmul16"
    assert summary["warm_start"]["records"] == summary["trials"] == 2  # the budget: no search


def test_a_kernel_the_source_does_not_hold_is_searched_from_nothing(warm, tmp_path):
    summary = _tune(tmp_path, _matmul(8), 2, warm_start=warm[0])
    assert summary["warm_start"] == {**summary["warm_start"], "kernel": None, "records": 0}
    rows = read_json(tmp_path / "tuners" / "matmul8" / "metaschedule" / "trials.json")
    assert len(rows) == 2 and not any(row.get("warm_start") for row in rows)


def test_a_damaged_database_there_is_said_of_that_folder(warm, tmp_path):
    damaged = shutil.copytree(warm[0], tmp_path / "damaged")
    records = next(damaged.glob("tuners/*/metaschedule")) / "database_tuning_record.json"
    records.write_text("[not json\n" + records.read_text())
    with pytest.raises(RunError, match=f"MetaSchedule database in {records.parent} "):
        _tune(tmp_path / "run", _matmul(16), 2, warm_start=damaged)


MODEL = f"{ROOT / 'tests' / 'fixtures' / 'matmul_head.py'}:two_linears"


@pytest.mark.parametrize(
    "args, says",
    [
        ([], "give --tune-top"),
        (["--tune-top", "1", "--tuners", "optuna"], "which --tuners leaves out"),
        (["--tune-top", "1", "--rpc-tracker", "h:9190"], "without --rpc-tracker"),
    ],
)
def test_warm_start_without_a_metaschedule_search_here_is_one_line(warm, capsys, args, says):
    code = main(["model", MODEL, "--target", "llvm", "--warm-start", str(warm[0]), *args])
    one_line(capsys, code, "--warm-start", says)


def test_a_folder_without_databases_or_for_another_target_is_one_line(warm, tmp_path, capsys):
    given = ["model", MODEL, "--target", "llvm", "--tune-top", "1", "--warm-start"]
    one_line(capsys, main([*given, str(tmp_path)]), "holds no MetaSchedule database")
    cuda = shutil.copytree(warm[0], tmp_path / "cuda")
    (cuda / "environment.json").write_text('{"target_kind": "cuda", "gpu": "NVIDIA H100"}')
    one_line(capsys, main([*given, str(cuda)]), "was tuned for cuda, this run is for llvm")
