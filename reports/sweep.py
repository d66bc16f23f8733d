"""The sweep's report (sweep.json, sweep.md, sweep.png) from its cases' own reports."""

from __future__ import annotations

from pathlib import Path

import tvm

from baselines.arms import ARMS
from baselines.case import Case
from baselines.graph import REDUCTION_GRAPHS
from baselines.pipeline import fused_pool_function, fused_stage, make_target, unscheduled
from baselines.rules import default_rules, fixed_rules, rule_assignment
from tuning.store import read_json, write_json, write_text

# Within this of the tuned optimum, the candidate rule is "close enough" (issue 7's goal).
GOAL_GAP = 0.10
END_TO_END = ("partial", "on", "fixed", "serial", "optuna", "one-kernel", "optuna-one-kernel",
              "fixed+capture", "one-kernel+capture")
KERNELS = {"default": ("optuna", "default_kernel_us"), "fixed": ("optuna", "fixed_kernel_us"),
           "serial": ("optuna", "serial_kernel_us"), "optuna": ("optuna", "best_kernel_us"),
           # The one kernel of the whole graph: the rule's schedule and Optuna's best of it.
           "one-kernel": ("optuna-one-kernel", "fixed_kernel_us"),
           "optuna-one-kernel": ("optuna-one-kernel", "best_kernel_us")}


def render_sweep(out: Path, names: list[str]) -> dict:
    target = make_target("cuda")  # which rule takes a kernel is a CUDA question, GPU or not
    stored = read_json(out / "sweep.json")
    cases = [_case_row(name, read_json(out / name / "report.json"), target) for name in names]
    sweep = {**stored, "device": cases[0]["device"] if cases else None, "cases": cases,
             "fixed_slower_than_on": [c["case"] for c in cases if c["fixed_slower_than_on"]],
             "fixed_beyond_goal": [c["case"] for c in cases if c["fixed_gap"] is not None
                                   and c["fixed_gap"] > GOAL_GAP],
             "one_kernel_slower_than_fixed": [c["case"] for c in cases
                                              if c["one_kernel_slower_than_fixed"]],
             "one_kernel_beyond_goal": [c["case"] for c in cases if c["one_kernel_gap"] is not None
                                        and c["one_kernel_gap"] > GOAL_GAP],
             "tuner_failures": {c["case"]: c["tuner_failures"] for c in cases
                                if c["tuner_failures"]},
             "large_reductions": reduction_rules(target)}
    write_json(out / "sweep.json", sweep)
    write_text(out / "sweep.md", markdown(sweep))
    try:
        from .plots import sweep_plot
    except ImportError:  # matplotlib is optional; the tables are enough
        return sweep
    sweep_plot(sweep, out / "sweep.png")
    return sweep


def _case_row(name: str, report: dict, target) -> dict:
    arms, tuners = report["arms"], report["tuners"]
    kernels = {key: tuners.get(tuner, {}).get(field) for key, (tuner, field) in KERNELS.items()}
    fixed_vs_on = report["ratios"].get("fixed/on", {})
    one_vs_fixed = report["ratios"].get("one-kernel/fixed", {})
    launches = {row["arm"]: {k: row.get(k) for k in ("grid", "block")}
                for row in report.get("fused_kernel", [])}
    case = Case.from_dict(report["case"])
    return {
        "case": name, "shape": report["case"], "device": report["device"],
        "tuner_failures": report.get("tuner_failures", {}),
        "rule": rule_assignment(_fused_only(case, target, "on"), target, fixed_rules(target)),
        "one_kernel_rule": rule_assignment(_fused_only(case, target, "one-kernel"), target,
                                           fixed_rules(target)),
        "fixed_launch": launches.get("fixed", {"grid": None, "block": None}),
        "one_kernel_launch": launches.get("one-kernel", {"grid": None, "block": None}),
        "fixed_correct": arms.get("fixed", {}).get("correct"),
        "fixed_max_abs_err": arms.get("fixed", {}).get("max_abs_err"),
        "one_kernel_correct": arms.get("one-kernel", {}).get("correct"),
        "kernel_us": kernels,
        "fixed_gap": _gap(kernels["fixed"], kernels["optuna"]),
        "one_kernel_gap": _gap(kernels["one-kernel"], kernels["optuna-one-kernel"]),
        "end_to_end_us": {arm: arms.get(arm, {}).get("median_us") for arm in END_TO_END},
        "queued_gpu_us": {arm: arms.get(arm, {}).get("queued_gpu_us") for arm in END_TO_END},
        "fixed_over_on": fixed_vs_on,
        "one_kernel_over_fixed": one_vs_fixed,
        "captured_one_kernel_over_fixed": report["ratios"].get(
            "one-kernel+capture/fixed+capture", {}),
        # Slower only when the interval says so (both ends above 1).
        "fixed_slower_than_on": bool(fixed_vs_on) and (fixed_vs_on.get("low") or 0) > 1,
        "one_kernel_slower_than_fixed": bool(one_vs_fixed)
        and (one_vs_fixed.get("low") or 0) > 1,
    }


