"""The report's "Each matmul beside cuBLAS" from a cublas_gemms.json record: the committed H200
convnext_tiny run given one (shapes of its matmuls, cuBLAS times made up for the test), rendered
again without TVM; without the record, no section."""

import json
import tarfile

import pytest
from conftest import ROOT, python_without_tvm, read_json

STORED = ROOT / "reports" / "h200" / "models" / "models.tar.xz"
SECTION = "## Each matmul beside cuBLAS"
# convnext_tiny's first stage MLP: 56 x 56 pixels, 96 -> 384 -> 96 channels, each with its bias
FIRST = {"m": 3136, "n": 384, "k": 96, "batch": None, "bias": True, "call": "F.linear"}
SECOND = {"m": 3136, "n": 96, "k": 384, "batch": None, "bias": True, "call": "F.linear"}
RECORD = {
    "protocol": {"number": 20, "repeat": 5, "min_repeat_ms": 10, "checks": 2},
    "tf32": {"cudnn_allow_tf32": False, "matmul_allow_tf32": False},
    "shapes": [
        {
            **FIRST,
            "kernels": ["fused_matmul_add1"],
            "measured": {"status": "ok", "kernel_us": 20.0, "timer": "fake"},
        },
        {
            **SECOND,
            "kernels": ["fused_matmul1_add2"],
            "measured": {"status": "failed", "reason": "run error", "detail": "no figure"},
        },
    ],
    "unread": {"fused_matmul8_add16": "2 reduction blocks, not one"},
    "complete": True,
}


def _rendered(tmp_path, record: dict | None) -> tuple[str, dict]:
    with tarfile.open(STORED) as stored:
        stored.extractall(tmp_path)
    run = tmp_path / "models" / "convnext_tiny"
    if record is not None:
        (run / "cublas_gemms.json").write_text(json.dumps(record))
    python_without_tvm(
        "from pool_fusion_tuning.reports.model_report import render_model_run\n"
        "from pool_fusion_tuning.runfolder.store import Run\n"
        f"render_model_run(Run({str(run)!r}))"
    )
    return (run / "report.md").read_text(), read_json(run / "report.json")


def test_each_matmul_is_shown_beside_cublas_s_gemm_of_its_shape(tmp_path):
    text, report = _rendered(tmp_path, RECORD)
    section = text[text.index(SECTION) :].split("\n## ")[0]
    times = {k["name"]: k["kernel_us"] for k in report["kernels"]}
    first = times["fused_matmul_add1"]
    flop = 2 * 3136 * 384 * 96 / 1e12
    assert (
        f"| `fused_matmul_add1` | 3136 x 384 x 96 + bias | 3 | {first['default']:.1f} | "
        f"{first['fixed']:.1f} | 20.0 | {first['fixed'] / 20:.2f} | "
        f"{flop / first['fixed'] * 1e6:.1f} | {flop / 20 * 1e6:.1f} |"
    ) in section
    second = times["fused_matmul1_add2"]["fixed"]
    # a shape cuBLAS could not be timed for: no time, no ratio
    assert "| `fused_matmul1_add2` | 3136 x 96 x 384 + bias | 3 | " in section
    assert section.count("\n| `fused") == 2 and f"{second:.1f} | — | — |" in section
    assert "Not timed in PyTorch: `fused_matmul1_add2` (no figure)." in section
    # costliest first: 3 x 27.8 us before 3 x 17.3 us
    assert section.index("`fused_matmul1_add2` |") < section.index("`fused_matmul_add1` |")
    assert "`fixed` / cuBLAS" in section  # no tuned kernel in this run: its last list
    assert "TF32 off; epilogue: bias add only" in section.replace("\n", " ")
    assert "the median of 5 samples" in section
    assert "No GEMM shape read: `fused_matmul8_add16` (2 reduction blocks, not one)." in section
    assert report["cublas"]["shapes"][0]["kernels"] == ["fused_matmul_add1"]


def test_a_batched_gemm_s_shape_leads_with_its_batch():
    from pool_fusion_tuning.reports.cublas_md import gemm_label, gemm_tflop

    shape = {"m": 5, "n": 7, "k": 8, "batch": 4, "bias": False}
    assert gemm_label(shape) == "4 x 5 x 7 x 8"
    assert gemm_tflop(shape) == pytest.approx(2 * 4 * 5 * 7 * 8 / 1e12)


def test_without_the_record_there_is_no_section(tmp_path):
    text, report = _rendered(tmp_path, None)
    assert SECTION not in text and "cublas" not in report
