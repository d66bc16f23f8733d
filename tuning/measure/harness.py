"""The one end-to-end harness: every arm of the graph, the same protocol, all samples kept.

A trial loads every arm's library (`arm_libraries`) in one fresh process, in an order alternating
between trials, checks each against its reference (a Case's NumPy reference, a real network's
PyTorch eager: `workload.py`), then times the correct ones in interleaved blocks whose arm order
follows a Williams design (`blocks.py`): each arm's three figures in every block.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import time
from pathlib import Path

import tvm
from tvm import relax

from baselines.pipeline import make_target
from baselines.protocols import TimedArm
from tuning.children import die_with_parent, stop

from .arm_libraries import build_arm
from .blocks import measure_blocks
from .protocol import Protocol
from .vm_arms import CapturedVMArm, VMArm, device_for
from .workload import as_workload

# 2: every figure's samples per block, and every block's order (1: figure 1 only, flat).
TRIAL_FORMAT = 2


def check(subject, arm: TimedArm, checks: int) -> dict:
    """`subject` (a Case or a workload) checks `arm` over `checks` input draws."""
    return as_workload(subject).check(arm, checks)


def run_trial(
    case,
    arms: list,
    target_spec: dict,
    protocol: Protocol,
    index: int,
    ir_dir: str | None = None,
    progress=None,
    peers: tuple = (),
    step=None,
    library_dir: str | None = None,
) -> dict:
    """One trial in the current process: check results, every figure's samples (us) per arm and
    block, and every block's order. `case`: a Case, or a workload (`workload.py`).

    `peers` names other frameworks' versions of the graph (`torch-eager`, `torch-compile`, ...),
    checked and timed with the arms. `progress(message)` hears each step, `step(done, blocks)`
    each block begun. `library_dir`: where each arm's compiled library is loaded from (built
    before the trials by `arm_libraries`); an arm without one there is built here, and its
    library left there for later trials."""
    say = progress or (lambda message: None)
    workload = as_workload(case)
    target = make_target(**target_spec)
    device = device_for(target)
    order = arms if index % 2 == 0 else list(reversed(arms))
    built, checks, kernels, graphs, build_s, loaded = {}, {}, {}, {}, {}, []
    for arm in order:
        started = time.monotonic()
        library = Path(library_dir) / f"{arm.name}.so" if library_dir else None
        if library is not None and library.exists():
            say(f"trial {index}: loading {arm.name}")
            executable = tvm.runtime.load_module(str(library))
            loaded.append(arm.name)
        else:  # no library built for it: built here, and left for later trials
            say(f"trial {index}: building {arm.name}")
            executable, found = build_arm(workload, arm, target, ir_dir, library, index == 0)
            if "kernels" in found:
                kernels[arm.name] = found["kernels"]
            if "cuda_graph_launches" in found:
                graphs[arm.name] = found["cuda_graph_launches"]
        built[arm.name] = (CapturedVMArm if arm.capture else VMArm)(
            relax.VirtualMachine(executable, device), device
        )
        build_s[arm.name] = time.monotonic() - started
    for name in peers:
        say(f"trial {index}: building {name}")
        started = time.monotonic()
        built[name] = workload.peer(name, target.kind.name)
        build_s[name] = time.monotonic() - started
    started = time.monotonic()
    for name, arm in built.items():
        checks[name] = workload.check(arm, protocol.checks)
    check_s, started = time.monotonic() - started, time.monotonic()
    timed = {
        name: built[name]
        for name in [a.name for a in arms] + list(peers)
        if checks[name]["correct"]
    }
    timing = measure_blocks(workload, timed, protocol, index, target.kind.name == "cuda", say, step)
    walls = {
        "build_s": build_s,
        "check_s": check_s,
        "timing_s": time.monotonic() - started,
        "libraries_loaded": loaded,
    }
    return {
        "trial": index,
        "format": TRIAL_FORMAT,
        "build_order": [arm.name for arm in order],
        "checks": checks,
        **timing,
        "kernels": kernels,
        "cuda_graph_launches": graphs,
        "wall_s": walls,
    }


def _trial_entry(queue, args, peers, library_dir, parent: int, spawned_at: float):
    die_with_parent(parent)
    started = time.time()
    try:
        result = run_trial(
            *args,
            progress=lambda message: queue.put(("say", message)),
            peers=peers,
            step=lambda done, total: queue.put(("step", done, total)),
            library_dir=library_dir,
        )
        result["wall_s"]["startup_s"] = started - spawned_at  # the process and its imports
        message = ("ok", result)
    except BaseException as error:  # reported to the parent, which fails the run loudly
        message = ("error", f"{type(error).__name__}: {error}")
    queue.put(message)
    # The trial is over once its message is out: the process ends without tearing down
    # PyTorch, CUDA and TVM, which would hold the next trial back for seconds.
    queue.close()
    queue.join_thread()
    os._exit(0)


def run_trial_process(
    case,
    arms,
    target_spec,
    protocol,
    index,
    ir_dir=None,
    peers: tuple = (),
    say=None,
    step=None,
    library_dir: str | None = None,
) -> dict:
    """Run one trial in a fresh process: independent CUDA context, allocator and caches.
    `say` and `step` hear the trial's progress, as `run_trial` gives it."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    args = (case, arms, target_spec, protocol, index, ir_dir)
    process = context.Process(
        target=_trial_entry, args=(queue, args, peers, library_dir, os.getpid(), time.time())
    )
    process.start()
    listeners = {"say": say, "step": step}
    try:
        while True:
            try:
                kind, *payload = queue.get(timeout=1)
            except queue_module.Empty:
                if not process.is_alive():
                    status, payload = "error", f"process died with exit code {process.exitcode}"
                    break
                continue
            if kind in listeners:
                if listeners[kind] is not None:
                    listeners[kind](*payload)
                continue
            status, payload = kind, payload[0]
            break
    except BaseException:  # Ctrl-C or an error here: the trial is not waited for
        stop(process)
        raise
    process.join()
    if status != "ok":
        raise RuntimeError(f"trial {index} failed: {payload}")
    return payload