def _gap(kernel_us, optimum_us):
    return kernel_us / optimum_us - 1 if kernel_us and optimum_us else None


def _fused_only(case: Case, target, arm: str) -> tvm.IRModule:
    gv, func = fused_pool_function(fused_stage(case, ARMS[arm], target))
    return tvm.IRModule({gv: func})


def reduction_rules(target) -> dict:
    """Per graph with a reduction: the rule of each kernel under both rule lists, and whether
    the fixed list leaves every kernel exactly as the default list schedules it (same text)."""
    rows, default, fixed = {}, default_rules(target), fixed_rules(target)
    for name, graph in REDUCTION_GRAPHS.items():
        mod = unscheduled(graph(), target)
        with target:
            same = _schedule(mod, default).script() == _schedule(mod, fixed).script()
        rows[name] = {"default": rule_assignment(mod, target, default),
                      "fixed": rule_assignment(mod, target, fixed), "unchanged": same}
    return rows


def _schedule(mod, rules):
    from tvm.s_tir import dlight
    # A copy: ApplyDefaultSchedule writes the scheduled functions into the module it is given.
    return dlight.ApplyDefaultSchedule(*rules)(tvm.IRModule(dict(mod.functions)))


def _us(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def markdown(sweep: dict) -> str:
    settings = sweep["settings"]
    lines = [
        "# Sweep: the candidate `WindowReduction` rule (`fixed`) across Cases", "",
        f"On {sweep['device']}, `{sweep['command']}`: per Case, the end-to-end arms "
        f"(trials {settings['protocol']['trials']}, blocks {settings['protocol']['blocks']}) and "
        f"the fused kernel alone (time per launch), with Optuna's best of "
        f"{settings['budget']} trials as the tuned optimum. Each Case's own report is in its "
        "folder.", "",
        "| case | rule for the fused kernel | fixed launch | kernel us: default | fixed | serial "
        "| optuna | fixed gap to optuna | e2e us: partial | on | fixed | serial | optuna "
        "| fixed/on (95% CI) | fixed correct |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in sweep["cases"]:
        k, e, r = c["kernel_us"], c["end_to_end_us"], c["fixed_over_on"]
        launch = " x ".join(str(v) for v in c["fixed_launch"].values() if v) or "–"
        ratio = _ratio(r)
        gap = "–" if c["fixed_gap"] is None else f"{c['fixed_gap']:+.1%}"
        lines.append(
            f"| {c['case']} | {', '.join(sorted(set(c['rule'].values())))} "
            f"| {launch} | {_us(k['default'])} | {_us(k['fixed'])} "
            f"| {_us(k['serial'])} | {_us(k['optuna'])} | {gap} | {_us(e['partial'])} "
            f"| {_us(e['on'])} | {_us(e['fixed'])} | {_us(e['serial'])} | {_us(e['optuna'])} "
            f"| {ratio} | {'yes' if c['fixed_correct'] else 'NO'} |")
    slower, beyond = sweep["fixed_slower_than_on"], sweep["fixed_beyond_goal"]
    lines += ["", f"Cases where `fixed` is slower than `on` end to end (interval above 1): "
              f"{', '.join(slower) if slower else 'none'}.",
              f"Cases where the `fixed` kernel is more than {GOAL_GAP:.0%} slower than Optuna's "
              f"best: {', '.join(beyond) if beyond else 'none'}.", "",
              *[f"Case {name}: {'; '.join(errors.values())}; no tuned optimum.\n" for name, errors
                in sweep["tuner_failures"].items()],
              *_one_kernel_table(sweep),
              "## Graphs with large reductions", "",
              "Which rule schedules each kernel (reduce, then add 1), under the default list and "
              "with `WindowReduction` added; `unchanged` means the two scheduled modules print the "
              "same.", "",
              "| graph | default rules | fixed rules | unchanged |", "|---|---|---|---|"]
    for name, row in sweep["large_reductions"].items():
        lines.append(f"| {name} | {_rules(row['default'])} | {_rules(row['fixed'])} "
                     f"| {'yes' if row['unchanged'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def _one_kernel_table(sweep: dict) -> list[str]:
    """The whole graph as one kernel (`one-kernel`) against `fixed`'s three, per Case."""
    lines = [
        "## One kernel for the whole graph", "",
        "`one-kernel`: `FuseAroundReduction` after FuseOps, the kernel scheduled by "
        "`WindowReduction`; its kernel against Optuna's best schedule of the same kernel "
        "(`optuna-one-kernel`), and the graph against `fixed` end to end, by GPU time with "
        "calls queued, and captured whole into a CUDA graph where the run has PyTorch and a GPU.",
        "",
        "| case | rule | launch | kernel us: rule | optuna | gap | e2e us: fixed | one-kernel "
        "| one-kernel/fixed (95% CI) | GPU us queued: fixed | one-kernel | captured us: fixed "
        "| one-kernel | captured ratio (95% CI) | correct |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in sweep["cases"]:
        k, e, q = c["kernel_us"], c["end_to_end_us"], c["queued_gpu_us"]
        launch = " x ".join(str(v) for v in c["one_kernel_launch"].values() if v) or "–"
        gap = "–" if c["one_kernel_gap"] is None else f"{c['one_kernel_gap']:+.1%}"
        lines.append(
            f"| {c['case']} | {', '.join(sorted(set(c['one_kernel_rule'].values())))} "
            f"| {launch} | {_us(k['one-kernel'])} | {_us(k['optuna-one-kernel'])} | {gap} "
            f"| {_us(e['fixed'])} | {_us(e['one-kernel'])} "
            f"| {_ratio(c['one_kernel_over_fixed'])} | {_us(q['fixed'])} "
            f"| {_us(q['one-kernel'])} | {_us(e['fixed+capture'])} "
            f"| {_us(e['one-kernel+capture'])} | {_ratio(c['captured_one_kernel_over_fixed'])} "
            f"| {'yes' if c['one_kernel_correct'] else 'NO'} |")
    slower, beyond = sweep["one_kernel_slower_than_fixed"], sweep["one_kernel_beyond_goal"]
    return lines + [
        "", f"Cases where `one-kernel` is slower than `fixed` end to end (interval above 1): "
        f"{', '.join(slower) if slower else 'none'}.",
        f"Cases where the `one-kernel` kernel is more than {GOAL_GAP:.0%} slower than Optuna's "
        f"best of the same kernel: {', '.join(beyond) if beyond else 'none'}.", ""]


def _ratio(r: dict) -> str:
    if r.get("low") is None:  # one trial of one block: no interval
        return f"{r['ratio']:.3f}" if r else "–"
    return f"{r['ratio']:.3f} ({r['low']:.3f}–{r['high']:.3f})"


def _rules(assigned: dict) -> str:
    return ", ".join(f"`{kernel}`: {rule}" for kernel, rule in assigned.items())
