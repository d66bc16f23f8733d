"""The one end-to-end harness: every arm of the graph, the same protocol, all samples kept.

A trial loads every arm's library (`arm_libraries`) in one fresh process, in an order alternating
between trials, checks each against its reference (a Case's NumPy reference, a real network's
PyTorch eager: `workload.py`), then times the correct ones in interleaved blocks whose arm order
follows a Williams design (`blocks.py`): each arm's three figures in every block.

A trial's process is started before its trial (`TrialProcess`, started with the run): it
imports TVM, and where the trial has PyTorch peers what torch.compile loads, then waits for its
trial without touching the GPU. Its start-up so overlaps the tuners instead of the comparison;
the process is as fresh as before where it counts (its own CUDA context, allocator, caches).
The trial's record says where its time went (`wall_s`).
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import sys
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
    timing = measure_blocks(
        workload, timed, protocol, index, target.kind.name == "cuda", say, step, spent
    )
    walls = {
        "build_s": build_s,
        # Loading each arm's library and making its VM here (trial 0's `build_s` is replaced
        # by the builders' times), and each check's time.
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
        "wall_s": walls,
    }


def _trial_entry(jobs, replies, warm_peers: tuple, parent: int, spawned_at: float):
    """A trial's process: imports, then its trial when it comes (None: no trial, exit)."""
    die_with_parent(parent)
    imported = time.time()  # the process and the imports its entry needs (TVM)
    if warm_peers:
        from baselines.torch_peer import load_compilers

        try:
            load_compilers(warm_peers)
        except Exception:  # only a head start: the trial makes its peers and says what fails
            pass
    # Whether anything before the trial made a CUDA context (it must not: a waiting process
    # sits beside the tuners' measurements); the record says so.
    cuda_before_trial = _cuda_initialized()
    ready = time.time()
    job = jobs.get()
    if job is None:
        os._exit(0)
    args, peers, library_dir = job
    started = time.time()
    try:
        result = run_trial(
            *args,
            progress=lambda message: replies.put(("say", message)),
            peers=peers,
            step=lambda done, total: replies.put(("step", done, total)),
            library_dir=library_dir,
        )
        result["wall_s"].update(
            startup_s=imported - spawned_at,
            compiler_import_s=ready - imported,
            waited_s=started - ready,
        )
        result["cuda_before_trial"] = cuda_before_trial
        message = ("ok", result)
    except BaseException as error:  # reported to the parent, which fails the run loudly
        message = ("error", f"{type(error).__name__}: {error}")
    replies.put(message)
    # The trial is over once its message is out: the process ends without tearing down
    # PyTorch, CUDA and TVM, which would hold the next trial back for seconds.
    replies.close()
    replies.join_thread()
    os._exit(0)


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_initialized())


class TrialProcess:
    """A trial's fresh process, started now and given its trial later (`run`). `warm_peers`:
    the PyTorch peers it will time, whose compiler it imports while it waits."""

    def __init__(self, index: int, warm_peers: tuple = ()):
        context = multiprocessing.get_context("spawn")
        self.index = index
        self._jobs, self._replies = context.Queue(), context.Queue()
        self._process = context.Process(
            target=_trial_entry,
            args=(self._jobs, self._replies, tuple(warm_peers), os.getpid(), time.time()),
        )
        self._process.start()

    def run(self, args: tuple, peers: tuple, library_dir, say=None, step=None) -> dict:
        """Run the trial (`run_trial`'s leading arguments) and return its record. `say` and
        `step` hear its progress, as `run_trial` gives it."""
        self._jobs.put((args, peers, library_dir))
        listeners = {"say": say, "step": step}
        try:
            while True:
                try:
                    kind, *payload = self._replies.get(timeout=1)
                except queue_module.Empty:
                    if not self._process.is_alive():
                        code = self._process.exitcode
                        status, payload = "error", f"process died with exit code {code}"
                        break
                    continue
                if kind in listeners:
                    if listeners[kind] is not None:
                        listeners[kind](*payload)
                    continue
                status, payload = kind, payload[0]
                break
        except BaseException:  # Ctrl-C or an error here: the trial is not waited for
            self.stop()
            raise
        self._process.join()
        if status != "ok":
            raise RuntimeError(f"trial {self.index} failed: {payload}")
        return payload

    def stop(self) -> None:
        stop(self._process)


class TrialProcesses:
    """The run's trial processes, one per trial left to measure, started at once (from the
    thread that will use them: a child dies with the thread that started it); on leaving, any
    not used is stopped."""

    def __init__(self, indices: list[int], warm_peers: tuple = ()):
        self._waiting = {index: TrialProcess(index, warm_peers) for index in indices}

    def take(self, index: int, warm_peers: tuple = ()) -> TrialProcess:
        return self._waiting.pop(index, None) or TrialProcess(index, warm_peers)

    def __enter__(self) -> "TrialProcesses":
        return self

    def __exit__(self, *exc) -> None:
        for process in self._waiting.values():
            process.stop()
        self._waiting.clear()


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
    process: TrialProcess | None = None,
) -> dict:
    """Run one trial in a fresh process (`process`, started earlier, or a new one): an
    independent CUDA context, allocator and caches. `say` and `step` hear the trial's
    progress, as `run_trial` gives it."""
    process = process or TrialProcess(index, peers)
    args = (case, arms, target_spec, protocol, index, ir_dir)
    return process.run(args, peers, library_dir, say, step)
