"""Each TVM matmul kernel's GEMM in PyTorch eager, timed alone on the GPU (cuBLAS, fp32, TF32 off):
the class table sums kernels by name, and only the same shape alone says what cuBLAS does with it.

The kernels the report classes matmul (`kernel_classes.tvm_class`), their shapes read off the
kernels (`baselines/models/gemm_shape.py`); a shape shared by kernels is timed once. Random inputs
(torch.manual_seed(0)) in eager's layouts: F.linear(x[M, K], w[N, K], b[N]); torch.bmm (baddbmm
with a bias) where batched. Timed as the TVM kernels are: the same GPU timer, kernel_times.json's
protocol, its median; cublas_gemms.json written after each shape, so a resume times those left.
Without PyTorch or a CUDA device nothing is written, and the report has no section.
"""

from __future__ import annotations

import functools
import importlib.util
import pickle
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from pool_fusion_tuning.reports.cublas_md import CUBLAS_FILE
from pool_fusion_tuning.reports.kernel_classes import tvm_class
from pool_fusion_tuning.runfolder.model_records import (
    Analysis,
    CublasGemm,
    CublasGemms,
    KernelTimes,
)
from pool_fusion_tuning.runfolder.store import Run, RunError, read_record, write_json
from pool_fusion_tuning.tuning.candidates.outcome import Reason, Status, failed
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol

from .kernel_times import FILE as KERNEL_TIMES
from .kernel_times import measure_in_turn

PHASE = "cuBLAS GEMMs"


def cublas_gemms_left(run: Run, plan) -> bool:
    """Whether the run (a `ModelPlan`'s) has GEMMs left to time: on CUDA, with PyTorch."""
    if not plan.target.is_cuda or plan.analyze_only or importlib.util.find_spec("torch") is None:
        return False
    path = run.path / CUBLAS_FILE
    return not (path.exists() and read_record(path, CublasGemms).get("complete", False))


def gemm_call_name(batch: int | None, bias: bool) -> str:
    if batch is None:
        return "F.linear"
    return "torch.baddbmm" if bias else "torch.bmm"


def gemm_call(torch, shape: CublasGemm, device: str) -> tuple[Any, tuple]:
    """PyTorch eager's call of `shape` (`gemm_call_name`) and its random arguments on `device`."""
    m, n, k, batch = shape["m"], shape["n"], shape["k"], shape["batch"]

    def draw(*dims: int):
        return torch.randn(*dims, device=device)

    bias = draw(n) if shape["bias"] else None
    if batch is None:
        return torch.nn.functional.linear, (draw(m, k), draw(n, k), bias)
    left, right = draw(batch, m, k), draw(batch, k, n)
    return (torch.bmm, (left, right)) if bias is None else (torch.baddbmm, (bias, left, right))


def gemm_shapes(analysis: Analysis, funcs: dict) -> tuple[list[CublasGemm], dict[str, str]]:
    """The GEMM shapes of the analysis' matmul kernels, each with the kernels of that shape, and
    the matmul kernels whose shape is not read, with why."""
    from pool_fusion_tuning.baselines.models.gemm_shape import GemmShapeUnread, gemm_shape

    shapes: dict[Any, list[str]] = {}
    unread = {}
    for kernel in analysis["kernels"]:
        name = kernel["name"]
        if tvm_class(dict(kernel)) != "matmul":
            continue
        try:
            shapes.setdefault(gemm_shape(funcs[name]), []).append(name)
        except GemmShapeUnread as error:
            unread[name] = str(error)
    found = [
        CublasGemm(
            kernels=names,
            batch=shape.batch,
            m=shape.m,
            n=shape.n,
            k=shape.k,
            bias=shape.bias,
            call=gemm_call_name(shape.batch, shape.bias),
        )
        for shape, names in shapes.items()
    ]
    return found, unread


