"""Check a compiled kernel against its reference (a Case's NumPy reference, a model kernel's
host reference: `task.py`), then time it (microseconds)."""

from __future__ import annotations

import numpy as np
import tvm

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.reference import (
    distinct_outputs,
    fused_pool_reference,
    random_input,
)
from pool_fusion_tuning.tuning.measure.gpu_timer import GPU_TIMER, gpu_time_us
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol

from .outcome import Outcome, Reason, Status, wrong


def _inputs(case: Case, biases: int, seed: int, whole: bool = False) -> list[np.ndarray]:
    if whole:  # the graph's input
        first = random_input(case, seed)
    else:
        rng = np.random.default_rng(seed)
        first = rng.uniform(-0.5, 0.5, case.pool_input_shape).astype("float32")
    return [first] + [np.array(1, dtype="float32") for _ in range(biases)]


def expected_outputs(case: Case, biases: int, seed: int, whole: bool = False) -> list[np.ndarray]:
    """What the Case's fused kernel must write for the inputs of `seed`, output by output."""
    first = _inputs(case, biases, seed, whole)[0]
    if whole:
        return distinct_outputs(case, first)
    return [fused_pool_reference(case, first)]


def upload_inputs(case: Case, biases: int, seed: int, device, whole: bool = False) -> list:
    """One check's arguments on `device` (local or an RPC session's): the inputs of `seed`,
    and the outputs poisoned with NaN so that an element never written shows."""
    outputs = [
        np.full(w.shape, np.nan, dtype="float32")
        for w in expected_outputs(case, biases, seed, whole)
    ]
    return [
        tvm.runtime.tensor(a, device=device)
        for a in (*_inputs(case, biases, seed, whole), *outputs)
    ]


def measure_library(path: str, task, target_kind: str, protocol: KernelProtocol) -> Outcome:
    """Check a compiled kernel of `task` (`task.KernelTask`) against its reference, then time
    it (microseconds)."""
    device = tvm.cuda(0) if target_kind == "cuda" else tvm.cpu(0)
    arguments = [task.upload(seed, device) for seed in range(protocol.checks)]
    return check_and_time(
        tvm.runtime.load_module(path),
        device,
        task,
        protocol,
        arguments,
        gpu_timer=target_kind == "cuda",
    )


def check_and_time(
    module, device, task, protocol: KernelProtocol, arguments: list, gpu_timer: bool = False
) -> Outcome:
    """Run `module` on each argument list of `task.upload` (seeds 0, 1, ...) and compare with
    `task.expected`; time it only if every output is right."""
    function = module["main"]
    worst = 0.0
    for seed, args in enumerate(arguments):
        function(*args)
        device.sync()
        wants = task.expected(seed)
        for got, want in zip((a.numpy() for a in args[-len(wants) :]), wants):
            if (np.isnan(got) & ~np.isnan(want)).any():  # NaN poison left: not written
                return wrong(Reason.OUTPUT_NOT_WRITTEN, None)
            error = float(np.nanmax(np.abs(got.astype(np.float64) - want), initial=0.0))
            if not task.matches(got, want):
                return wrong(Reason.WRONG_RESULT, error)
            worst = max(worst, error)
    samples, timer = time_kernel(module, "main", args, device, protocol, gpu_timer)
    return {
        "status": Status.OK,
        "kernel_us": float(np.median(samples)),
        "samples_us": samples,
        "max_abs_err": worst,
        "timer": timer,
    }


def time_kernel(
    module, name: str, args: list, device, protocol: KernelProtocol, gpu_timer: bool
) -> tuple[list[float], str]:
    """(samples in us per launch, the timer's name) of function `name` of `module` on `args`.
    The GPU timer where there is one; `time_evaluator` (host-side, launches included) only
    where there is none: each costs the device `repeat` x `min_repeat_ms` per kernel."""
    # A repeat of min_repeat_ms, as time_evaluator's: a tuner's candidate of milliseconds
    # is not queued 50 times a repeat (the GPU's time of a tune-top search went mostly there).
    samples = None
    if gpu_timer:
        samples = gpu_time_us(module[name], args, protocol.repeat, repeat_ms=protocol.min_repeat_ms)
    if samples is not None:
        return samples, GPU_TIMER
    evaluator = module.time_evaluator(
        name,
        device,
        number=protocol.number,
        repeat=protocol.repeat,
        min_repeat_ms=protocol.min_repeat_ms,
    )
    return [s * 1e6 for s in evaluator(*args).results], "time_evaluator"
