"""`outputs_flat`: every point right, vector stores and no read-back in CUDA, older points
keeping their records, keys and kernels."""

import re
import subprocess
import tarfile

import pytest
import tvm
from conftest import CASES, DEFAULT, ROOT, read_json
from test_template import CUDA, QUICK, _cuda_source

from pool_fusion_tuning.baselines.anatomy import launch_configs
from pool_fusion_tuning.baselines.arms import tuned_task_arm
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.pipeline import fused_pool_function, fused_stage, make_target
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.template import PoolSchedule, recorded
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.kernel import kernel_module
from pool_fusion_tuning.tuning.candidates.kernel_cache import kernel_key
from pool_fusion_tuning.tuning.tuners.space import Space, key

# Stride 1, no prelude, two chained Adds returned, an odd width (pairs span rows).
STRIDE1 = Case(
    channels=4, height=12, width=12, window=2, stride=1, prelude=False, tail=2, shared_output=True
)
# `s1-32` of reports/h200/kernel_code: 32 x 31 x 31 outputs, three Adds, two returned.
S1_32 = Case(
    channels=32, height=32, width=32, window=2, stride=1, prelude=False, tail=3, shared_output=True
)


def _flat_points(space: Space) -> list[dict]:
    return [p for p in space.valid_points() if p["outputs_flat"] > 1]


@pytest.mark.parametrize(
    "case, whole",
    [*((c, True) for c in CASES), (STRIDE1, False), (STRIDE1, True)],
    ids=["default-whole", "window3-whole", "odd-whole", "stride1", "stride1-whole"],
)
def test_flat_cpu_points_match_the_reference(case, whole):
    """Every flat point of the stride-1 Case, a third of CASES' whole-graph kernels'."""
    space = Space(case, "llvm", whole=whole)
    points = _flat_points(space)
    assert {p["outputs_flat"] for p in points} == {2, 4} and any(p["vector"] for p in points)
    points = points if case == STRIDE1 else points[::3]
    with CandidateEvaluator(case, TargetSpec("llvm"), QUICK, workers=2, whole=whole) as evaluator:
        records = evaluator.evaluate([space.config(p) for p in points])
    failed = [(p, r) for p, r in zip(points, records) if r["status"] != "ok"]
    assert not failed, failed[:3]


def test_flat_points_are_pruned_where_they_cannot_apply():
    space = Space(STRIDE1.replace(channels=3), "llvm")  # 363 outputs: no vector of 2 or 4
    serial = space.seeds()[0]
    assert space.why_invalid({**serial, "outputs_flat": 2, "vector": True}) == (
        "vector width does not fit"
    )
    assert space.why_invalid({**serial, "outputs_flat": 2, "outputs_w": 2}) == (
        "outputs along the flattened output and along W or H at once"
    )
    whole = Space.for_target(DEFAULT, CUDA, whole=True)  # a prologue: vector stores only
    assert whole.why_invalid(whole.seeds()[2]) is None and whole.seeds()[2]["vector"]


def _global_accesses(case: Case, params: dict, whole: bool, folder) -> list[str]:
    """The global loads and stores of the PTX nvcc makes of the point's CUDA source."""
    (folder / "k.cu").write_text(_cuda_source(case, params, whole))
    ptx = folder / "k.ptx"
    subprocess.run(["nvcc", "--ptx", "-arch=sm_90", "-o", ptx, folder / "k.cu"], check=True)
    return re.findall(r"^\s*(?:@!?%\w+\s+)?((?:ld|st)\.global[\w.]*)", ptx.read_text(), re.M)


@pytest.mark.nvcc
@pytest.mark.parametrize("whole", [False, True], ids=["pool", "whole"])
def test_pairs_of_the_flat_output_store_one_vector_and_read_no_output_back(whole, tmp_path):
    """Inductor's launch on `s1-32`: 128 threads, float2 stores, no load but the window's."""
    space = Space.for_target(S1_32, CUDA, whole)
    seed = space.seeds()[2]
    assert space.config(seed) == PoolSchedule(
        threads=128, outputs_flat=2, unroll=True, vector=True, masked_loads=True
    )
    assert "__launch_bounds__(128)" in _cuda_source(S1_32, seed, whole)
    ops = _global_accesses(S1_32, seed, whole, tmp_path)
    outputs = 2 if whole else 1  # the graph returns two of its three Adds
    assert [op for op in ops if op.startswith("st.")] == ["st.global.v2.f32"] * outputs
    assert sum(op.startswith("ld.") for op in ops) == 2 * 4


