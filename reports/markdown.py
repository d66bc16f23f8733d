"""report.md: reads like a comment in the apache/tvm#20401 thread."""

from __future__ import annotations


def _us(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _ratio_text(name: str, ratio: dict) -> str:
    verdict = "" if ratio["distinguishable"] else ", not distinguishable from 1"
    return (f"{name} = {ratio['ratio']:.2f} "
            f"({ratio['confidence']:.0%} CI {ratio['low']:.2f}–{ratio['high']:.2f}{verdict})")


def headline(report: dict) -> str:
    arms = report["arms"]
    on = arms.get("on", {}).get("median_us")
    where = f"{report['device']} ({report['target']})"
    parts = [f"On {where}, median of {report['trials']} per-trial medians: "
             + ", ".join(f"{name.upper()} {_us(arm['median_us'])} us"
                         for name, arm in arms.items() if arm["median_us"] is not None) + "."]
    if report["ratios"]:
        parts.append("Ratios: " + "; ".join(
            _ratio_text(name, ratio) for name, ratio in report["ratios"].items()) + ".")
    best = report.get("best_arm")
    if best and on and best != "on":
        parts.append(f"The fastest arm is `{best}` at {_us(arms[best]['median_us'])} us end to "
                     f"end, {on / arms[best]['median_us']:.2f}x faster than the default schedule "
                     f"(ON){_found_by(report, best)}.")
    tuned = [n for n in report["tuners"] if n in arms and arms[n]["median_us"] is not None]
    if tuned and on:
        name = min(tuned, key=lambda n: arms[n]["median_us"])
        ratio = report["ratios"].get(f"{name}/on")
        interval = f" (95% CI {ratio['low']:.2f}–{ratio['high']:.2f})" if ratio else ""
        parts.append(f"The best tuned arm, `{name}`, takes {_us(arms[name]['median_us'])} us: "
                     f"{arms[name]['median_us'] / on:.3f} of ON{interval}{_found_by(report, name)}.")
    for name, reason in report.get("tuner_failures", {}).items():
        parts.append(f"Tuner `{name}` gave no arm: {reason}.")
    wrong = [name for name, arm in arms.items() if not arm["correct"]]
    if wrong:
        parts.append("Wrong against the NumPy reference, not timed: " + ", ".join(wrong) + ".")
    else:
        parts.append("Every arm matched the independent NumPy reference "
                     f"(largest max-abs error {max(a['max_abs_err'] or 0 for a in arms.values()):.3g}).")
    return " ".join(parts)


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
    queued = any(arm.get("queued_gpu_us") is not None for arm in report["arms"].values())
    rows = []
    for name, arm in report["arms"].items():
        rows.append([f"`{name}`", _us(arm["median_us"]), _us(arm.get("iqr_us")),
                     "—" if arm.get("cv") is None else f"{arm['cv']:.2%}",
                     _fmt(arm.get("ratio_to_on")), _fmt(arm.get("ratio_to_best")),
                     "yes" if arm["correct"] else "**no**",
                     "—" if arm["max_abs_err"] is None else f"{arm['max_abs_err']:.3g}"]
                    + ([_us(arm.get("queued_gpu_us"))] if queued else []))
    return _table(["arm", "median us", "IQR us", "CV (median of trials)", "/ ON", "/ best",
                   "correct", "max abs err"] + (["GPU us, calls queued"] if queued else []), rows)


def arm_notes(report: dict) -> list[str]:
    """What the table cannot say: how the fixed, CUDA-graph and peer arms were made."""
    names, notes = report["arms"], []
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
    if any(n.endswith("+capture") for n in names):
        notes.append("`+capture`: the whole VM call captured once into a CUDA graph (through "
                     "PyTorch, on TVM's FFI stream) and replayed; the input and outputs stay in "
                     "fixed buffers, and a new input is copied in. Relax's own rewriting cannot "
                     "do this here, because the kernels touch the function's input and outputs.")
    if any(arm.get("queued_gpu_us") is not None for arm in names.values()):
        notes.append("GPU us, calls queued: the GPU time of one call when calls are queued "
                     "behind a sleeping kernel (CUDA events), i.e. the end-to-end time without "
                     "the host's share; what a launch path with no host cost (a CUDA graph of "
                     "the whole call) could approach.")
    if any(n.startswith("torch-") for n in names):
        notes.append("`torch-*`: the same graph in PyTorch (eager; `torch.compile` in its default "
                     "mode; `-graphs`: mode `reduce-overhead`, which replays CUDA graphs), "
                     "checked against the same NumPy reference and timed in the same "
                     "interleaved blocks.")
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
             r["local_bytes"], _us(r["kernel_us"]), "—" if r["gbps"] is None else f"{r['gbps']:.0f}"]
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
             "", headline(report), "", "## Arms (whole graph, Relax VM `invoke_stateful`)", ""]
    lines += arms_table(report)
    lines += arm_notes(report)
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
