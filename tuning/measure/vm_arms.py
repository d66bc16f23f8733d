"""A built arm in the Relax VM, as the harness checks and times it: plain, or its whole call
captured into a CUDA graph."""

from __future__ import annotations

import numpy as np
import tvm

from pool_fusion_tuning.baselines.protocols import Sampler
from pool_fusion_tuning.baselines.torch_peer import call_timer, wall_timer

from .protocol import Protocol


def device_for(target: tvm.target.Target) -> tvm.runtime.Device:
    return tvm.cuda(0) if target.kind.name == "cuda" else tvm.cpu(0)


def device_tensors(x, device) -> list:
    """An input (one array, or one array per argument of `main`) as tensors on `device`."""
    arrays = (x,) if isinstance(x, np.ndarray) else tuple(x)
    return [tvm.runtime.tensor(a, device=device) for a in arrays]


def outputs_of(vm_result) -> list[np.ndarray]:
    """The VM returns a tensor or a tuple of tensors; the reference returns a list."""
    if hasattr(vm_result, "numpy"):
        return [vm_result.numpy()]
    return [item.numpy() for item in vm_result]


class VMArm:
    """A built arm in the Relax VM: its outputs for an input, one call, and a timer. An input is
    one array or one per argument of `main`."""

    def __init__(self, vm, device):
        self.vm, self.device = vm, device

    def outputs(self, x) -> list[np.ndarray]:
        self.vm.set_input("main", *device_tensors(x, self.device))
        self.vm.invoke_stateful("main")
        self.device.sync()
        return outputs_of(self.vm.get_outputs("main"))

    def timer(self, x, protocol: Protocol) -> Sampler:
        """Calls the graph on `x`; each call returns `repeat` samples (us per call)."""
        self.vm.set_input("main", *device_tensors(x, self.device))
        evaluator = self.vm.time_evaluator(
            "invoke_stateful",
            self.device,
            number=protocol.number,
            repeat=protocol.repeat,
            min_repeat_ms=protocol.min_repeat_ms,
        )
        return lambda: [float(s) * 1e6 for s in evaluator("main").results]

    def python_call(self, *source: tvm.runtime.Tensor) -> object:
        """`vm["main"](x)` as a Python user calls it: function lookup, argument passing and fresh
        outputs every call. `source`: tensors already on the device."""
        return self.vm["main"](*source)

    def python_timer(self, x, protocol: Protocol) -> Sampler:
        source = device_tensors(x, self.device)
        return wall_timer(lambda: self.python_call(*source), self.sync, protocol)

    def call(self) -> None:
        self.vm.invoke_stateful("main")

    def sync(self) -> None:
        self.device.sync()


class CapturedVMArm(VMArm):
    """The whole VM call captured once into a CUDA graph and replayed: Relax's CUDA graph
    rewriting as it would be if it also captured the kernels reading the input and writing the
    outputs. Input and outputs live in fixed buffers; a new input is copied in."""

    # After these calls the VM's allocator holds every buffer a call needs, so nothing is
    # allocated inside the capture.
    WARMUP_CALLS = 3

    def __init__(self, vm, device):
        super().__init__(vm, device)
        self.graph = None

    def _capture(self, x) -> None:
        import torch
        import tvm_ffi

        self.inputs = device_tensors(x, self.device)
        self.vm.set_input("main", *self.inputs)
        stream = torch.cuda.Stream()
        with tvm_ffi.use_torch_stream(torch.cuda.stream(stream)):
            for _ in range(self.WARMUP_CALLS):
                self.vm.invoke_stateful("main")
        stream.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        # Relaxed: an allocation the warm-up missed is then made, not an error.
        with tvm_ffi.use_torch_stream(
            torch.cuda.graph(self.graph, stream=stream, capture_error_mode="relaxed")
        ):
            self.vm.invoke_stateful("main")
        self.results = self.vm.get_outputs("main")

    def _load(self, x) -> None:
        """Put `x` in the captured input buffers, capturing the call on the first input."""
        if self.graph is None:
            self._capture(x)
        else:
            self._copy_in((x,) if isinstance(x, np.ndarray) else x)

    def _copy_in(self, source) -> None:
        for buffer, value in zip(self.inputs, source):
            buffer.copyfrom(value)

    def outputs(self, x) -> list[np.ndarray]:
        self._load(x)
        self.call()
        self.sync()
        return outputs_of(self.results)

    def timer(self, x, protocol: Protocol) -> Sampler:
        self._load(x)
        return call_timer(self.call, True, protocol)

    def python_call(self, *source: tvm.runtime.Tensor) -> object:
        """As a captured graph is used from Python: the new input (on the device) copied into the
        captured buffers, the graph replayed."""
        self._copy_in(source)
        self._graph().replay()
        return self.results

    def python_timer(self, x, protocol: Protocol) -> Sampler:
        self._load(x)  # captures on the first input
        return super().python_timer(x, protocol)

    def call(self) -> None:
        self._graph().replay()

    def _graph(self):
        if self.graph is None:  # a replay needs a captured call: `_load` captures on the first
            raise RuntimeError("no call captured yet: time the arm or check it first")
        return self.graph

    def sync(self) -> None:
        import torch

        torch.cuda.synchronize()
