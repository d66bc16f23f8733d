"""Kernel-level work on the fused pool function: extract it, compile a schedule of it, time it.

Every tuning candidate (Optuna or MetaSchedule) goes through `compile_kernel` in a builder process
and `KernelRunner` in one measuring process, so their figures are comparable. The runner is a
process of its own because a bad kernel (an illegal address) poisons the CUDA context: it is
replaced, and the candidate recorded as failed.
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from baselines.case import Case
from baselines.reference import distinct_outputs, fused_pool_reference, matches, \
    random_input


@dataclass(frozen=True)
class KernelProtocol:
    """Kernel-level timing: `number` launches per repeat, at least `min_repeat_ms` each."""

    number: int = 20
    repeat: int = 5
    min_repeat_ms: int = 10
    checks: int = 2
    time_limit_s: float = 60.0


_FUSED_CACHE: dict = {}


def fused_function(case: Case, target_spec: dict, whole: bool = False):
    """(name, PrimFunc) of the fused pool function, after FuseTIR, before default scheduling;
    with `whole`, the one kernel of the whole graph (arm `one-kernel`)."""
    key = (case, tuple(sorted(target_spec.items())), whole)
    if key not in _FUSED_CACHE:
        from baselines.arms import ARMS, Arm
        from baselines.pipeline import fused_pool_function, fused_stage, make_target
        arm = ARMS["one-kernel"] if whole else Arm("on")
        gv, func = fused_pool_function(fused_stage(case, arm, make_target(**target_spec)))
        _FUSED_CACHE[key] = (gv.name_hint, func)
    return _FUSED_CACHE[key]


def bias_count(func) -> int:
    """The kernel's 0-d inputs: the biases FuseOps lifted into parameters (each one 1.0)."""
    return sum(1 for param in func.params if len(param.ty.shape) == 0)


def default_schedule(func, target, rules: str = "default"):
    """The fused function as the backend's default rules schedule it (unscheduled on llvm);
    `rules="fixed"` adds the candidate `WindowReduction` rule."""
    import tvm
    if target.kind.name != "cuda":
        return func
    from baselines.pipeline import default_schedule_pass
    from baselines.rules import fixed_schedule_pass
    schedule_pass = fixed_schedule_pass if rules == "fixed" else default_schedule_pass
    with target:
        mod = schedule_pass(target)(tvm.IRModule({"main": func}))
    return mod["main"]


def kernel_module(func):
    """The fused function alone, public as `main` (fused functions are private): how it is
    compiled, tuned, and looked up in a MetaSchedule database."""
    import tvm
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def compile_kernel(func, target, path: Path) -> Path:
    """Compile one scheduled PrimFunc into a shared library the runner can load."""
    import tvm
    executable = tvm.compile(kernel_module(func), target=target)
    executable.export_library(str(path))
    return path


def _inputs(case: Case, biases: int, seed: int, whole: bool = False) -> list[np.ndarray]:
    if whole:  # the graph's input
        first = random_input(case, seed)
    else:
        rng = np.random.default_rng(seed)
        first = rng.uniform(-0.5, 0.5, case.pool_input_shape).astype("float32")
    return [first] + [np.array(1, dtype="float32") for _ in range(biases)]


def _expected(case: Case, biases: int, seed: int, whole: bool = False) -> list[np.ndarray]:
    """What the kernel must write for the inputs of `seed`, output by output."""
    first = _inputs(case, biases, seed, whole)[0]
    if whole:
        return distinct_outputs(case, first)
    return [fused_pool_reference(case, first, biases)]


def upload_inputs(case: Case, biases: int, seed: int, device, whole: bool = False) -> list:
    """One check's arguments on `device` (local or an RPC session's): the inputs of `seed`,
    and the outputs poisoned with NaN so that an element never written shows."""
    import tvm
    outputs = [np.full(w.shape, np.nan, dtype="float32")
               for w in _expected(case, biases, seed, whole)]
    return [tvm.runtime.tensor(a, device=device)
            for a in (*_inputs(case, biases, seed, whole), *outputs)]


def measure_library(path: str, case: Case, biases: int, target_kind: str,
                    protocol: KernelProtocol, whole: bool = False) -> dict:
    """Check a compiled kernel against the NumPy reference, then time it (microseconds)."""
    import tvm
    device = tvm.cuda(0) if target_kind == "cuda" else tvm.cpu(0)
    arguments = [upload_inputs(case, biases, seed, device, whole)
                 for seed in range(protocol.checks)]
    return check_and_time(tvm.runtime.load_module(path), device, case, biases, protocol,
                          arguments, gpu_timer=target_kind == "cuda", whole=whole)


def check_and_time(module, device, case: Case, biases: int, protocol: KernelProtocol,
                   arguments: list, gpu_timer: bool = False, whole: bool = False) -> dict:
    """Run `module` on each argument list of `upload_inputs` (seeds 0, 1, ...) and compare with
    the NumPy reference; time it only if every output is right."""
    function = module["main"]
    worst = 0.0
    for seed, args in enumerate(arguments):
        function(*args)
        device.sync()
        wants = _expected(case, biases, seed, whole)
        for got, want in zip((a.numpy() for a in args[-len(wants):]), wants):
            if np.isnan(got).any():  # the output was poisoned with NaN: an element not written
                return {"status": "wrong", "max_abs_err": None, "reason": "output not written"}
            error = float(np.max(np.abs(got.astype(np.float64) - want)))
            if not matches(got, want):
                return {"status": "wrong", "max_abs_err": error, "reason": "wrong result"}
            worst = max(worst, error)
    timer = module.time_evaluator("main", device, number=protocol.number,
                                  repeat=protocol.repeat, min_repeat_ms=protocol.min_repeat_ms)
    evaluator = [s * 1e6 for s in timer(*args).results]
    gpu = gpu_time_us(function, args, protocol.repeat) if gpu_timer else None
    samples = gpu if gpu is not None else evaluator
    return {"status": "ok", "kernel_us": float(np.median(samples)), "samples_us": samples,
            "evaluator_us": float(np.median(evaluator)), "max_abs_err": worst,
            "timer": GPU_TIMER if gpu is not None else "time_evaluator"}


