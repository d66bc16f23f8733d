"""PyTorch's GEMM beside each TVM matmul kernel, on the CPU: one shape per GEMM, eager's
layouts, the file written per shape and reused on resume, nothing written without CUDA."""

import pickle

import pytest
from conftest import read_json

from pool_fusion_tuning.baselines.models.analysis import analyze_lowered
from pool_fusion_tuning.baselines.models.importer import prepare_model
from pool_fusion_tuning.baselines.models.kernels import prim_funcs, rule_lists
from pool_fusion_tuning.baselines.models.model_spec import ModelOptions
from pool_fusion_tuning.baselines.pipeline import make_target, unscheduled
from pool_fusion_tuning.runfolder.store import Run, write_json
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.measure.gpu_timer import GPU_TIMER
from pool_fusion_tuning.tuning.models.cublas_gemms import (
    gemm_call,
    gemm_shapes,
    time_cublas_gemms,
)

pytestmark = pytest.mark.torch

FIRST, SECOND = "fused_matmul_add1", "fused_matmul1_add2"  # convnext_block's two Linears


@pytest.fixture(scope="module")
def kernels():
    """convnext_block's analysis and kernels plus a renamed copy of its first Linear."""
    model = prepare_model("tests/fixtures/model_blocks.py:convnext_block", ModelOptions())
    cuda = make_target("cuda")
    lowered = unscheduled(model.mod, cuda)
    analysis = analyze_lowered(lowered, cuda, rule_lists(cuda)).to_dict()
    funcs = prim_funcs(lowered)
    copy = next(dict(k) for k in analysis["kernels"] if k["name"] == FIRST)
    analysis["kernels"].append({**copy, "name": "fused_matmul_add1_copy"})
    funcs["fused_matmul_add1_copy"] = funcs[FIRST]
    return analysis, funcs


@pytest.fixture
def run(tmp_path, kernels):
    analysis, funcs = kernels
    write_json(tmp_path / "run.json", {"kind": "model"})
    write_json(tmp_path / "analysis.json", analysis)
    (tmp_path / "kernels.pkl").write_bytes(pickle.dumps(funcs))
    return Run(tmp_path)


def fake_gemm(shape, protocol) -> dict:
    """A measurement naming its shape (M + N / 1000 us)."""
    us = shape["m"] + shape["n"] / 1000
    return {"measured": {"status": "ok", "kernel_us": us, "timer": "fake"}, "tf32": {"x": False}}


def other_gemm(shape, protocol) -> dict:
    return {"measured": {"status": "ok", "kernel_us": 1.0, "timer": "other"}, "tf32": {}}


def test_the_matmul_kernels_shapes_are_read_each_shape_once(kernels):
    shapes, unread = gemm_shapes(*kernels)
    assert unread == {}  # the conv, norm and elementwise kernels are not matmuls: not tried
    by_kernels = {
        tuple(s["kernels"]): (s["m"], s["n"], s["k"], s["batch"], s["bias"], s["call"])
        for s in shapes
    }
    assert by_kernels == {
        (FIRST, "fused_matmul_add1_copy"): (64, 384, 96, None, True, "F.linear"),
        (SECOND,): (64, 96, 384, None, True, "F.linear"),
    }


def test_a_matmul_whose_shape_is_not_read_is_left_out_with_why(kernels):
    analysis, funcs = kernels
    conv = next(name for name in funcs if "conv2d" in name)
    analysis = {
        **analysis,
        "kernels": [*analysis["kernels"], {**analysis["kernels"][0], "name": "fused_matmul_conv"}],
    }
    shapes, unread = gemm_shapes(analysis, {**funcs, "fused_matmul_conv": funcs[conv]})
    assert unread == {"fused_matmul_conv": "not one reduction axis of constant extent"}
    assert len(shapes) == 2


def test_eager_calls_take_its_layouts():
    torch = pytest.importorskip("torch")
    linear = {"m": 6, "n": 4, "k": 3, "batch": None, "bias": True}
    function, args = gemm_call(torch, linear, "cpu")
    assert function is torch.nn.functional.linear
    assert [list(a.shape) for a in args] == [[6, 3], [4, 3], [4]]  # x[M, K], w[N, K], b[N]
    assert list(function(*args).shape) == [6, 4]
    assert gemm_call(torch, {**linear, "bias": False}, "cpu")[1][2] is None  # mm
    batched = {"m": 5, "n": 7, "k": 8, "batch": 4, "bias": False}
    function, args = gemm_call(torch, batched, "cpu")
    assert function is torch.bmm and list(function(*args).shape) == [4, 5, 7]
    function, args = gemm_call(torch, {**batched, "bias": True}, "cpu")
    assert function is torch.baddbmm and list(function(*args).shape) == [4, 5, 7]


def test_each_shape_is_written_as_timed_and_a_resume_times_only_those_left(run):
    kernels_file = str(run.path / "kernels.pkl")
    found = time_cublas_gemms(run, kernels_file, Progress(), measure=fake_gemm)
    assert found is not None and found["complete"] and found["tf32"] == {"x": False}
    times = {s["kernels"][0]: s["measured"]["kernel_us"] for s in found["shapes"]}
    assert times == {FIRST: 64.384, SECOND: 64.096}
    assert found["protocol"]["repeat"] == 5  # the kernel protocol's, as the TVM kernels'
    # interrupted after the first shape: only the second is timed again
    stored = read_json(run.path / "cublas_gemms.json")
    del stored["complete"], stored["shapes"][1]["measured"]
    write_json(run.path / "cublas_gemms.json", stored)
    again = time_cublas_gemms(run, None, Progress(), measure=other_gemm)  # no kernels needed
    assert again is not None
    assert [s["measured"]["timer"] for s in again["shapes"]] == ["fake", "other"]
    assert "cuBLAS GEMMs" in run.fields["phase_wall_s"]


def test_without_a_cuda_device_nothing_is_written(run):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here")
    assert time_cublas_gemms(run, str(run.path / "kernels.pkl"), Progress()) is None
    assert not (run.path / "cublas_gemms.json").exists()


@pytest.mark.gpu
def test_on_a_gpu_each_shape_is_timed_in_eager_with_tf32_off(run):
    found = time_cublas_gemms(run, str(run.path / "kernels.pkl"), Progress())
    assert found is not None and found["tf32"] == {
        "cudnn_allow_tf32": False,
        "matmul_allow_tf32": False,
    }
    for shape in found["shapes"]:
        measured = shape["measured"]
        assert measured["status"] == "ok", measured
        assert len(measured["samples_us"]) == found["protocol"]["repeat"]
        assert measured["kernel_us"] > 0 and measured["timer"] == GPU_TIMER
