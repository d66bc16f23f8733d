"""PR.md's repro script, on the base TVM and patched, prints the launches PR.md states, which
are the committed evidence's."""

import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT, python_path

from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.upstream.bundle import PR
from pool_fusion_tuning.tuning.upstream.committed import committed
from pool_fusion_tuning.tuning.upstream.pr_repro import REPRO, SCRIPT

AUTHOR = ["--author", "Ada Lovelace <ada@example.org>"]
OVERLAY = (
    "import runpy, sys, tuning.upstream.overlay; runpy.run_path(sys.argv[1], run_name='__main__')"
)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("upstream")
    assert main(["upstream", "--out", str(out), *AUTHOR]) == 0
    return out


def _run(script, overlay=None) -> str:
    """The script's output without a GPU; with the patch's modules from `overlay` if given."""
    env = {**os.environ, "PYTHONPATH": python_path(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    runner = []
    if overlay is not None:
        env["TVM_OVERLAY"] = str(overlay)
        runner = ["-c", OVERLAY]
    done = subprocess.run(
        [sys.executable, "-P", *runner, str(script)],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _launches(output: str) -> list[tuple[int, int]]:
    return [(int(b), int(t)) for b, t in re.findall(r"(\d+) blocks x (\d+) threads", output)]


def test_the_pr_states_what_its_script_prints_before_and_with_the_patch(written, tmp_path):
    text = (written / PR).read_text()
    (script_text,) = re.findall(r"```python\n(.*?)```", text, re.S)
    assert script_text == SCRIPT and len(text.encode()) <= 8 * 1024
    assert "toolkit" not in script_text and "baselines" not in script_text  # TVM alone
    script = tmp_path / REPRO
    script.write_text(script_text)
    base, patched = _run(script), _run(script, overlay=written)
    assert f"$ python {REPRO}\n{base}$ python {REPRO}  # with this patch\n{patched}```" in text
    # The base gives the fused pool a block of 256 threads per output; the patch one thread.
    ((blocks, threads),) = _launches(base)
    assert (blocks, threads) == (144 * 32 * 32, 256)
    ((blocks, threads),) = _launches(patched)
    assert blocks * threads == 144 * 32 * 32 and threads <= 256


def test_the_script_s_launches_are_the_h200_evidence_s(written, tmp_path):
    """The CPU-printed launches are the committed H200 run's fused kernel's."""
    text = (written / PR).read_text()
    report, _, _ = committed("--run")
    kernels = {row["arm"]: (row["grid"], row["block"]) for row in report["fused_kernel"]}
    assert _launches(text.split("## Reproduce")[1]) == [kernels["on"], kernels["fixed"]]
