"""The one end-to-end harness: every arm of the graph, the same protocol, all samples kept.

A trial builds every arm in one fresh process (build order alternating between trials), checks each
against the NumPy reference, then times the correct ones in interleaved blocks whose arm order
follows a Williams design (`tuning/blocks.py`): each arm's three figures in every block.
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from baselines.case import Case
from baselines.reference import matches, random_input, reference

from .blocks import measure_blocks

# 2: every figure's samples per block, and every block's order (1: figure 1 only, flat).
TRIAL_FORMAT = 2


@dataclass(frozen=True)
class Protocol:
    """Timing settings. The issue's full protocol is blocks=40, warmup_s=2, trials=5.

    `repeat` samples per arm, figure and block, each at least `min_repeat_ms` long (25 ms: two
    end-to-end figures per block now, in the time one took at 50 ms). `blocks` None: whole cycles
    of the balanced order, at least 6. `queued_calls`: calls queued behind the sleep per GPU-time
    sample (enough that the events' resolution is a small share of a sample)."""

    number: int = 10
    repeat: int = 5
    min_repeat_ms: int = 25
    warmup_calls: int = 75
    warmup_s: float = 0.5
    blocks: int | None = None
    trials: int = 3
    checks: int = 3
    queued_calls: int = 50

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


class VMArm:
    """A built arm in the Relax VM: its outputs for an input, one call, and a timer."""

    def __init__(self, vm, device):
        self.vm, self.device = vm, device

    def outputs(self, x: np.ndarray) -> list[np.ndarray]:
        import tvm
        self.vm.set_input("main", tvm.runtime.tensor(x, device=self.device))
        self.vm.invoke_stateful("main")
        self.device.sync()
        return outputs_of(self.vm.get_outputs("main"))

    def timer(self, x: np.ndarray, protocol: Protocol):
        """Calls the graph on `x`; each call returns `repeat` samples (us per call)."""
        import tvm
        self.vm.set_input("main", tvm.runtime.tensor(x, device=self.device))
        evaluator = self.vm.time_evaluator("invoke_stateful", self.device, number=protocol.number,
                                           repeat=protocol.repeat,
                                           min_repeat_ms=protocol.min_repeat_ms)
        return lambda: [float(s) * 1e6 for s in evaluator("main").results]

    def python_call(self, source):
        """`vm["main"](x)`, as a Python user calls the graph: a function lookup, argument
        passing and fresh outputs every call. `source` is a tensor already on the device."""
        return self.vm["main"](source)

    def python_timer(self, x: np.ndarray, protocol: Protocol):
        import tvm
        from baselines.torch_peer import wall_timer
        source = tvm.runtime.tensor(x, device=self.device)
        return wall_timer(lambda: self.python_call(source), self.sync, protocol)

    def call(self) -> None:
        self.vm.invoke_stateful("main")

    def sync(self) -> None:
        self.device.sync()


class CapturedVMArm(VMArm):
    """The whole VM call captured once into a CUDA graph and replayed: what Relax's CUDA graph
    rewriting would give if it also captured the kernels that read the function's input and
    write its outputs. The input and the outputs live in fixed buffers, as a captured graph
    needs; a new input is copied into the input buffer."""

    # After these calls the VM's allocator holds every buffer a call needs, so nothing is
    # allocated inside the capture.
    WARMUP_CALLS = 3

    def __init__(self, vm, device):
        super().__init__(vm, device)
        self.graph = None

    def _capture(self, x: np.ndarray) -> None:
        import torch
        import tvm
        import tvm_ffi
        self.input = tvm.runtime.tensor(x, device=self.device)
        self.vm.set_input("main", self.input)
        stream = torch.cuda.Stream()
        with tvm_ffi.use_torch_stream(torch.cuda.stream(stream)):
            for _ in range(self.WARMUP_CALLS):
                self.vm.invoke_stateful("main")
        stream.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        # Relaxed: an allocation the warm-up missed is then made, not an error.
        with tvm_ffi.use_torch_stream(torch.cuda.graph(self.graph, stream=stream,
                                                       capture_error_mode="relaxed")):
            self.vm.invoke_stateful("main")
        self.results = self.vm.get_outputs("main")

    def _load(self, x: np.ndarray) -> None:
        """Put `x` in the captured input buffer, capturing the call on the first input."""
        if self.graph is None:
            self._capture(x)
        else:
            self.input.copyfrom(x)

    def outputs(self, x: np.ndarray) -> list[np.ndarray]:
        self._load(x)
        self.call()
        self.sync()
        return outputs_of(self.results)

    def timer(self, x: np.ndarray, protocol: Protocol):
        from baselines.torch_peer import call_timer
        self._load(x)
        return call_timer(self.call, True, protocol)

    def python_call(self, source):
        """As a captured graph is used from Python: the new input (a tensor already on the
        device) copied into the captured input buffer, the graph replayed."""
        self.input.copyfrom(source)
        self.graph.replay()
        return self.results

    def python_timer(self, x: np.ndarray, protocol: Protocol):
        self._load(x)  # captures on the first input
        return super().python_timer(x, protocol)

    def call(self) -> None:
        self.graph.replay()

    def sync(self) -> None:
        import torch
        torch.cuda.synchronize()


def check(case: Case, arm, checks: int) -> dict:
    """Max abs error over `checks` input draws; `correct` if every output is within tolerance."""
    worst, correct = 0.0, True
    for seed in range(checks):
        x = random_input(case, seed)
        got, want = arm.outputs(x), reference(case, x)
        if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
            return {"correct": False, "max_abs_err": None, "reason": "output shapes differ"}
        for g, w in zip(got, want):
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w))))
            correct = correct and matches(g, w)
    return {"correct": correct, "max_abs_err": worst}


