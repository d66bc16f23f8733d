"""Small-window reduction kernels (the class of apache/tvm#20401) under each rule list: the rule
that takes each, whether its result is right, and on a GPU how long the kernel takes.

    python3 -m pool_fusion_tuning.baselines.window_bench OUT [--target cuda|llvm] [--kernels A,B]
        [--lists ...]

Each kernel (`window_kernels.py`) is a small Relax graph with the shapes of a layer of a real model
(or a control that no list should change), compiled by the CUDA pipeline up to default scheduling,
every function then scheduled by the first rule of the list that takes it. With `--target cuda` (the
default where a GPU is present) the graph is built for the GPU and run by the Relax VM, its output
checked against PyTorch's (CPU, fp32), and the kernel with the reduction compiled alone and timed
with `time_evaluator` (inputs stay in L2, as between the layers of a model). With `--target llvm`,
every CUDA schedule is replayed for the CPU without its thread bindings (the schedule's own trace
less its Bind steps, so each thread's work runs as a serial loop) and checked the same way; nothing
is timed. Writes OUT/window_bench.json and OUT/window_bench.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np
import tvm
from tvm import relax, s_tir, tirx

from .anatomy import launch_configs
from .backend import backend_pipeline
from .pipeline import make_target
from .rules import RULE_LISTS, first_rule, rule_hash
from .window_kernels import KERNELS, Kernel, fused, reduction_function, reference_torch

# time_evaluator: samples, and the least time each one averages over.
REPEAT, MIN_REPEAT_MS = 15, 20
# Relative to the largest magnitude of the reference output (fp32, windows of up to 49 terms).
TOLERANCE = 1e-4


def without_bindings(func: tirx.PrimFunc, trace: s_tir.Trace) -> tirx.PrimFunc:
    """`func` scheduled by `trace` less its thread bindings: each thread's work a serial loop
    (right for schedules whose threads do not communicate), so a CPU can run it."""
    steps = [step for step in trace.insts if step.kind.name != "Bind"]
    decisions = {step: decision for step, decision in trace.decisions.items() if step in steps}
    sch = s_tir.Schedule(func)
    s_tir.Trace(steps, decisions).apply_to_schedule(sch, remove_postproc=False)
    return sch.mod["main"]


def schedule(mod: tvm.IRModule, rules: list, target_kind: str) -> tuple[tvm.IRModule, dict]:
    """`mod` with every PrimFunc scheduled for CUDA by the first of `rules` that takes it (for
    llvm, that schedule without its thread bindings); and per function (rule, CUDA function)."""
    cuda = make_target("cuda")
    scheduled, chosen = tvm.IRModule(dict(mod.functions), attrs=mod.attrs), {}
    for gv, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            rule, sch = first_rule(func, cuda, rules)
            if sch is None:  # a list without a catch-all rule last
                raise ValueError(f"no rule of the list schedules {gv.name_hint}")
            chosen[gv] = (rule, sch.mod["main"])
            body = sch.mod["main"] if target_kind == "cuda" else without_bindings(func, sch.trace)
            scheduled[gv] = body.with_attr("tirx.is_scheduled", True)
    return scheduled, chosen


def build(mod: tvm.IRModule, target_kind: str) -> tvm.runtime.Executable:
    """The scheduled module through the rest of the target's pipeline, compiled."""
    target = make_target(target_kind)
    backend = backend_pipeline(target)
    with target, tvm.transform.PassContext(opt_level=3):
        for transform in backend.dataflow_lower_passes(target) + backend.finalize_passes(target):
            mod = transform(mod)
    return relax.build(mod, target=target, relax_pipeline=None, tir_pipeline="default")