GPU_TIMER = "cuda-events-behind-blocking-kernel"
# ~1 ms at H200 clocks: longer than the CPU needs to queue a repeat's launches; doubled (up to
# 64 times) where the host was still queuing when the sleep ended.
BLOCKING_CYCLES = 2_000_000
MAX_BLOCKING_DOUBLINGS = 6
LAUNCHES_PER_REPEAT = 50


def gpu_time_us(function, args, repeat: int,
                launches: int = LAUNCHES_PER_REPEAT) -> list[float] | None:
    """GPU time per call of `function`, without the host's launch overhead (as nvbench does).
    None where PyTorch (events, sleep) or a GPU is missing, or where the host never got ahead
    of the GPU; the caller keeps its host-side figure. See `QueuedGpuTimer`."""
    return QueuedGpuTimer(function, args, launches)(repeat)


class QueuedGpuTimer:
    """A sleeping kernel holds the stream while the host queues `launches` calls, so the events
    between them time the calls' kernels back to back on the GPU. A repeat in which the GPU
    reached the first event before the host had queued every call would include the host's
    gaps: it is dropped and the sleep doubled. The sleep is kept between calls of the timer,
    so an arm timed in many blocks finds its length once."""

    def __init__(self, function, args=(), launches: int = LAUNCHES_PER_REPEAT):
        self.function, self.args, self.launches = function, args, launches
        self.cycles = BLOCKING_CYCLES

    def __call__(self, repeat: int) -> list[float] | None:
        try:
            import torch
        except ImportError:
            return None
        if not torch.cuda.is_available():
            return None
        samples = []
        while len(samples) < repeat:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(self.cycles)
            start.record()
            for _ in range(self.launches):
                self.function(*self.args)
            caught_up = start.query()
            end.record()
            end.synchronize()
            if caught_up:
                if self.cycles >= BLOCKING_CYCLES << MAX_BLOCKING_DOUBLINGS:
                    return None
                self.cycles *= 2
                continue
            samples.append(start.elapsed_time(end) * 1e3 / self.launches)
        return samples


def _runner_loop(requests, replies):
    from .children import die_with_parent
    die_with_parent()
    import tvm  # noqa: F401  most of a new runner's start-up, which no candidate is charged for
    replies.put((None, "ready"))
    while True:
        job = requests.get()
        if job is None:
            return
        key, args = job
        try:
            replies.put((key, measure_library(*args)))
        except Exception as error:  # a runtime error is a failed candidate, not a dead runner
            replies.put((key, {"status": "failed", "reason": "run error",
                               "detail": f"{type(error).__name__}: {str(error)[:300]}"}))


# A new measuring process imports TVM (seconds on a loaded machine) before it is ready.
STARTUP_LIMIT_S = 300


class KernelRunner:
    """One measuring process, replaced when a candidate kills it or runs past the time limit."""

    def __init__(self, case: Case, biases: int, target_kind: str, protocol: KernelProtocol,
                 whole: bool = False):
        self.case, self.biases, self.kind, self.protocol = case, biases, target_kind, protocol
        self.whole = whole
        self._context = multiprocessing.get_context("spawn")
        self._process = None
        self.restarts = 0

    def _start(self):
        self._requests, self._replies = self._context.Queue(), self._context.Queue()
        self._process = self._context.Process(
            target=_runner_loop, args=(self._requests, self._replies), daemon=True)
        self._process.start()
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while self._process.is_alive() and time.monotonic() < deadline:
            try:
                self._replies.get(timeout=0.5)  # ready: the time limit starts with the candidate
                return
            except queue_module.Empty:
                continue
        raise RuntimeError(f"the measuring process did not start within {STARTUP_LIMIT_S} s "
                           f"(exit code {self._process.exitcode})")

    def measure(self, path: str) -> dict:
        if self._process is None or not self._process.is_alive():
            self._start()
        key = str(path)
        started = time.monotonic()
        self._requests.put((key, (key, self.case, self.biases, self.kind, self.protocol,
                                  self.whole)))
        while True:
            try:
                _, result = self._replies.get(timeout=0.5)
                result["run_s"] = time.monotonic() - started
                return result
            except queue_module.Empty:
                if not self._process.is_alive():
                    code = self._process.exitcode
                    self._replace()
                    return {"status": "failed", "reason": "runner crashed",
                            "detail": f"exit code {code}"}
                if time.monotonic() - started > self.protocol.time_limit_s:
                    self._replace(kill=True)
                    return {"status": "failed", "reason": "time limit",
                            "detail": f"no result within {self.protocol.time_limit_s:.0f} s"}

    def _replace(self, kill: bool = False):
        if kill and self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._process = None
        self.restarts += 1

    def close(self, kill: bool = False):
        if self._process is not None and self._process.is_alive() and not kill:
            self._requests.put(None)
            self._process.join(timeout=10)
        if self._process is not None:
            from .children import stop
            stop(self._process)


@dataclass(frozen=True)
class DefaultSchedule:
    """The backend's default rules (or the fixed ones) as a candidate, timed like the rest."""

    rules: str = "default"

    def apply(self, func, target):
        return default_schedule(func, target, self.rules)

    def to_dict(self) -> dict:
        return {"default": True, "rules": self.rules}
