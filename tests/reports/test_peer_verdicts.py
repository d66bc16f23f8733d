"""Every model report says where PyTorch stands: each TVM arm against each peer in every figure
both have (reports/model_peers.py). The committed H200 run of NASNet, whose peers got no GPU time
with calls queued, rendered again without TVM: as recorded (no profile: the call path compares),
then with each arm's kernel sum and captured call recorded in its trial as
`tuning/measure/profiled.py` writes them, and with the TVM arms' queued GPU time taken away."""

import json
import shutil
import tarfile

import pytest
from conftest import ROOT, python_without_tvm

from reports.model_peers import peer_rows

STORED = ROOT / "reports" / "h200" / "models" / "models.tar.xz"
TVM, PEERS = ("tvm-default", "tvm-fixed"), ("torch-eager", "torch-compile")
NOT_CAPTURED = "RuntimeError: operation not permitted when stream is capturing"


# The three runs, rendered in one process without TVM: as recorded, profiled, and profiled
# with the TVM arms' queued GPU time taken away.
RUNS = ("recorded", "profiled", "no-gpu-time")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """run name -> (report.md, report.json, the profile recorded in its trial)."""
    folders, profiles = {}, {}
    root = tmp_path_factory.mktemp("stored")
    with tarfile.open(STORED) as stored:
        members = [m for m in stored.getmembers() if "/nasnetalarge" in m.name]
        stored.extractall(root, filter="data", members=members)
    for name in RUNS:
        folders[name] = tmp_path_factory.mktemp(name) / "nasnetalarge"
        shutil.copytree(root / "models" / "nasnetalarge", folders[name])
        if name != "recorded":
            profiles[name] = _profile(folders[name], drop_tvm_gpu_time=name == "no-gpu-time")
    python_without_tvm(
        "from pathlib import Path\nfrom reports.model import render_model_run\n"
        "from tuning.runfolder.store import Run\n"
        f"for path in {[str(f) for f in folders.values()]!r}:\n"
        "    render_model_run(Run.open(Path(path)))"
    )
    return {
        name: (
            (run / "report.md").read_text(),
            json.loads((run / "report.json").read_text()),
            profiles.get(name),
        )
        for name, run in folders.items()
    }


def _profile(run, drop_tvm_gpu_time):
    """Each arm's kernel sum and captured call, as a trial records them: the kernel sum from the
    arm's call-path median (a stand-in the test reads back), the capture 0.9 of it."""
    path = run / "trials" / "trial_0.json"
    record = json.loads(path.read_text())
    profiled = {}
    for arm in (*TVM, *PEERS):
        blocks = record["block_samples_us"]["call_path"][arm]
        median = sorted(s for block in blocks for s in block)[len(blocks) // 2]
        profiled[arm] = {"kernel_sum_us": median, "kernels_per_call": 3.0, "kernels_us": {}}
        profiled[arm]["captured_us"] = 0.9 * median
    del profiled["torch-compile"]["captured_us"]
    profiled["torch-compile"]["captured_reason"] = NOT_CAPTURED
    record["profiled"] = profiled
    if drop_tvm_gpu_time:
        for arm in TVM:
            record["block_samples_us"]["gpu_queued"][arm] = [[] for _ in range(8)]
    path.write_text(json.dumps(record))
    return profiled


def test_a_run_without_a_profile_compares_by_the_call_path(rendered):
    report, data, _ = rendered["recorded"]
    assert "nothing to compare" not in report and "no GPU time to compare" not in report
    rows = {(r["arm"], r["peer"]): list(r["figures"]) for r in peer_rows(data)}
    assert rows == {(a, p): ["call_path"] for a in TVM for p in PEERS}
    for peer in PEERS:
        assert f"Against `{peer}` (TVM / PyTorch): `tvm-default` end to end" in report
    assert "this run has no profile" in report and "## Against PyTorch" in report


def test_the_kernel_sum_and_the_captured_call_compare_each_tvm_arm_with_each_peer(rendered):
    report, _, profiled = rendered["profiled"]
    for arm in TVM:
        for peer in PEERS:
            ratio = profiled[arm]["kernel_sum_us"] / profiled[peer]["kernel_sum_us"]
            line = f"| `{arm}` | `{peer}` | kernel sum (CUPTI profile) |"
            (row,) = [r for r in report.splitlines() if r.startswith(line)]
            assert row.endswith(f"| {ratio:.3f} |")
        captured = f"| `{arm}` | `torch-eager` | captured into a CUDA graph |"
        assert any(r.startswith(captured) for r in report.splitlines())
        assert f"| `{arm}` | `torch-compile` | captured into a CUDA graph |" not in report
    assert f"- No captured call for `torch-compile`: {NOT_CAPTURED}" in report
    assert "end to end, own call path |" not in report.split("## Against PyTorch")[1].split("##")[0]
    assert "the kernel sum and the captured call compare instead" in report


def test_a_list_without_queued_gpu_time_is_held_against_the_default_by_its_kernel_sum(rendered):
    report, data, profiled = rendered["no-gpu-time"]
    gain_us = profiled["tvm-default"]["kernel_sum_us"] - profiled["tvm-fixed"]["kernel_sum_us"]
    assert data["recovered"]["fixed"]["measured_kernel_sum_ms"] == pytest.approx(gain_us / 1e3)
    assert "in the kernel sum of the whole call (CUPTI)" in report
    assert "no GPU time to compare" not in report
