"""The pull request's repro: a script that needs TVM alone (with NumPy and tvm_ffi) and shows
apache/tvm#20401 in the fused kernel's launch, under the CUDA pipeline's dlight rules before the
patch and as the patch leaves them; on a CUDA GPU it times the kernel too.

PR.md carries the script and what it printed (its launch part: no GPU here) when `tune
upstream` wrote the text, run in a child process against the installed TVM with the patch's
modules registered as TVM would import them (overlay.py): the launch figures PR.md states are
the script's own output, not copied from elsewhere. The issue's graph and the launch walk are
the text TVM's test of the rule holds too (tvm_test.py), so the two cannot drift apart.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tuning.base.errors import UsageError

REPRO = "repro.py"

# The issue's graph and the launch of a kernel, as TVM's test of the rule and the script write
# them.
ISSUE_GRAPH = r"""
def _issue_graph():
    # apache/tvm#20401's graph: nine Adds of a 16-channel input concatenated into 144
    # channels, a 2x2 max pool, and two Adds after it, both returned.
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 16, 64, 64), "float32"))
    one = relax.const(1, "float32")
    with bb.function("main", [x]):
        with bb.dataflow():
            groups = []
            for _ in range(3):
                leaves = [bb.emit(relax.op.add(x, one)) for _ in range(3)]
                joined = bb.emit(relax.op.concat(leaves, axis=1))
                groups.append(bb.emit(relax.op.add(joined, one)))
            pooled = bb.emit(relax.op.nn.max_pool2d(bb.emit(relax.op.concat(groups, axis=1)), 2, 2))
            first = bb.emit(relax.op.add(pooled, one))
            second = bb.emit(relax.op.add(first, one))
            out = bb.emit_output(relax.Tuple([first, second]))
        bb.emit_func_output(out)
    return bb.get()


def _launch(func: tirx.PrimFunc) -> dict:
    extents = {}

    def visit(loop: tirx.For):
        if loop.kind == tirx.ForKind.THREAD_BINDING:
            extents[loop.thread_binding.thread_tag] = int(loop.extent)

    tvm_ffi.structural_walk(func.body, (tirx.For, visit), order="post")
    return extents
"""

SCRIPT = (
    '''"""apache/tvm#20401: the fused MaxPool2d + Add kernel of the issue's graph under the CUDA
pipeline's dlight rules before this patch and with it: its launch, on a CUDA GPU its time."""

import numpy as np
import tvm_ffi

import tvm
from tvm import relax, tirx
from tvm.relax.backend.cuda import pipeline as cuda_pipeline
from tvm.s_tir import dlight as dl
from tvm.target import Target
'''
    + ISSUE_GRAPH
    + """

BEFORE = ("Matmul", "GEMV", "Reduction", "GeneralReduction", "Fallback")  # the list before it


def fused_pool(target, rules):
    # The CUDA pipeline's legalization; its last pass, dlight's, with `rules` if given.
    passes = cuda_pipeline.legalize_passes(target)
    if rules:
        passes[-1] = dl.ApplyDefaultSchedule(*(getattr(dl.gpu, rule)() for rule in rules))
    with target:
        mod = tvm.transform.Sequential(passes)(_issue_graph())
    (name,) = [gv.name_hint for gv in mod.functions if "pool" in gv.name_hint]
    return name, mod[name].with_attr("global_symbol", "main")


def kernel_us(func, device):
    kernel = tvm.compile(tvm.IRModule({"main": func}), target=Target.from_device(device))
    shapes = [[int(n) for n in func.buffer_map[p].shape] for p in func.params]
    rng = np.random.default_rng(0)
    args = [tvm.runtime.tensor(rng.uniform(-1, 1, s).astype("float32"), device) for s in shapes]
    timer = kernel.mod.time_evaluator("main", device, repeat=20, min_repeat_ms=20)
    return timer(*args).median * 1e6


if __name__ == "__main__":
    gpu = tvm.cuda()
    target = Target.from_device(gpu) if gpu.exist else Target("nvidia/geforce-rtx-3090-ti")
    for label, rules in (("before the patch", BEFORE), ("with the patch", None)):
        name, func = fused_pool(target, rules)
        launch = _launch(func)
        blocks, threads = launch["blockIdx.x"], launch["threadIdx.x"]
        line = f"{label}: {name}, {blocks} blocks x {threads} threads"
        print(line + (f", {kernel_us(func, gpu):.2f} us" if gpu.exist else ""))
"""
)

# In the child: the patch's modules registered (overlay.py, from TVM_OVERLAY), then the script.
_RUN = (
    "import runpy, sys, tuning.upstream.overlay; runpy.run_path(sys.argv[1], run_name='__main__')"
)


def launch_output(patched: dict[str, str]) -> str:
    """What the script prints without a GPU against the installed TVM with the `patched` files
    (path in TVM's tree -> text) in place of its own."""
    with tempfile.TemporaryDirectory(prefix="tune-repro-") as scratch:
        folder = Path(scratch)
        for path, text in patched.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
        (folder / REPRO).write_text(SCRIPT)
        project = str(Path(__file__).resolve().parents[2])
        paths = [project, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
        env = os.environ | {
            "TVM_OVERLAY": scratch,
            "PYTHONPATH": os.pathsep.join(p for p in paths if p),
            "CUDA_VISIBLE_DEVICES": "",  # the launch part alone, on any machine
        }
        done = subprocess.run(
            [sys.executable, "-P", "-c", _RUN, str(folder / REPRO)],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        last = " | ".join(done.stderr.strip().splitlines()[-2:])[-400:]
        raise UsageError(f"the PR's repro script failed (exit status {done.returncode}): {last}")
    return done.stdout
