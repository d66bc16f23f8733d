"""Short rows (softmax, layer norm: `row_kernels.py`) under TVM's default rules, a warp or fewer
threads per row (`row_reduction.py`) and PyTorch: the figures that decide on the row rule.

    python3 -m pool_fusion_tuning.tuning.row_bench OUT [--target cuda|llvm] [--kernels A,B]
        [--peers ...]
    python3 -m pool_fusion_tuning.tuning.row_bench OUT --render
        row_bench.md again from OUT/row_bench.json (or from it in OUT/row_bench.tar.xz)

Each kernel's PrimFunc is scheduled by the default list (GeneralReduction: 256 threads a row)
and the row rule (32 lanes a row, also with the row in registers: `warp-regs`; 16; 8), all built
in one module, each checked against NumPy (float64) before it is timed, as is each PyTorch peer
(eager, torch.compile). On CUDA every kernel is timed by the project's GPU timer (CUDA events
around calls queued behind a sleep: `tuning.measure.gpu_timer`), inputs staying in L2. On llvm,
CI's test mode, the CUDA schedules run without their thread bindings (`window_bench`'s replay),
timed by `time_evaluator`: CPU figures decide nothing. Writes OUT/row_bench.json and .md
(`row_report.py`) after each kernel.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import tvm

from pool_fusion_tuning.baselines.anatomy import launch_configs
from pool_fusion_tuning.baselines.peers import PEERS, PeerRole, peers_for
from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.row_kernels import (
    KERNELS,
    RowKernel,
    error,
    reference,
    torch_function,
)
from pool_fusion_tuning.baselines.row_reduction import RowReduction
from pool_fusion_tuning.baselines.row_report import row_bench_markdown
from pool_fusion_tuning.baselines.rules import default_rules, first_rule
from pool_fusion_tuning.baselines.window_bench import bench_parser, environment, without_bindings
from pool_fusion_tuning.runfolder.files import loads, read_bytes
from pool_fusion_tuning.tuning.candidates.kernel_check import time_kernel
from pool_fusion_tuning.tuning.measure.gpu_timer import GPU_TIMER, QueuedGpuTimer
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol

# The TVM schedules: name -> the rule list they are taken from.
SCHEDULES = {
    "default": default_rules,
    "warp": lambda target: [RowReduction(32)],
    "warp-regs": lambda target: [RowReduction(32, registers=True)],
    "lanes16": lambda target: [RowReduction(16)],
    "lanes8": lambda target: [RowReduction(8)],
}
TOLERANCE = 1e-4  # relative to the reference's largest magnitude, as window_bench's
COMMAND = "python3 -m pool_fusion_tuning.tuning.row_bench"
PROTOCOLS = {
    "cuda": KernelProtocol(number=20, repeat=15, min_repeat_ms=20),
    "llvm": KernelProtocol(number=2, repeat=3, min_repeat_ms=0),
}


def schedule(kernel: RowKernel, target_kind: str) -> tuple[tvm.IRModule, dict]:
    """Every schedule of the kernel as a function of one module (`symbol(name)`; for llvm,
    without its bindings), and per schedule its rule and launch."""
    func, cuda = kernel.function(), make_target("cuda")
    functions, entries = {}, {}
    for name, rules in SCHEDULES.items():
        rule, sch = first_rule(func, cuda, rules(cuda))
        if sch is None:
            raise ValueError(f"no rule of schedule {name} takes {kernel.name}")
        body = sch.mod["main"] if target_kind == "cuda" else without_bindings(func, sch.trace)
        functions[symbol(name)] = body.with_attr("global_symbol", symbol(name))
        (launch,) = launch_configs(tvm.IRModule({"main": sch.mod["main"]})).values()
        entries[name] = {"rule": rule, **launch}
    return tvm.IRModule(functions), entries


def symbol(name: str) -> str:
    """A schedule's function in the built module (a C identifier)."""
    return name.replace("-", "_")


def measure(kernel: RowKernel, target_kind: str, peers: list[str]) -> dict:
    """One kernel: each TVM schedule and PyTorch peer checked against NumPy, then timed."""
    device = tvm.cuda(0) if target_kind == "cuda" else tvm.cpu(0)
    protocol = PROTOCOLS[target_kind]
    arrays = kernel.arrays()
    want = reference(kernel, arrays)
    mod, entries = schedule(kernel, target_kind)
    started = time.perf_counter()
    library = tvm.compile(mod, target=make_target(target_kind)).mod
    build_s = time.perf_counter() - started
    inputs = [tvm.runtime.tensor(a, device=device) for a in arrays]
    for name, entry in entries.items():
        out = tvm.runtime.tensor(np.full(want.shape, np.nan, "float32"), device=device)
        library[symbol(name)](*inputs, out)
        device.sync()
        entry.update(_checked(error(out.numpy(), want)))
        if entry["correct"]:
            samples, timer = time_kernel(
                library, symbol(name), [*inputs, out], device, protocol, target_kind == "cuda"
            )
            entry.update(_summary(samples), timer=timer)
    for peer in peers:
        entries[peer] = _peer(kernel, peer, arrays, want, target_kind, protocol)
    return {
        "kernel": kernel.name,
        "where": kernel.where,
        "op": kernel.op,
        "shape": list(kernel.shape),
        "rows": kernel.rows,
        "length": kernel.length,
        "build_s": build_s,
        "schedules": entries,
    }


def _checked(found: float) -> dict:
    return {"error": found if np.isfinite(found) else None, "correct": found <= TOLERANCE}


def _summary(samples: list[float]) -> dict:
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    rounded = [round(float(sample), 4) for sample in samples]  # below the timers' resolution
    return {"median_us": median, "q1_us": q1, "q3_us": q3, "samples_us": rounded}


