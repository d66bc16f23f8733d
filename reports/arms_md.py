"""report.md's table of arms and what it cannot say: how each figure and each arm was made."""

from __future__ import annotations

from pool_fusion_tuning.baselines.peers import CAPTURE, PEERS
from pool_fusion_tuning.runfolder.report_records import Report

from .cells import MISSING, table, three, us
from .escape import code
from .report_data import fixed_rule_before


def arms_table(report: Report) -> list[str]:
    """One row per arm: the median of each figure, its ratios to ON and to the best arm,
    correctness and the largest error against the reference."""
    figures, rows = report["figures"], []
    for name, arm in report["arms"].items():
        medians = [us(arm.get("figures", {}).get(f, {}).get("median_us")) for f in figures]
        rows.append(
            [
                code(name),
                *medians,
                three(arm.get("ratio_to_on")),
                three(arm.get("ratio_to_best")),
                "yes" if arm["correct"] else "**no**",
                MISSING if arm["max_abs_err"] is None else f"{arm['max_abs_err']:.3g}",
            ]
        )
    return table(
        [
            "arm",
            *(f"{label}, us" for label in figures.values()),
            "/ ON",
            "/ best",
            "correct",
            "max abs err",
        ],
        rows,
    )


def figure_notes(report: Report) -> list[str]:
    """What each figure is (tuning/measure/blocks.py takes them)."""
    notes = {
        "call_path": "the VM's `time_evaluator` of `invoke_stateful` (calls looped in C++), a "
        "captured graph's replay, or a PyTorch peer's call in a Python loop; CUDA "
        "events around back-to-back calls on the GPU.",
        "python_call": '`vm["main"](x)` with `x` already on the device, `model(x)` for '
        "PyTorch (inside one `torch.no_grad()`), or for a captured graph the "
        "input copied into its static buffer and the graph replayed; the host's "
        "clock from an idle device to the last call's end.",
        "gpu_queued": "the GPU time of one call with "
        f"{report['protocol'].get('queued_calls', 20)} calls queued behind a "
        "sleeping kernel (CUDA events), i.e. the end-to-end time without the "
        "host's share; what a launch path with no host cost could approach.",
    }
    return [f"{label}: {notes[figure]}" for figure, label in report["figures"].items()]


def arm_notes(report: Report) -> list[str]:
    """What the table cannot say: how the fixed, CUDA-graph and peer arms were made."""
    names, notes = report["arms"], figure_notes(report)
    if any(n.startswith("fixed") for n in names):
        notes.append(
            "`fixed`: the default rules with the candidate `WindowReduction` rule "
            f"before {code(fixed_rule_before(report))} (a GPU rule: on llvm it equals `on`)."
        )
    if any("one-kernel" in n for n in names):
        notes.append(
            "`one-kernel`: right after FuseOps, the pass `FuseAroundReduction` merges "
            "the pool's kernel with its injective prologue and elementwise tail, so "
            "FuseTIR makes one kernel that reads the graph's input and writes every "
            "output; `WindowReduction` schedules it (`optuna-one-kernel`: Optuna's best "
            "schedule of that same kernel)."
        )
    if masked := report.get("masked_arms"):
        notes.append(
            f"{', '.join(map(code, masked))}: after scheduling, each guarded block that "
            "writes a register runs unguarded, its loads at indices clamped into the "
            "input (`baselines/masked_loads.py`), as Triton masks its loads; the stores "
            "keep their guards."
        )
    for name, launches in report.get("cuda_graph_launches", {}).items():
        notes.append(
            f"{code(name)}: Relax's CUDA graph rewriting captured {launches} kernel "
            "launches (it captures only kernels between buffers it allocates itself)."
        )
    if any(n.endswith(CAPTURE) and n not in PEERS for n in names):
        notes.append(
            "`+capture`: the whole VM call captured once into a CUDA graph (through "
            "PyTorch, on TVM's FFI stream) and replayed; the input and outputs stay in "
            "fixed buffers, and a new input is copied in. Relax's own rewriting cannot "
            "do this here, because the kernels touch the function's input and outputs."
        )
    if any(n in PEERS for n in names):
        notes.append(
            "`torch-*`: the same graph in PyTorch (eager; `torch.compile` in its default "
            "mode; `-graphs`: mode `reduce-overhead`, which replays CUDA graphs; "
            "`-max-autotune`: mode `max-autotune-no-cudagraphs`; `+capture`: the whole "
            "call captured with `torch.cuda.graph` after a warm-up on a side stream, "
            "static input and outputs, PyTorch's documented recipe), checked against "
            "the same NumPy reference and timed in the same interleaved blocks."
        )
    if report.get("peers_added"):
        notes.append(
            "Added beside the TVM `+capture` arms, so that PyTorch gets the same "
            "treatment: " + ", ".join(code(n) for n in report["peers_added"]) + "."
        )
    return ["", *(f"- {note}" for note in notes)] if notes else []
