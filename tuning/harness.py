"""The one end-to-end harness: every arm of the graph, the same protocol, all samples kept.

A trial builds every arm in one fresh process (build order alternating between trials), checks each
against the NumPy reference, then times the correct ones through the Relax VM (`invoke_stateful`)
in interleaved blocks whose arm order rotates. Trials are combined as the issue does.
"""

from __future__ import annotations

import itertools
import multiprocessing
import queue as queue_module
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from baselines.case import Case
from baselines.reference import matches, random_input, reference


@dataclass(frozen=True)
class Protocol:
    """Timing settings. The issue's full protocol is blocks=40, warmup_s=2, trials=5."""

    number: int = 10
    repeat: int = 5
    min_repeat_ms: int = 50
    warmup_calls: int = 75
    warmup_s: float = 0.5
    blocks: int = 8
    trials: int = 3
    checks: int = 3

    def to_dict(self) -> dict:
        return asdict(self)


def device_for(target):
    import tvm
    return tvm.cuda(0) if target.kind.name == "cuda" else tvm.cpu(0)


def outputs_of(vm_result) -> list[np.ndarray]:
    """The VM returns a tensor or a tuple of tensors; the reference returns a list."""
    if hasattr(vm_result, "numpy"):
        return [vm_result.numpy()]
    return [item.numpy() for item in vm_result]


def check(case: Case, vm, device, checks: int) -> dict:
    """Max abs error over `checks` input draws; `correct` if every output is within tolerance."""
    import tvm
    worst, correct = 0.0, True
    for seed in range(checks):
        x = random_input(case, seed)
        vm.set_input("main", tvm.runtime.tensor(x, device=device))
        vm.invoke_stateful("main")
        device.sync()
        got = outputs_of(vm.get_outputs("main"))
        want = reference(case, x)
        if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
            return {"correct": False, "max_abs_err": None, "reason": "output shapes differ"}
        for g, w in zip(got, want):
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w))))
            correct = correct and matches(g, w)
    return {"correct": correct, "max_abs_err": worst}


def run_trial(case: Case, arms: list, target_spec: dict, protocol: Protocol, index: int,
              ir_dir: str | None = None, progress=None) -> dict:
    """One trial in the current process; returns check results and samples (us) per arm."""
    from tvm import relax

    from baselines.anatomy import kernel_table
    from baselines.pipeline import lower, make_target

    say = progress or (lambda message: None)
    target = make_target(**target_spec)
    device = device_for(target)
    order = arms if index % 2 == 0 else list(reversed(arms))
    vms, checks, kernels = {}, {}, {}
    for arm in order:
        say(f"trial {index}: building {arm.name}")
        dump = Path(ir_dir) / arm.name if ir_dir else None
        mod = lower(case, arm, target, dump)
        executable = relax.build(mod, target=target, relax_pipeline=None, tir_pipeline="default")
        if target.kind.name == "cuda" and index == 0:
            kernels[arm.name] = kernel_table(mod, executable, target.attrs["arch"])
        vms[arm.name] = relax.VirtualMachine(executable, device)
        checks[arm.name] = check(case, vms[arm.name], device, protocol.checks)
    timed = [arm.name for arm in arms if checks[arm.name]["correct"]]
    samples = _time_interleaved(case, {k: vms[k] for k in timed}, device, protocol, index, say)
    return {"trial": index, "build_order": [arm.name for arm in order], "checks": checks,
            "samples_us": samples, "kernels": kernels}


def _time_interleaved(case, vms, device, protocol, index, say) -> dict:
    import tvm
    x = tvm.runtime.tensor(random_input(case, 0), device=device)
    timers = {}
    for name, vm in vms.items():
        vm.set_input("main", x)
        timers[name] = vm.time_evaluator("invoke_stateful", device, number=protocol.number,
                                         repeat=protocol.repeat,
                                         min_repeat_ms=protocol.min_repeat_ms)
    permutations = list(itertools.permutations(sorted(vms)))
    offset = index * 40
    for name in permutations[offset % len(permutations)] if permutations else ():
        say(f"trial {index}: warming up {name}")
        for _ in range(protocol.warmup_calls):
            vms[name].invoke_stateful("main")
        device.sync()
        deadline = time.monotonic() + protocol.warmup_s
        while time.monotonic() < deadline:
            timers[name]("main")
    samples = {name: [] for name in vms}
    for block in range(protocol.blocks):
        say(f"trial {index}: timing block {block + 1}/{protocol.blocks}")
        for name in permutations[(offset + block) % len(permutations)]:
            device.sync()
            samples[name].extend(float(s) * 1e6 for s in timers[name]("main").results)
    return samples


def _trial_entry(queue, args, verbose):
    progress = (lambda message: print(message, file=sys.stderr, flush=True)) if verbose else None
    try:
        queue.put(("ok", run_trial(*args, progress=progress)))
    except BaseException as error:  # reported to the parent, which fails the run loudly
        queue.put(("error", f"{type(error).__name__}: {error}"))


def run_trial_process(case, arms, target_spec, protocol, index, ir_dir=None,
                      verbose=False) -> dict:
    """Run one trial in a fresh process: independent CUDA context, allocator and caches."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    args = (case, arms, target_spec, protocol, index, ir_dir)
    process = context.Process(target=_trial_entry, args=(queue, args, verbose))
    process.start()
    while True:
        try:
            status, payload = queue.get(timeout=1)
            break
        except queue_module.Empty:
            if not process.is_alive():
                status, payload = "error", f"process died with exit code {process.exitcode}"
                break
    process.join()
    if status != "ok":
        raise RuntimeError(f"trial {index} failed: {payload}")
    return payload
