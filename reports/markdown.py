"""report.md: reads like a comment in the apache/tvm#20401 thread."""

from __future__ import annotations

from .comparisons import figure_verdicts, like_pairs, ratio_text, treatment, verdict
from .measurement_md import design_text, noise_section, ratios_section
from .samples import LABELS


def _us(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def headline(report: dict) -> str:
    """The paragraph for the issue thread; every verdict names the figure it uses."""
    arms, figures = report["arms"], report["figures"]
    timed = {name: arm for name, arm in arms.items() if arm["median_us"] is not None}
    parts = [f"On {report['device']} ({report['target']}), {report['trials']} trials "
             "(one process each)."]
    if timed:
        parts.append("Per arm, " + " / ".join(figures.values()) + " (medians of per-trial "
                     "medians): " + ", ".join(
                         f"{name.upper()} " + " / ".join(
                             _us(arm["figures"].get(f, {}).get("median_us")) for f in figures)
                         + " us" for name, arm in timed.items()) + ".")
    # The issue's ratios and TVM's arms against ON; the peers' are in the table of ratios.
    own = {pair: ratio for pair, ratio in report["ratios"].items()
           if not any(name.startswith("torch-") for name in pair.split("/"))}
    if own:
        parts.append(f"Paired ratios ({_method_clause(report)}), {LABELS['call_path']}: "
                     + "; ".join(verdict(pair, ratio) for pair, ratio in own.items()) + ".")
    for pair in like_pairs(report):
        top, bottom = pair.split("/")
        parts.append(f"Like for like ({treatment(top)}), `{top}` against `{bottom}`: "
                     + figure_verdicts(report, pair, ("python_call", "gpu_queued")) + ".")
    parts += _fastest(report)
    parts += _best_tuned(report, timed)
    for name, reason in report.get("tuner_failures", {}).items():
        parts.append(f"Tuner `{name}` gave no arm: {reason}.")
    for reason, names in _by_reason(report.get("peers_not_measured", {})).items():
        parts.append(f"Not measured: {', '.join(f'`{n}`' for n in names)} ({reason}).")
    wrong = [name for name, arm in arms.items() if not arm["correct"]]
    if wrong:
        parts.append("Wrong against the NumPy reference, not timed: " + ", ".join(wrong) + ".")
    else:
        parts.append("Every arm matched the independent NumPy reference "
                     f"(largest max-abs error "
                     f"{max(a['max_abs_err'] or 0 for a in arms.values()):.3g}).")
    return " ".join(parts)


def _method_clause(report: dict) -> str:
    method = report["ratio_method"]
    clause = f"95% CI, Student t over the {report['trials']} trials' paired block log-ratios"
    coverage = method.get("coverage")
    if coverage:
        values = sorted(coverage.values())
        clause += f"; simulated coverage {values[0]:.0%} to {values[-1]:.0%}"
    return clause


def _fastest(report: dict) -> list[str]:
    """The fastest arm in each figure, named with the figure."""
    found = []
    for figure, label in report["figures"].items():
        medians = {name: arm["figures"][figure]["median_us"] for name, arm in
                   report["arms"].items() if figure in arm.get("figures", {})}
        if len(medians) > 1:
            best = min(medians, key=medians.get)
            found.append(f"`{best}` ({_us(medians[best])} us) {label}")
    return ["Fastest: " + "; ".join(found) + "."] if found else []


def _best_tuned(report: dict, timed: dict) -> list[str]:
    on = timed.get("on", {}).get("median_us")
    tuned = [n for n in report["tuners"] if n in timed]
    if not tuned or not on:
        return []
    name = min(tuned, key=lambda n: timed[n]["median_us"])
    ratio = report["ratios"].get(f"{name}/on")
    interval = f" ({ratio_text(ratio)})" if ratio else ""
    return [f"The best tuned arm, `{name}`, takes {_us(timed[name]['median_us'])} us "
            f"{LABELS['call_path']}: {timed[name]['median_us'] / on:.3f} of ON{interval}"
            f"{_found_by(report, name)}."]


def _by_reason(missing: dict) -> dict:
    grouped = {}
    for name, reason in missing.items():
        grouped.setdefault(reason, []).append(name)
    return grouped


def _found_by(report: dict, arm: str) -> str:
    tuner = report["tuners"].get(arm)
    if not tuner or tuner.get("best_trial") is None:
        return ""
    return (f"; {arm} found its kernel ({_us(tuner['best_kernel_us'])} us) at trial "
            f"{tuner['best_trial']} of {tuner['trials']}")


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("—" if c is None else str(c) for c in row) + " |" for row in rows]
    return lines