def run_trial(case: Case, arms: list, target_spec: dict, protocol: Protocol, index: int,
              ir_dir: str | None = None, progress=None, peers: tuple = ()) -> dict:
    """One trial in the current process: check results, every figure's samples (us) per arm and
    block, and every block's order.

    `peers` names other frameworks' versions of the graph (`torch-eager`, `torch-compile`, ...),
    checked and timed with the arms."""
    from tvm import relax

    from baselines.anatomy import captured_launches, kernel_table
    from baselines.pipeline import lower, make_target

    say = progress or (lambda message: None)
    target = make_target(**target_spec)
    device = device_for(target)
    order = arms if index % 2 == 0 else list(reversed(arms))
    built, checks, kernels, graphs = {}, {}, {}, {}
    for arm in order:
        say(f"trial {index}: building {arm.name}")
        dump = Path(ir_dir) / arm.name if ir_dir else None
        mod = lower(case, arm, target, dump)
        executable = relax.build(mod, target=target, relax_pipeline=None, tir_pipeline="default")
        if target.kind.name == "cuda" and index == 0:
            kernels[arm.name] = kernel_table(mod, executable, target.attrs["arch"])
        if arm.cuda_graph:
            graphs[arm.name] = captured_launches(mod)
        built[arm.name] = (CapturedVMArm if arm.capture else VMArm)(
            relax.VirtualMachine(executable, device), device)
    if peers:
        from baselines.torch_peer import peer_arm
        for name in peers:
            say(f"trial {index}: building {name}")
            built[name] = peer_arm(name, case, target.kind.name)
    for name, arm in built.items():
        checks[name] = check(case, arm, protocol.checks)
    timed = {name: built[name] for name in [a.name for a in arms] + list(peers)
             if checks[name]["correct"]}
    timing = measure_blocks(case, timed, protocol, index, target.kind.name == "cuda", say)
    return {"trial": index, "format": TRIAL_FORMAT, "build_order": [arm.name for arm in order],
            "checks": checks, **timing, "kernels": kernels, "cuda_graph_launches": graphs}


def _trial_entry(queue, args, peers, verbose):
    from .children import die_with_parent
    die_with_parent()
    progress = (lambda message: print(message, file=sys.stderr, flush=True)) if verbose else None
    try:
        queue.put(("ok", run_trial(*args, progress=progress, peers=peers)))
    except BaseException as error:  # reported to the parent, which fails the run loudly
        queue.put(("error", f"{type(error).__name__}: {error}"))


def run_trial_process(case, arms, target_spec, protocol, index, ir_dir=None,
                      verbose=False, peers: tuple = ()) -> dict:
    """Run one trial in a fresh process: independent CUDA context, allocator and caches."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    args = (case, arms, target_spec, protocol, index, ir_dir)
    process = context.Process(target=_trial_entry, args=(queue, args, peers, verbose))
    process.start()
    try:
        while True:
            try:
                status, payload = queue.get(timeout=1)
                break
            except queue_module.Empty:
                if not process.is_alive():
                    status, payload = "error", f"process died with exit code {process.exitcode}"
                    break
    except BaseException:  # Ctrl-C or an error here: the trial is not waited for
        from .children import stop
        stop(process)
        raise
    process.join()
    if status != "ok":
        raise RuntimeError(f"trial {index} failed: {payload}")
    return payload
