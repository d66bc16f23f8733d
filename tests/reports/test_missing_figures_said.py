"""Where a model run has no GPU time for an arm, or a rule list cannot build the model as TVM
ships it, the reports say why: the committed H200 models folder (whose NASNet peers got no GPU
time, with the timer's reason recorded), given a rule's failure in an analysis, rendered again
without TVM."""

import json
import tarfile

from conftest import ROOT, python_without_tvm, read_json

STORED = ROOT / "reports" / "h200" / "models" / "models.tar.xz"
FAILURE = {
    "rule": "Reduction",
    "message": "InternalError: Check failed: block_realize == old_block_realize_.get()",
    "upstream": "apache/tvm#20061",
    "next_rule": "GeneralReduction",
}


def test_the_reports_give_the_reason_of_a_missing_gpu_time_and_a_rule_failure(tmp_path):
    with tarfile.open(STORED) as stored:
        stored.extractall(tmp_path)
    run = tmp_path / "models" / "nasnetalarge"
    record = read_json(run / "trials" / "trial_0.json")
    reasons = record["gpu_queued_reasons"]  # as the H200 run recorded them
    assert set(reasons) == {"torch-eager", "torch-compile"}
    assert all(not block for block in record["block_samples_us"]["gpu_queued"]["torch-eager"])
    analysis = read_json(run / "analysis.json")
    analysis["kernels"][0]["failures"] = {"default": FAILURE}
    (run / "analysis.json").write_text(json.dumps(analysis))
    python_without_tvm(
        "from pathlib import Path\n"
        "from pool_fusion_tuning.reports.models_report import rerender_models\n"
        f"rerender_models(Path({str(tmp_path / 'models')!r}))"
    )
    summary = (tmp_path / "models" / "models.md").read_text()
    for arm, reason in reasons.items():
        assert reason.startswith("the host never got ahead of the GPU")
        assert f"No GPU time for nasnetalarge's `{arm}`: {reason}." in summary
    assert "nasnetalarge: `default` (Reduction raises on" in summary
    report = (run / "report.md").read_text()
    assert all(f"No GPU time for `{arm}`: {reason}." in report for arm, reason in reasons.items())
    kernel = analysis["kernels"][0]["name"]
    assert f"| `default` | `{kernel}` | Reduction |" in report
    assert "apache/tvm#20061" in report
