"""The pull request's repro: a script that needs TVM alone (with tvm_ffi) and shows
apache/tvm#20401 in the launch of the issue's fused kernel under TVM's CUDA pipeline; on a CUDA
GPU it times the kernel too. It is run twice, on the base and with the patch: the same script,
no list of rules of its own.

PR.md carries the script and what it printed (its launch part: no GPU here) when `tune
upstream` wrote the text, run in a child process against the installed TVM (the base, as
tests/test_upstream.py checks), then with the patch's modules registered as TVM would import
them (overlay.py): the launch figures PR.md states are the script's own output. The issue's
graph and the launch walk are the text TVM's test of the rule holds too (tvm_test.py), so the
two cannot drift apart.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pool_fusion_tuning.tuning.base.errors import UsageError

REPRO = "repro.py"

# The issue's graph and the launch of a kernel, as the script and TVM's tests of the rule write
# them.
ISSUE_GRAPH = r"""
def _issue_graph():
    # apache/tvm#20401: nine Adds concatenated, a 2x2 max pool, two Adds after it, returned.
    bb, one = relax.BlockBuilder(), relax.const(1, "float32")
    x = relax.Var("x", relax.TensorType((1, 16, 64, 64), "float32"))

    def add(value):
        return bb.emit(relax.op.add(value, one))

    def concat(values):
        return bb.emit(relax.op.concat(values, axis=1))

    with bb.function("main", [x]):
        with bb.dataflow():
            joined = concat([add(concat([add(x) for _ in range(3)])) for _ in range(3)])
            first = add(bb.emit(relax.op.nn.max_pool2d(joined, 2, 2)))
            out = bb.emit_output(relax.Tuple([first, add(first)]))
        bb.emit_func_output(out)
    return bb.get()
"""
LAUNCH = r"""
def _launch(func: tirx.PrimFunc) -> dict:
    extents = {}

    def visit(loop: tirx.For):
        if loop.kind == tirx.ForKind.THREAD_BINDING:
            extents[loop.thread_binding.thread_tag] = int(loop.extent)

    tvm_ffi.structural_walk(func.body, (tirx.For, visit), order="post")
    return extents
"""

SCRIPT = (
    """import tvm_ffi

import tvm
from tvm import relax, tirx
from tvm.relax.backend.cuda import pipeline as cuda_pipeline
from tvm.target import Target

"""
    + ISSUE_GRAPH
    + "\n"
    + LAUNCH
    + """

if __name__ == "__main__":
    gpu = tvm.cuda()
    target = Target.from_device(gpu) if gpu.exist else Target("nvidia/geforce-rtx-3090-ti")
    with target:  # fusion, then dlight's rules
        mod = tvm.transform.Sequential(cuda_pipeline.legalize_passes(target))(_issue_graph())
    (pool,) = [gv for gv in mod.functions if "pool" in gv.name_hint]
    launch = _launch(mod[pool])
    line = f"{pool.name_hint}: {launch['blockIdx.x']} blocks x {launch['threadIdx.x']} threads"
    if gpu.exist:
        func = mod[pool].with_attr("global_symbol", "main")
        kernel = tvm.compile(tvm.IRModule({"main": func}), target=target)
        args = [tvm.runtime.empty(p.ty.shape, p.ty.dtype, gpu) for p in func.params]
        timer = kernel.mod.time_evaluator("main", gpu, repeat=20, min_repeat_ms=20)
        line += f", {timer(*args).median * 1e6:.2f} us"
    print(line)
"""
)

# In the child: the patch's modules registered (overlay.py, from TVM_OVERLAY), then the script.
_WITH_PATCH = (
    "import runpy, sys, tuning.upstream.overlay; runpy.run_path(sys.argv[1], run_name='__main__')"
)


def launch_output(patched: dict[str, str] | None) -> str:
    """What the script prints without a GPU against the installed TVM (the base, 0.27's wheel),
    with the `patched` files (path in TVM's tree -> text) in place of its own where given."""
    with tempfile.TemporaryDirectory(prefix="tune-repro-") as scratch:
        folder = Path(scratch)
        for path, text in (patched or {}).items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
        (folder / REPRO).write_text(SCRIPT)
        project = str(Path(__file__).resolve().parents[2])
        paths = [project, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
        env = os.environ | {
            "PYTHONPATH": os.pathsep.join(p for p in paths if p),
            "CUDA_VISIBLE_DEVICES": "",  # the launch part alone, on any machine
        }
        if patched is not None:
            env["TVM_OVERLAY"] = scratch
        runner = [] if patched is None else ["-c", _WITH_PATCH]
        command = [sys.executable, "-P", *runner, str(folder / REPRO)]
        done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        last = " | ".join(done.stderr.strip().splitlines()[-2:])[-400:]
        raise UsageError(f"the PR's repro script failed (exit status {done.returncode}): {last}")
    return done.stdout
