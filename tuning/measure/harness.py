"""The one end-to-end harness: every arm of the graph, the same protocol, all samples kept.

A trial loads every arm's library (`arm_libraries`) in one fresh process (`trial_process.py`), in an
order alternating between trials, checks each against its reference (`workload.py`), then times the
correct ones in interleaved blocks ordered by a Williams design (`blocks.py`): each arm's three
figures in every block.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import tvm
from tvm import relax

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.protocols import TimedArm
from pool_fusion_tuning.baselines.target import TargetSpec

from .arm_libraries import build_arm
from .blocks import measure_blocks
from .profiled import profile_arms
from .protocol import Protocol
from .vm_arms import CapturedVMArm, VMArm, device_for
from .workload import Workload, as_workload

# 2: every figure's samples per block, and every block's order (1: figure 1 only, flat).
TRIAL_FORMAT = 2


def check(subject, arm: TimedArm, checks: int) -> dict:
    """`subject` (a Case or a workload) checks `arm` over `checks` input draws."""
    return as_workload(subject).check(arm, checks)


@dataclass(frozen=True)
class TrialJob:
    """One trial, as it crosses into its process (picklable). `subject`: a Case or a workload.
    `peers`: other frameworks' versions of the graph, checked and timed with the arms. `ir_dir`:
    where a build here dumps its IR. `library_dir`: each arm's prebuilt library
    (`arm_libraries`); an arm missing there is built here and its library left for later trials."""

    subject: Case | Workload
    arms: list
    target: TargetSpec
    protocol: Protocol
    index: int
    ir_dir: str | None = None
    peers: tuple = ()
    library_dir: str | None = None
    profile: bool = False  # on a GPU, each timed arm's kernel sum and captured call too


def run_trial(job: TrialJob, progress=None, step=None) -> dict:
    """One trial in this process: check results, every figure's samples (us) per arm and block,
    and every block's order. `progress(message)` hears each step, `step(done, blocks)` each block
    begun."""
    say = progress or (lambda message: None)
    arms, protocol, index, peers = job.arms, job.protocol, job.index, job.peers
    ir_dir, library_dir = job.ir_dir, job.library_dir
    workload = as_workload(job.subject)
    target = job.target.tvm()
    device = device_for(target)
    order = arms if index % 2 == 0 else list(reversed(arms))
    built: dict[str, TimedArm] = {}
    checks, kernels, graphs, build_s, loaded = {}, {}, {}, {}, []
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
        built[name] = workload.peer(name, job.target.kind)
        build_s[name] = time.monotonic() - started
    started = time.monotonic()
    check_by_arm = {}
    for name, arm in built.items():
        began = time.monotonic()
        checks[name] = workload.check(arm, protocol.checks)
        check_by_arm[name] = time.monotonic() - began
    check_s, started = time.monotonic() - started, time.monotonic()
    timed = {
        name: built[name]
        for name in [a.name for a in arms] + list(peers)
        if checks[name]["correct"]
    }
    spent: dict = {}
    timing = measure_blocks(workload, timed, protocol, index, job.target.is_cuda, say, step, spent)
    profiled = {}
    if job.profile and job.target.is_cuda and timed:
        say(f"trial {index}: profiling and capturing each arm's call")
        began = time.monotonic()
        profiled = profile_arms(timed, workload.input(0), protocol)
        spent["profile_s"] = time.monotonic() - began
    walls = {
        "build_s": build_s,
        # Loading each arm's library and making its VM here (replacing trial 0's `build_s` by the
        # builders' times), and each check's time.
        "load_s": {a.name: build_s[a.name] for a in arms},
        "peer_s": {name: build_s[name] for name in peers},  # torch.compile's wrappers, ...
        "check_s": check_s,
        "check_by_arm_s": check_by_arm,
        "timing_s": time.monotonic() - started,
        **spent,
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
        **({"profiled": profiled} if profiled else {}),
        "wall_s": walls,
    }