def arms_table(report: dict) -> list[str]:
    figures, rows = report["figures"], []
    for name, arm in report["arms"].items():
        medians = [_us(arm.get("figures", {}).get(f, {}).get("median_us")) for f in figures]
        rows.append([f"`{name}`", *medians, _fmt(arm.get("ratio_to_on")),
                     _fmt(arm.get("ratio_to_best")), "yes" if arm["correct"] else "**no**",
                     "—" if arm["max_abs_err"] is None else f"{arm['max_abs_err']:.3g}"])
    return _table(["arm", *(f"{label}, us" for label in figures.values()),
                   "/ ON", "/ best", "correct", "max abs err"], rows)


def figure_notes(report: dict) -> list[str]:
    """What each figure is (tuning/blocks.py takes them)."""
    notes = {
        "call_path": "the VM's `time_evaluator` of `invoke_stateful` (calls looped in C++), a "
                     "captured graph's replay, or a PyTorch peer's call in a Python loop; CUDA "
                     "events around back-to-back calls on the GPU.",
        "python_call": "`vm[\"main\"](x)` with `x` already on the device, `model(x)` for "
                       "PyTorch (inside one `torch.no_grad()`), or for a captured graph the "
                       "input copied into its static buffer and the graph replayed; the host's "
                       "clock from an idle device to the last call's end.",
        "gpu_queued": "the GPU time of one call with "
                      f"{report['protocol'].get('queued_calls', 20)} calls queued behind a "
                      "sleeping kernel (CUDA events), i.e. the end-to-end time without the "
                      "host's share; what a launch path with no host cost could approach.",
    }
    return [f"{label}: {notes[figure]}" for figure, label in report["figures"].items()]


def arm_notes(report: dict) -> list[str]:
    """What the table cannot say: how the fixed, CUDA-graph and peer arms were made."""
    names, notes = report["arms"], figure_notes(report)
    if any(n.startswith("fixed") for n in names):
        notes.append("`fixed`: the default rules with the candidate `WindowReduction` rule "
                     "before `GeneralReduction` (a GPU rule: on llvm it equals `on`).")
    if any("one-kernel" in n for n in names):
        notes.append("`one-kernel`: right after FuseOps, the pass `FuseAroundReduction` merges "
                     "the pool's kernel with its injective prologue and elementwise tail, so "
                     "FuseTIR makes one kernel that reads the graph's input and writes every "
                     "output; `WindowReduction` schedules it (`optuna-one-kernel`: Optuna's best "
                     "schedule of that same kernel).")
    for name, launches in report.get("cuda_graph_launches", {}).items():
        notes.append(f"`{name}`: Relax's CUDA graph rewriting captured {launches} kernel "
                     "launches (it captures only kernels between buffers it allocates itself).")
    if any(n.endswith("+capture") and not n.startswith("torch-") for n in names):
        notes.append("`+capture`: the whole VM call captured once into a CUDA graph (through "
                     "PyTorch, on TVM's FFI stream) and replayed; the input and outputs stay in "
                     "fixed buffers, and a new input is copied in. Relax's own rewriting cannot "
                     "do this here, because the kernels touch the function's input and outputs.")
    if any(n.startswith("torch-") for n in names):
        notes.append("`torch-*`: the same graph in PyTorch (eager; `torch.compile` in its default "
                     "mode; `-graphs`: mode `reduce-overhead`, which replays CUDA graphs; "
                     "`-max-autotune`: mode `max-autotune-no-cudagraphs`; `+capture`: the whole "
                     "call captured with `torch.cuda.graph` after a warm-up on a side stream, "
                     "static input and outputs, PyTorch's documented recipe), checked against "
                     "the same NumPy reference and timed in the same interleaved blocks.")
    if report.get("peers_added"):
        notes.append("Added beside the TVM `+capture` arms, so that PyTorch gets the same "
                     "treatment: " + ", ".join(f"`{n}`" for n in report["peers_added"]) + ".")
    return ["", *(f"- {note}" for note in notes)] if notes else []


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def kernels_table(report: dict) -> list[str]:
    rows = []
    for name, arm in report["arms"].items():
        for kernel in arm["kernels"]:
            rows.append([f"`{name}`", f"`{kernel['name'][:48]}`", kernel["grid"], kernel["block"],
                         kernel["registers"], kernel["shared_bytes"], kernel["local_bytes"]])
    if not rows:
        return ["No CUDA kernels in this run (target llvm)."]
    return _table(["arm", "kernel", "grid", "block", "registers", "shared B", "local B"], rows)