@pytest.mark.nvcc
def test_a_pair_within_a_row_loads_the_columns_it_shares_once(tmp_path):
    """32 outputs a row: a thread's two 2x2 windows share a column: 6 loads, not 8."""
    case = Case(channels=8, height=33, width=33, window=2, stride=1, prelude=False, tail=1)
    seed = Space.for_target(case, CUDA, whole=True).seeds()[2]
    ops = _global_accesses(case, seed, True, tmp_path)
    assert sum(op.startswith("ld.") for op in ops) == 6 and ops[-1] == "st.global.v2.f32"


def test_points_with_the_knob_at_1_keep_the_records_and_keys_of_points_stored_before_it(
    tmp_path,
):
    """The committed default run: every trial's params and arm's schedule read back to their
    record and key, and a spread of points compiles to the code and launch it measured."""
    with tarfile.open(ROOT / "reports" / "h200" / "run.tar.xz") as stored:
        stored.extractall(tmp_path)
    run = read_json(tmp_path / "run" / "run.json")
    rows = read_json(tmp_path / "run" / "tuners" / "optuna" / "trials.json")
    for row in rows:
        before = recorded(row["params"])
        assert key(row["params"]) == key(before) == row["key"]
        assert PoolSchedule(**row["params"]).to_dict() == before
    schedules = [arm["schedule"] for arm in run["arms"] if "threads" in (arm.get("schedule") or {})]
    assert len(schedules) >= 2 and all(PoolSchedule(**s).to_dict() == s for s in schedules)
    spec, case = TargetSpec.of_json(run["target_spec"]), Case.from_dict(run["case"])
    target = spec.tvm()
    _, func = fused_pool_function(fused_stage(case, tuned_task_arm(), target))
    measured = [row for row in rows if row["status"] == "ok"][::60]
    assert len(measured) >= 6
    for row in measured:
        scheduled = kernel_module(PoolSchedule(**row["params"]).apply(func, target))
        executable = tvm.compile(scheduled, target=target)
        assert kernel_key(executable, launch_configs(scheduled)) == row["kernel_key"], row


def test_a_te_kernel_of_32_bit_indices_takes_flat_points_and_one_whose_pool_is_returned_not():
    """Two chained Adds right on llvm; a returned pool value is refused clearly."""
    import numpy as np
    from tvm import te, topi

    x = te.placeholder((1, 2, 7, 7), name="x")
    pool = topi.nn.pool2d(x, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "max")
    first = te.compute(pool.shape, lambda *i: pool(*i) + 1.0, name="first")
    second = te.compute(pool.shape, lambda *i: first(*i) + 1.0, name="second")
    data = np.random.default_rng(0).random((1, 2, 7, 7), dtype="float32")
    want = np.max([data[:, :, a : a + 6, b : b + 6] for a in (0, 1) for b in (0, 1)], axis=0)
    target = make_target("llvm")
    for flat, vector in ((2, True), (4, False)):
        point = PoolSchedule(outputs_flat=flat, unroll=True, vector=vector)
        scheduled = point.apply(te.create_prim_func([x, first, second]), target)
        args = [tvm.runtime.tensor(a) for a in (data, np.zeros_like(want), np.zeros_like(want))]
        tvm.compile(kernel_module(scheduled), target=target)["main"](*args)
        assert np.allclose(args[1].numpy(), want + 1) and np.allclose(args[2].numpy(), want + 2)
    with pytest.raises(ValueError, match="the reduced value is a function output"):
        PoolSchedule(outputs_flat=2).apply(te.create_prim_func([x, pool, first]), target)
