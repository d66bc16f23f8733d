"""The same Case in PyTorch: peers the arms are timed against, given every treatment they get.

A peer behaves like a built arm in the harness, so it is checked against the NumPy reference and
timed in the same interleaved blocks. `+capture` peers capture the whole call with
`torch.cuda.graph`, as the TVM `+capture` arms are. `call_timer` and `wall_timer` time any
Python-level call. `peers.py`'s table says which peers there are and how each is made.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable

import numpy as np

from .case import Case
from .peers import CAPTURE, PEERS, captured_peers
from .protocols import Sampler


def require_torch(name: str) -> None:
    """A clear message where PyTorch is missing (it is an optional extra)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError(f"{name} needs PyTorch: pip install -e '.[torch]'") from None


def torch_graph(case: Case) -> Callable[..., tuple]:
    """The Case's graph written with torch ops, as the issue's Relax graph is with TOPI."""
    import torch
    import torch.nn.functional as F

    def graph(x):
        pool_input = x
        if case.prelude:
            groups = [
                torch.cat([x + 1 for _ in range(case.branches)], 1) + 1
                for _ in range(case.branches)
            ]
            pool_input = torch.cat(groups, 1)
        outputs, value = [], F.max_pool2d(pool_input, case.window, case.stride)
        for _ in range(case.tail):
            value = value + 1
            outputs.append(value)
        return (outputs[0], outputs[-1]) if case.shared_output else (outputs[-1],)

    return graph


def torch_available() -> bool:
    """Whether PyTorch can be imported here (not in a child started without it, where `find_spec`
    would raise, nor where an import hook refuses it)."""
    if "torch" in sys.modules:
        return sys.modules["torch"] is not None
    try:
        return importlib.util.find_spec("torch") is not None
    except ImportError:
        return False


def capture_counterparts(names: list[str], target_kind: str) -> tuple[list[str], dict]:
    """`names` with PyTorch's capture peers added beside any TVM +capture arm on CUDA, and the
    peers not measured with the reason."""
    if not torch_available():
        return names, {
            p: "PyTorch is not installed; pip install -e '.[torch]'"
            for p in PEERS
            if p not in names
        }
    if target_kind != "cuda":
        return names, {p: "captures CUDA launches; needs a CUDA GPU" for p in captured_peers()}
    if any(n.endswith(CAPTURE) and n not in PEERS for n in names):
        names = list(dict.fromkeys([*names, *captured_peers()]))
    return names, {}


def load_compilers(names) -> None:
    """Import what torch.compile loads for these peers' modes (dynamo, inductor) by making each
    compiling peer of a function never called: nothing is compiled, the GPU untouched. A trial's
    process does this while it waits (`tuning.measure.harness`)."""
    makers = {PEERS[name].make for name in names if name in PEERS and PEERS[name].compiles}
    for make in makers:
        make(lambda x: x)


def peer_arm(name: str, case: Case, target_kind: str) -> PeerArm:
    """The built peer `name` (captured peers are captured on their first input)."""
    if PEERS[name].captured:
        return CapturedPeerArm(name, case, target_kind)
    return PeerArm(name, case, target_kind)


class PeerArm:
    """A peer in the harness: `call_timer` for its call path, `wall_timer` for `model(x)`.

    `source` is a Case (its graph in torch ops) or any function of torch tensors returning a
    tuple of tensors (a real network's module); `x` is one array or one per argument."""

    def __init__(self, name: str, source: Case | Callable[..., tuple], target_kind: str):
        require_torch(name)
        import torch

        self.torch = torch
        self.device = "cuda" if target_kind == "cuda" else "cpu"
        graph = torch_graph(source) if isinstance(source, Case) else source
        # A name outside the table: the graph is made already (`profiled.py` captures a peer).
        self.graph = PEERS[name].make(graph) if name in PEERS else graph
        self.x: tuple = ()

    def tensors(self, x) -> tuple:
        """`x` (an array, or one per argument) as tensors on the peer's device."""
        arrays = (x,) if isinstance(x, np.ndarray) else tuple(x)
        return tuple(self.torch.from_numpy(a).to(self.device) for a in arrays)

    def outputs(self, x) -> list[np.ndarray]:
        with self.torch.no_grad():
            result = self.graph(*self.tensors(x))
        self.sync()
        return [value.cpu().numpy() for value in result]

    def call(self) -> None:
        with self.torch.no_grad():
            self.graph(*self.x)

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def timer(self, x, protocol) -> Sampler:
        self.x = self.tensors(x)
        return call_timer(self.call, self.device == "cuda", protocol)

    def python_call(self, *source) -> tuple:
        """`model(x)`, `x` already on the device."""
        return self.graph(*source)

    def python_timer(self, x, protocol) -> Sampler:
        """`python_call` inside one `torch.no_grad()`, as inference runs (grad mode changing
        between calls would make dynamo recompile)."""
        source = self.tensors(x)
        sample = wall_timer(lambda: self.python_call(*source), self.sync, protocol)

        def timer():
            with self.torch.no_grad():
                return sample()

        return timer