def error(kernel: Kernel, executable, device) -> float | None:
    """The largest difference from PyTorch's result, relative to that result's largest
    magnitude; None where the shapes differ."""
    if kernel.reference is None:
        raise ValueError(f"kernel {kernel.name} has no PyTorch reference to check against")
    torch = reference_torch()
    arrays = kernel.arrays()
    vm = relax.VirtualMachine(executable, device)
    got = vm["main"](*[tvm.runtime.tensor(a, device=device) for a in arrays]).numpy()
    with torch.no_grad():
        want = kernel.reference(*[torch.from_numpy(a) for a in arrays]).numpy()
    if got.shape != want.shape:
        return None
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))


def time_kernel(executable, name: str, func: tirx.PrimFunc, device) -> list[float]:
    """Microseconds per call of the built function `name` (`func`, scheduled) on random inputs,
    alone (the graph's other kernels left out), REPEAT samples."""
    rng = np.random.default_rng(0)
    args = [
        tvm.runtime.tensor(
            rng.uniform(-1, 1, [int(d) for d in p.ty.shape]).astype(str(p.ty.dtype)), device=device
        )
        for p in func.params
    ]
    (library,) = executable.mod.imports  # the graph's kernels; the VM's own code is the rest
    timer = library.time_evaluator(name, device, repeat=REPEAT, min_repeat_ms=MIN_REPEAT_MS)
    return [seconds * 1e6 for seconds in timer(*args).results]


def measure(kernel: Kernel, lists: list[str], target_kind: str) -> dict:
    """One kernel under each rule list: rule, launch, error and (on CUDA) time of its
    reduction's kernel."""
    device = tvm.cuda(0) if target_kind == "cuda" else tvm.cpu(0)
    mod = fused(kernel)
    focus = reduction_function(mod)
    entries: dict[str, dict] = {}
    row = {"kernel": kernel.name, "where": kernel.where, "inputs": kernel.inputs, "lists": entries}
    for name in lists:
        scheduled, chosen = schedule(mod, RULE_LISTS[name](make_target("cuda")), target_kind)
        rule, func = chosen[focus]
        (launch,) = launch_configs(tvm.IRModule({focus: func})).values()
        executable = build(scheduled, target_kind)
        found = error(kernel, executable, device)
        correct = found is not None and found <= TOLERANCE
        entry = {"rule": rule, **launch, "error": found, "correct": correct}
        if target_kind == "cuda":
            samples = time_kernel(executable, focus.name_hint, func, device)
            q1, median, q3 = np.percentile(samples, [25, 50, 75])
            entry.update(median_us=median, q1_us=q1, q3_us=q3, samples_us=samples)
        entries[name] = entry
    return row


COMMAND = "python3 -m pool_fusion_tuning.baselines.window_bench"
OLD_COMMAND = "python3 -m baselines.window_bench"  # before the one import root; runs name none


def environment(target_kind: str) -> dict:
    found = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "tvm": tvm.__version__,
        "python": sys.version.split()[0],
        "target": str(make_target("cuda")),
        "run_on": target_kind,
        "rule_sha256": rule_hash(),
    }
    if target_kind == "cuda":
        device = tvm.cuda(0)
        found.update(gpu=device.device_name, compute_version=device.compute_version)
    return found


def window_bench_markdown(result: dict) -> str:
    """A table per kernel and list: the rule, its launch, and (on CUDA) the median time with its
    interquartile range and the ratio to the default list."""
    lists = list(result["kernels"][0]["lists"])
    timed = "median_us" in result["kernels"][0]["lists"][lists[0]]
    lines = [
        f"# Window kernels under {', '.join(lists)} ({result['environment']['run_on']})",
        "",
        f"`{result['environment'].get('command', OLD_COMMAND)}`, "
        f"{result['environment']['date']}, TVM {result['environment']['tvm']}"
        + (f", {result['environment']['gpu']}" if timed else ", numerics only (nothing timed)")
        + ". Each cell: the rule that takes the kernel, its launch (blocks x threads)"
        + (", the kernel's median time (IQR) and its ratio to the default list" if timed else "")
        + "; a wrong result is marked WRONG.",
        "",
        *table(result),
    ]
    return "\n".join(lines) + "\n"


