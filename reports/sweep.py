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
END_TO_END = ("partial", "on", "fixed", "serial", "optuna")
KERNELS = {"default": "default_kernel_us", "fixed": "fixed_kernel_us",
           "serial": "serial_kernel_us", "optuna": "best_kernel_us"}


def render_sweep(out: Path, names: list[str]) -> dict:
    target = make_target("cuda")  # which rule takes a kernel is a CUDA question, GPU or not
    stored = read_json(out / "sweep.json")
    cases = [_case_row(name, read_json(out / name / "report.json"), target) for name in names]
    sweep = {**stored, "device": cases[0]["device"] if cases else None, "cases": cases,
             "fixed_slower_than_on": [c["case"] for c in cases if c["fixed_slower_than_on"]],
             "fixed_beyond_goal": [c["case"] for c in cases if c["fixed_gap"] is not None
                                   and c["fixed_gap"] > GOAL_GAP],
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
    arms, optuna = report["arms"], report["tuners"].get("optuna", {})
    kernels = {key: optuna.get(field) for key, field in KERNELS.items()}
    fixed_vs_on = report["ratios"].get("fixed/on", {})
    launch = next((row for row in report.get("fused_kernel", []) if row["arm"] == "fixed"), {})
    fixed_arm = arms.get("fixed", {})
    return {
        "case": name, "shape": report["case"], "device": report["device"],
        "tuner_failures": report.get("tuner_failures", {}),
        "rule": rule_assignment(_fused_only(Case.from_dict(report["case"]), target), target,
                                fixed_rules(target)),
        "fixed_launch": {k: launch.get(k) for k in ("grid", "block")},
        "fixed_correct": fixed_arm.get("correct"), "fixed_max_abs_err": fixed_arm.get("max_abs_err"),
        "kernel_us": kernels,
        "fixed_gap": (kernels["fixed"] / kernels["optuna"] - 1
                      if kernels["fixed"] and kernels["optuna"] else None),
        "end_to_end_us": {arm: arms.get(arm, {}).get("median_us") for arm in END_TO_END},
        "fixed_over_on": fixed_vs_on,
        # Slower only when the interval says so (both ends above 1).
        "fixed_slower_than_on": (fixed_vs_on.get("low") or 0) > 1,
    }


def _fused_only(case: Case, target) -> tvm.IRModule:
    gv, func = fused_pool_function(fused_stage(case, ARMS["on"], target))
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
        ratio = (f"{r['ratio']:.3f} ({r['low']:.3f}–{r['high']:.3f})" if r.get("low") is not None
                 else f"{r['ratio']:.3f}" if r else "–")
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
              "## Graphs with large reductions", "",
              "Which rule schedules each kernel (reduce, then add 1), under the default list and "
              "with `WindowReduction` added; `unchanged` means the two scheduled modules print the "
              "same.", "",
              "| graph | default rules | fixed rules | unchanged |", "|---|---|---|---|"]
    for name, row in sweep["large_reductions"].items():
        lines.append(f"| {name} | {_rules(row['default'])} | {_rules(row['fixed'])} "
                     f"| {'yes' if row['unchanged'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def _rules(assigned: dict) -> str:
    return ", ".join(f"`{kernel}`: {rule}" for kernel, rule in assigned.items())