class CapturedPeerArm(PeerArm):
    """The peer's whole call captured into one CUDA graph by PyTorch's documented recipe: warmed
    up on a side stream, captured once with static inputs and outputs, replayed, new inputs
    copied in."""

    WARMUP_CALLS = 3

    def __init__(self, name: str, source: Case | Callable[..., tuple], target_kind: str):
        super().__init__(name, source, target_kind)
        self.cuda_graph = None

    def _capture(self, source: tuple) -> None:
        torch = self.torch
        self.static_inputs = tuple(x.clone() for x in source)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.no_grad():
            for _ in range(self.WARMUP_CALLS):  # compiles, autotunes, fills the allocator
                self.graph(*self.static_inputs)
        torch.cuda.current_stream().wait_stream(stream)
        self.cuda_graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self.cuda_graph):
            self.static_outputs = self.graph(*self.static_inputs)

    def _copy_in(self, source: tuple) -> None:
        for static, x in zip(self.static_inputs, source):
            static.copy_(x)

    def _load(self, x) -> tuple:
        """`x` on the device, copied into the static inputs (captured on the first input)."""
        source = self.tensors(x)
        if self.cuda_graph is None:
            self._capture(source)
        else:
            self._copy_in(source)
        return source

    def _captured(self):
        """The CUDA graph, which every use captures first (`_load`)."""
        if self.cuda_graph is None:
            raise RuntimeError("a captured peer is replayed before its first input captured it")
        return self.cuda_graph

    def outputs(self, x) -> list[np.ndarray]:
        self._load(x)
        self.call()
        self.sync()
        return [value.cpu().numpy() for value in self.static_outputs]

    def call(self) -> None:
        self._captured().replay()

    def timer(self, x, protocol) -> Sampler:
        self._load(x)
        return call_timer(self.call, True, protocol)

    def python_call(self, *source) -> tuple:
        """As the recipe is used: the new input copied into the static one, the graph replayed."""
        self._copy_in(source)
        self._captured().replay()
        return self.static_outputs

    def python_timer(self, x, protocol) -> Sampler:
        self._load(x)  # captures on the first input
        return super().python_timer(x, protocol)


def _sampler(elapsed_s, protocol):
    """`repeat` samples (us per call) per result call; each times `number` calls, raised until a
    sample lasts `min_repeat_ms`, as `time_evaluator` does."""
    number = protocol.number

    def sample() -> float:
        nonlocal number
        while True:
            elapsed = elapsed_s(number)
            if elapsed * 1e3 >= protocol.min_repeat_ms:
                return elapsed / number * 1e6
            number = max(
                number * 2, int(number * protocol.min_repeat_ms / 1e3 / max(elapsed, 1e-9)) + 1
            )

    return lambda: [sample() for _ in range(protocol.repeat)]


def call_timer(call: Callable[[], object], on_gpu: bool, protocol) -> Sampler:
    """Times `call` like `time_evaluator`: CUDA events around back-to-back calls on the GPU."""

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

    return _sampler(elapsed_s, protocol)


def wall_timer(call: Callable[[], object], sync: Callable[[], None], protocol) -> Sampler:
    """Times back-to-back calls by the host's clock, from an idle device to the last call's end:
    what a Python caller waits. Needs no PyTorch."""

    def elapsed_s(count: int) -> float:
        sync()
        started = time.perf_counter()
        for _ in range(count):
            call()
        sync()
        return time.perf_counter() - started

    return _sampler(elapsed_s, protocol)