def fused_kernel_table(report: dict) -> list[str]:
    rows = [[f"`{r['arm']}`", r["grid"], r["block"], r["registers"], r["shared_bytes"],
             r["local_bytes"], _us(r["kernel_us"]),
             "—" if r["gbps"] is None else f"{r['gbps']:.0f}"]
            for r in report.get("fused_kernel", [])]
    if not rows:
        return []
    whole = report.get("whole_kernel_bytes")
    moved = (f"; {whole / 1e6:.2f} MB for one kernel of the whole graph (the graph's input "
             "read once, each output written once)") if whole and any(
        r.get("whole_graph") for r in report.get("fused_kernel", [])) else ""
    return ["", "## The fused pool kernel in each arm", "",
            f"Kernel-level time is the GPU time per launch measured by the tuners' timer; GB/s "
            f"counts the {report['fused_kernel_bytes'] / 1e6:.2f} MB it must move (input read "
            f"once, output written once){moved}.", ""] + _table(
        ["arm", "grid", "block", "registers", "shared B", "local B", "kernel us", "GB/s"], rows)


def tuners_table(report: dict) -> list[str]:
    rows = []
    for name, tuner in report["tuners"].items():
        failed = ", ".join(f"{k}: {v}" for k, v in tuner.get("failed_by_reason", {}).items())
        rows.append([f"`{name}`", tuner.get("trials"), tuner.get("valid"), failed or "0",
                     _us(tuner.get("best_kernel_us")), tuner.get("best_trial"),
                     _fmt(tuner.get("wall_s"))])
    timers = sorted({t.get("timer") for t in report["tuners"].values() if t.get("timer")})
    note = [f"Kernel timer: {', '.join(timers)}.", ""] if timers else []
    return note + _table(["tuner", "trials", "valid", "failed by reason", "best kernel us",
                          "found at trial", "wall s"], rows)


def sampler_table(report: dict) -> list[str]:
    """How close each sampler came to the exhaustive optimum (replayed on its measurements)."""
    optuna = report["tuners"].get("optuna", {})
    replays = optuna.get("sampler_replay")
    if not replays:
        return []
    rows = []
    for name, result in replays.items():
        for run in result["runs"]:
            rows.append([name, run["seed"], _us(run["best_kernel_us"]), f"{run['gap']:.1%}",
                         run["trials_to_within_10pct"]])
    return ["", f"Exhaustive optimum of the space: {_us(optuna['exhaustive_best_kernel_us'])} us "
            f"over {optuna['exhaustive_points']} valid points. Samplers replayed on those "
            f"measurements, {next(iter(replays.values()))['trials']} trials each:", ""] + _table(
        ["sampler", "seed", "best us", "gap to optimum", "trials to within 10 %"], rows)


def environment_block(report: dict) -> list[str]:
    env = report["environment"]
    return ["```"] + [f"{key}: {value}" for key, value in env.items()] + ["```"]


def render(report: dict) -> str:
    lines = ["# Fused MaxPool + Add (apache/tvm#20401): default schedule against tuned schedules",
             "", headline(report), "", "## Arms (the whole graph; medians of per-trial medians)",
             ""]
    lines += arms_table(report)
    lines += arm_notes(report)
    lines += ratios_section(report)
    lines += noise_section(report)
    lines += design_text(report)
    lines += ["", "## CUDA kernels of each arm (ptxas resource report)", ""]
    lines += kernels_table(report)
    lines += fused_kernel_table(report)
    if report["tuners"]:
        lines += ["", "## Tuners (the fused kernel, kernel-level timing)", ""]
        lines += tuners_table(report)
        lines += sampler_table(report)
    lines += ["", "## Case and protocol", "", f"Case: `{report['case']}`",
              "", f"Protocol: `{report['protocol']}`", "",
              f"Command: `{report.get('command')}`", "", "## Environment", ""]
    lines += environment_block(report)
    return "\n".join(lines) + "\n"