def measure_gemm(shape: CublasGemm, protocol: KernelProtocol) -> dict:
    """In the measuring process: {"measured": its Measurement, "tf32": the switches it ran
    under}, or {"absent": why} without PyTorch or a CUDA device."""
    try:
        import torch
    except ImportError:
        return {"absent": "PyTorch is not installed"}
    if not torch.cuda.is_available():
        return {"absent": "no CUDA device"}
    import numpy as np

    from pool_fusion_tuning.baselines.models.eager_check import tf32, tf32_state
    from pool_fusion_tuning.tuning.measure.gpu_timer import GPU_TIMER, QueuedGpuTimer

    torch.manual_seed(0)
    with torch.no_grad(), tf32(False):
        function, args = gemm_call(torch, shape, "cuda")
        timer = QueuedGpuTimer(function, args, repeat_ms=protocol.min_repeat_ms)
        samples = timer(protocol.repeat)
        state = tf32_state()
    if samples is None:
        return {"measured": failed(Reason.RUN_ERROR, str(timer.reason)), "tf32": state}
    measured = {
        "status": Status.OK,
        "kernel_us": float(np.median(samples)),
        "samples_us": samples,
        "timer": GPU_TIMER,
    }
    return {"measured": measured, "tf32": state}


def time_cublas_gemms(
    run: Run, kernels_file: str | None, progress, measure=measure_gemm
) -> CublasGemms | None:
    """Every GEMM shape of the run's matmul kernels not yet in cublas_gemms.json, timed; the
    file's data, or None where PyTorch or a CUDA device is absent (nothing written)."""
    path = run.path / CUBLAS_FILE
    if path.exists():
        stored: dict[str, Any] = dict(read_record(path, CublasGemms))
    else:
        if kernels_file is None:
            raise RunError(f"{run.path}: the model's kernels were not prepared")
        import tvm  # noqa: F401  (unpickling the kernels needs TVM's types)

        analysis = read_record(run.path / "analysis.json", Analysis)
        shapes, unread = gemm_shapes(analysis, pickle.loads(Path(kernels_file).read_bytes()))
        protocol = asdict(_protocol(run))
        stored = {"protocol": protocol, "tf32": {}, "shapes": shapes, "unread": unread}
        if unread:
            said = "; ".join(f"{name} ({why})" for name, why in unread.items())
            progress.line(f"no GEMM shape read: {said}")
    shapes = stored["shapes"]
    left = [i for i, shape in enumerate(shapes) if "measured" not in shape]
    progress.start(PHASE)
    timing = KernelProtocol(**stored["protocol"])
    absent = _time_left(path, stored, left, timing, progress, measure) if left else None
    if absent:
        progress.finish(PHASE, f"not timed: {absent}")
        return None
    stored["complete"] = True
    write_json(path, stored)
    run.add_wall(PHASE, progress.finish(PHASE, f"{len(shapes)} shape(s) timed in PyTorch eager"))
    return read_record(path, CublasGemms)


class _Absent(Exception):
    """No PyTorch or CUDA device in the measuring process: nothing can be timed."""


def _time_left(
    path: Path, stored: dict, left: list[int], protocol: KernelProtocol, progress, measure
) -> str | None:
    """Time the shapes at `left` in one spawned process, the file written after each; why none
    could be timed (no PyTorch or CUDA device there), or None."""
    shapes = stored["shapes"]
    done = iter(range(len(shapes) - len(left) + 1, len(shapes) + 1))

    def record(shape: dict, found: dict | None, failure: dict | None) -> None:
        if found is not None and "absent" in found:
            raise _Absent(found["absent"])
        found = found or {"measured": failure}
        shape["measured"] = found["measured"]
        stored["tf32"] = found.get("tf32", stored["tf32"])
        write_json(path, stored)
        progress.step(PHASE, next(done), len(shapes), ", ".join(shape["kernels"]))

    try:
        jobs = [shapes[index] for index in left]
        measure_in_turn(jobs, functools.partial(measure, protocol=protocol), record)
    except _Absent as absent:
        return str(absent)
    return None


def _protocol(run: Run) -> KernelProtocol:
    """The kernel protocol the TVM kernels were timed with (kernel_times.json's), so both sides
    have as many samples; the default where it holds none."""
    path = run.path / KERNEL_TIMES
    stored = read_record(path, KernelTimes).get("protocol") if path.exists() else None
    if not stored:
        return KernelProtocol()
    names = {f.name for f in fields(KernelProtocol)}
    return KernelProtocol(**{key: value for key, value in stored.items() if key in names})
