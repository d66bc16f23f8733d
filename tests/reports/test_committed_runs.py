"""The committed H200 run (reports/h200/run.tar.xz) renders again without
TVM to their committed report.md, byte for byte, and give a comment for the issue thread within
its limit, with its table and verdicts."""

import json
import tarfile

import pytest
from conftest import ROOT, issue_numbers, python_without_tvm
from test_report import _check_comment

STORED = ROOT / "reports" / "h200"
# (archive, the folder it holds, the committed report.md)
RUNS = {
    "default": (STORED / "run.tar.xz", "run", STORED / "report.md"),
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def rendered(request, tmp_path_factory):
    archive, folder, committed = RUNS[request.param]
    out = tmp_path_factory.mktemp(request.param)
    with tarfile.open(archive) as stored:
        stored.extractall(out, filter="data")
    run = out / folder
    stored_json = run / "report.json"
    before = json.loads(stored_json.read_text()) if stored_json.exists() else None
    python_without_tvm(
        "from reports.render import render_run\nfrom tuning.runfolder.store import Run\n"
        f"render_run(Run({str(run)!r}))"
    )
    return request.param, run, committed, before


def test_a_committed_run_renders_its_committed_report_again(rendered):
    _, run, committed, before = rendered
    assert (run / "report.md").read_text() == committed.read_text()
    if before is not None:  # the same figures; the last digit of a float may differ by machine
        assert _close(json.loads((run / "report.json").read_text()), before)


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


def _close(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b
