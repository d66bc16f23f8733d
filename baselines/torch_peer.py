"""The same Case in PyTorch, eager and `torch.compile`d: a peer the arms are timed against.

A peer behaves like a built arm in the harness (outputs for an input, one call, a timer), so it
is checked against the NumPy reference and timed in the same interleaved blocks. `call_timer`
times any Python-level call that way (the peers, and the arms replayed from a CUDA graph).
"""

from __future__ import annotations

import time

import numpy as np

from .case import Case

# torch.compile's modes: the default, and "reduce-overhead", which replays CUDA graphs.
COMPILE_MODES = {"torch-compile": "default", "torch-compile-graphs": "reduce-overhead"}
PEERS = ("torch-eager", *COMPILE_MODES)


def require_torch(name: str) -> None:
    """A clear message where PyTorch is missing (it is an optional extra)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError(f"{name} needs PyTorch: pip install -e '.[torch]'") from None


def torch_graph(case: Case):
    """The Case's graph written with torch ops, as the issue's Relax graph is with TOPI."""
    import torch
    import torch.nn.functional as F

    def graph(x):
        pool_input = x
        if case.prelude:
            groups = [torch.cat([x + 1 for _ in range(case.branches)], 1) + 1
                      for _ in range(case.branches)]
            pool_input = torch.cat(groups, 1)
        outputs, value = [], F.max_pool2d(pool_input, case.window, case.stride)
        for _ in range(case.tail):
            value = value + 1
            outputs.append(value)
        return (outputs[0], outputs[-1]) if case.shared_output else (outputs[-1],)

    return graph


class PeerArm:
    """A peer in the harness, timed like `time_evaluator` (`call_timer`)."""

    def __init__(self, name: str, case: Case, target_kind: str):
        require_torch(name)
        import torch
        self.torch = torch
        self.device = "cuda" if target_kind == "cuda" else "cpu"
        graph = torch_graph(case)
        self.graph = torch.compile(graph, mode=COMPILE_MODES[name]) if name in COMPILE_MODES \
            else graph
        self.x = None

    def outputs(self, x: np.ndarray) -> list[np.ndarray]:
        with self.torch.no_grad():
            result = self.graph(self.torch.from_numpy(x).to(self.device))
        self.sync()
        return [value.cpu().numpy() for value in result]

    def call(self) -> None:
        with self.torch.no_grad():
            self.graph(self.x)

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def timer(self, x: np.ndarray, protocol):
        self.x = self.torch.from_numpy(x).to(self.device)
        return call_timer(self.call, self.device == "cuda", protocol)


def call_timer(call, on_gpu: bool, protocol):
    """Times `call` like `time_evaluator`: `number` calls per sample (raised until a sample
    lasts `min_repeat_ms`), CUDA events on the GPU; each call of the result returns `repeat`
    samples (us per call)."""
    number = protocol.number

    def elapsed_s(count: int) -> float:
        if not on_gpu:
            started = time.perf_counter()
            for _ in range(count):
                call()
            return time.perf_counter() - started
        import torch
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        for _ in range(count):
            call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    def sample() -> float:
        nonlocal number
        while True:
            elapsed = elapsed_s(number)
            if elapsed * 1e3 >= protocol.min_repeat_ms:
                return elapsed / number * 1e6
            number = max(number * 2, int(number * protocol.min_repeat_ms / 1e3
                                         / max(elapsed, 1e-9)) + 1)

    return lambda: [sample() for _ in range(protocol.repeat)]