def _peer(
    kernel: RowKernel,
    peer: str,
    arrays: list,
    want: np.ndarray,
    target_kind: str,
    protocol: KernelProtocol,
) -> dict:
    """PyTorch's kernel as the peer makes it (eager, torch.compile'd) checked and timed; why not
    where it cannot be (PyTorch or a compiler missing, the GPU timer without a figure), rather
    than the run's end."""
    try:
        import torch

        if PEERS[peer].compiles:  # each kernel alone: a first compile is for its shape only
            torch._dynamo.reset()
        function = PEERS[peer].make(torch_function(kernel))
        where = "cuda" if target_kind == "cuda" else "cpu"
        tensors = [torch.from_numpy(a).to(where) for a in arrays]
        with torch.no_grad():
            entry = {"rule": peer, **_checked(error(function(*tensors).cpu().numpy(), want))}
            if entry["correct"]:
                entry.update(_time_torch(function, tensors, target_kind, protocol))
    except Exception as failure:  # pylint: disable=broad-exception-caught
        return {"rule": peer, "failed": f"{type(failure).__name__}: {_first_line(failure)}"}
    return entry


def _first_line(failure: Exception) -> str:
    lines = str(failure).strip().splitlines()
    return lines[0][:200] if lines else ""


def _time_torch(function, tensors: list, target_kind: str, protocol: KernelProtocol) -> dict:
    """The GPU timer on CUDA, as the TVM kernels'; on the CPU, host time per call."""
    if target_kind == "cuda":
        timer = QueuedGpuTimer(function, tensors)
        samples = timer(protocol.repeat)
        if samples is None:
            return {"failed": f"no GPU time: {timer.reason}"}
        return {**_summary(samples), "timer": GPU_TIMER}
    samples = []
    for _ in range(protocol.repeat):
        started = time.perf_counter()
        for _ in range(protocol.number):
            function(*tensors)
        samples.append((time.perf_counter() - started) * 1e6 / protocol.number)
    return {**_summary(samples), "timer": "perf_counter"}


def main(argv: list[str] | None = None) -> int:
    """Measure the kernels, write OUT/row_bench.json and .md (or render the .md again from the
    .json); 1 where a TVM schedule gets a kernel wrong, else 0."""
    parser = bench_parser("row_bench", __doc__, KERNELS)
    known = peers_for(PeerRole.ROW_BENCH)
    parser.add_argument("--peers", default=",".join(known), help="PyTorch peers, or none")
    parser.add_argument("--render", action="store_true", help="row_bench.md from row_bench.json")
    args = parser.parse_args(argv)
    if args.render:
        return _render(parser, args.out)
    target_kind = args.target or ("cuda" if tvm.cuda(0).exist else "llvm")
    if target_kind == "cuda" and not tvm.cuda(0).exist:
        parser.error("--target cuda needs a GPU here (--target llvm checks on the CPU)")
    kernels = args.kernels.split(",")
    peers = [] if args.peers == "none" else args.peers.split(",")
    unknown = [k for k in kernels if k not in KERNELS] + [p for p in peers if p not in known]
    if unknown:
        parser.error(f"unknown kernel or peer: {', '.join(unknown)}")
    args.out.mkdir(parents=True, exist_ok=True)
    started, rows = time.perf_counter(), list[dict]()
    result = {
        "environment": {**environment(target_kind), "torch": _torch_version(), "command": COMMAND},
        "protocol": asdict(PROTOCOLS[target_kind]),
        "tolerance": TOLERANCE,
        "kernels": rows,
    }
    for name in kernels:  # the files written after each kernel: a cut run keeps what it did
        rows.append(measure(KERNELS[name], target_kind, peers))
        print(f"{name}: " + ", ".join(_cell(n, e) for n, e in rows[-1]["schedules"].items()))
        result["wall_s"] = time.perf_counter() - started
        (args.out / "row_bench.json").write_text(json.dumps(result, indent=1))
        (args.out / "row_bench.md").write_text(row_bench_markdown(result))
    print(row_bench_markdown(result))
    wrong = [
        f"{row['kernel']} ({name})"
        for row in rows
        for name in SCHEDULES
        if not row["schedules"][name]["correct"]
    ]
    if wrong:
        print(f"wrong results: {', '.join(wrong)}", file=sys.stderr)
    return 1 if wrong else 0


def _render(parser: argparse.ArgumentParser, out: Path) -> int:
    """OUT/row_bench.md from OUT/row_bench.json, or from the row_bench.json kept in
    OUT/row_bench.tar.xz (as a committed run keeps it)."""
    try:
        result = loads(_stored(out))  # strict: no NaN reaches the table
    except (OSError, ValueError, KeyError, tarfile.TarError) as failure:
        parser.error(f"cannot read row_bench.json in {out}: {failure}")
    (out / "row_bench.md").write_text(row_bench_markdown(result))
    return 0


def _stored(out: Path) -> bytes:
    if (out / "row_bench.json").exists():  # a regular file of bounded size, as every file read
        return read_bytes(out / "row_bench.json")
    with tarfile.open(out / "row_bench.tar.xz") as archive:
        (member,) = [m for m in archive.getmembers() if Path(m.name).name == "row_bench.json"]
        found = archive.extractfile(member)
        if found is None:
            raise KeyError(member.name)
        return found.read()


def _cell(name: str, entry: dict) -> str:
    if "failed" in entry:
        return f"{name} failed"
    figure = f" {entry['median_us']:.2f} us" if "median_us" in entry else ""
    return f"{name}{figure}" + ("" if entry["correct"] else " WRONG")


def _torch_version() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return str(torch.__version__)


if __name__ == "__main__":
    sys.exit(main())
