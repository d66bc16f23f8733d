"""The committed H200 run renders without TVM to its report.md byte for byte and to its
report.json (by digest), with a comment within its limit."""

import hashlib
import json
import tarfile

import pytest
from conftest import ROOT, issue_numbers, python_without_tvm, read_json
from test_report import _check_comment

STORED = ROOT / "reports" / "h200"
# (archive, the folder it holds, the committed report.md, its report.json's digest)
RUNS = {
    "default": (
        STORED / "run.tar.xz",
        "run",
        STORED / "report.md",
        "e9b852f565cc0cbcf5d18661f75c0445b75e43663537c94ec4f7a93d21cc69a5",
    ),
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def rendered(request, tmp_path_factory):
    archive, folder, committed, digest = RUNS[request.param]
    out = tmp_path_factory.mktemp(request.param)
    with tarfile.open(archive) as stored:
        stored.extractall(out)
    run = out / folder
    python_without_tvm(
        "from pool_fusion_tuning.reports.render import render_run\n"
        "from pool_fusion_tuning.runfolder.store import Run\n"
        f"render_run(Run({str(run)!r}))"
    )
    return request.param, run, committed, digest


def test_a_committed_run_renders_its_committed_report_again(rendered):
    _, run, committed, digest = rendered
    assert (run / "report.md").read_text() == committed.read_text()
    assert _digest(read_json(run / "report.json")) == digest


def test_a_committed_run_gives_a_comment_for_the_thread(rendered):
    _, run, _, _ = rendered
    text = (run / "comment.md").read_text()
    rows = _check_comment(text)
    assert text.startswith("`tune --budget ") and "on NVIDIA H200 sm_90, TVM 0.27.0.post1" in text
    assert "gpu: NVIDIA H200" in text and "driver: 580.159.04" in text
    # the default arms with one-kernel, plain and captured, and the tuners' arms; the
    # spare PyTorch peers left out
    assert len(rows) == 13 and "3 more arms are in the full report." in text
    assert "fixed/on = 0.182 (95% CI 0.155–0.213): `fixed` is faster" in text
    assert "one-kernel/torch-compile = 0.366 (95% CI 0.349–0.384): `one-kernel` is faster" in (text)
    assert "| `fixed` | 19.89 | 8.70 | 2.37 | 0.182 (0.155–0.213) |" in text


def test_a_committed_run_s_report_names_no_issue_by_its_number(rendered):
    _, run, _, _ = rendered
    for name in ("report.md", "comment.md"):
        assert not issue_numbers((run / name).read_text()), name


def _digest(report) -> str:
    """SHA-256 of the report, floats to 8 significant digits (last digits vary by machine)."""

    def rounded(value):
        if isinstance(value, float):
            return float(f"{value:.8g}")
        if isinstance(value, dict):
            return {key: rounded(item) for key, item in value.items()}
        if isinstance(value, list):
            return [rounded(item) for item in value]
        return value

    return hashlib.sha256(json.dumps(rounded(report), sort_keys=True).encode()).hexdigest()