def table(result: dict) -> list[str]:
    """The Markdown table of `window_bench_markdown`, and what each kernel is (also in tune
    upstream's PR text)."""
    lists = list(result["kernels"][0]["lists"])
    timed = "median_us" in result["kernels"][0]["lists"][lists[0]]
    lines = ["| kernel | " + " | ".join(lists) + " |", "|---|" + "---|" * len(lists)]
    for row in result["kernels"]:
        base = row["lists"].get("default", {}).get("median_us")
        cells = []
        for name in lists:
            entry = row["lists"][name]
            cell = f"{entry['rule']} {entry['grid']}x{entry['block']}"
            if timed:
                cell += f" {entry['median_us']:.2f} us ({entry['q1_us']:.2f}-{entry['q3_us']:.2f})"
                if base:
                    cell += f" x{entry['median_us'] / base:.2f}"
            cells.append(cell + ("" if entry["correct"] else " WRONG"))
        lines.append(f"| {row['kernel']} | " + " | ".join(cells) + " |")
    return [*lines, "", *[f"- {row['kernel']}: {row['where']}" for row in result["kernels"]]]


def bench_parser(name: str, doc: str | None, kernels) -> argparse.ArgumentParser:
    """The parser a kernel bench of this package starts from
    (`python3 -m pool_fusion_tuning.baselines.NAME OUT`): its folder, the target and the kernels;
    its example shown as written, as `tune`'s are."""
    parser = argparse.ArgumentParser(
        prog=f"python3 -m pool_fusion_tuning.baselines.{name}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("out", type=Path, help=f"folder for {name}.json and .md")
    parser.add_argument("--target", choices=("cuda", "llvm"), help="default: cuda if a GPU is here")
    parser.add_argument("--kernels", default=",".join(kernels), help="comma-separated names")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Measure the kernels under the lists, write OUT/window_bench.json and .md; 1 where a list
    gets a kernel wrong that the default list gets right, else 0."""
    parser = bench_parser("window_bench", __doc__, KERNELS)
    parser.add_argument("--lists", default=",".join(RULE_LISTS), help="comma-separated rule lists")
    args = parser.parse_args(argv)
    target_kind = args.target or ("cuda" if tvm.cuda(0).exist else "llvm")
    kernels, lists = args.kernels.split(","), args.lists.split(",")
    unknown = [k for k in kernels if k not in KERNELS] + [n for n in lists if n not in RULE_LISTS]
    if unknown:
        parser.error(f"unknown kernel or rule list: {', '.join(unknown)}")
    rows = []
    for name in kernels:
        rows.append(measure(KERNELS[name], lists, target_kind))
        print(f"{name}: " + ", ".join(f"{n} {e['rule']}" for n, e in rows[-1]["lists"].items()))
    result = {
        "environment": {**environment(target_kind), "command": COMMAND},
        "protocol": {"timer": "time_evaluator", "repeat": REPEAT, "min_repeat_ms": MIN_REPEAT_MS},
        "tolerance": TOLERANCE,
        "kernels": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "window_bench.json").write_text(json.dumps(result, indent=2))
    (args.out / "window_bench.md").write_text(window_bench_markdown(result))
    print(window_bench_markdown(result))
    return 1 if _regressions(rows) else 0


def _regressions(rows: list[dict]) -> list[str]:
    """Kernels a list gets wrong where the default list gets them right, named on stderr."""
    found = [
        f"{row['kernel']} ({name})"
        for row in rows
        for name, entry in row["lists"].items()
        if not entry["correct"] and row["lists"].get("default", {}).get("correct", True)
    ]
    if found:
        print(f"wrong where the default list is right: {', '.join(found)}", file=sys.stderr)
    return found


if __name__ == "__main__":
    sys.exit(main())
