"""sweep.md: the per-Case tables of a sweep (`sweep.render_sweep` gathers their rows)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pool_fusion_tuning.baselines.peers import inductor_peer
from pool_fusion_tuning.runfolder.records import Sweep

from .cells import MISSING, table, us
from .escape import code, md
from .sources_md import sweep_sources_table
from .sweep_arms import sweep_tuners, tuned_against

# Within this of the tuned optimum, the candidate rule is "close enough" (the project's goal).
GOAL_GAP = 0.10


def sweep_markdown(sweep: Sweep) -> str:
    """sweep.md: per Case, the rule chosen, the kernel times against Optuna's best and the
    end-to-end arms, the findings, then the one-kernel and inductor tables, every source side by
    side per Case, and the large reductions."""
    settings = sweep["settings"]
    lines = [
        "# Sweep: the candidate `WindowReduction` rule (`fixed`) across Cases",
        "",
        f"On {md(sweep['device'])}, {code(sweep['command'])}: per Case, the end-to-end arms "
        f"(trials {settings['protocol']['trials']}, blocks {settings['protocol']['blocks']}) and "
        f"the fused kernel alone (time per launch), with Optuna's best of "
        f"{settings['budget']} trials as the tuned optimum. Each Case's own report is in its "
        "folder.",
        "",
    ]
    tuned = tuned_against(sweep_tuners(sweep), "fixed")
    rows = []
    for c in sweep["cases"]:
        k, e = c["kernel_us"], c["end_to_end_us"]
        rows.append(
            [
                c["case"],
                _rule(c["rule"]),
                _launch(c["fixed_launch"]),
                *(us(k[arm]) for arm in ("default", "fixed", "serial", *tuned)),
                _percent(c["fixed_gap"]),
                *(us(e[arm]) for arm in ("partial", "on", "fixed", "serial", *tuned)),
                _ratio(c["fixed_over_on"]),
                _yes(c["fixed_correct"]),
            ]
        )
    lines += table(
        [
            "case",
            "rule for the fused kernel",
            "fixed launch",
            "kernel us: default",
            "fixed",
            "serial",
            *tuned,
            f"fixed gap to {_optimum(tuned)}",
            "e2e us: partial",
            "on",
            "fixed",
            "serial",
            *tuned,
            "fixed/on (95% CI)",
            "fixed correct",
        ],
        rows,
    )
    lines += _findings(sweep, "fixed", "on", "fixed", "Optuna's best")
    lines += [
        f"Case {md(name)}: {md('; '.join(errors.values()))}; no tuned optimum.\n"
        for name, errors in sweep["tuner_failures"].items()
    ]
    lines += _one_kernel_table(sweep) + _inductor_table(sweep)
    side = _sources_section(sweep)
    lines += [""] + side if side and lines[-1] else side
    lines += _reductions_section(sweep.get("large_reductions"))
    return "\n".join(lines) + "\n"


def _one_kernel_table(sweep: Sweep) -> list[str]:
    """The whole graph as one kernel (`one-kernel`) against `fixed`'s three, per Case."""
    lines = [
        "## One kernel for the whole graph",
        "",
        "`one-kernel`: `FuseAroundReduction` after FuseOps, the kernel scheduled by "
        "`WindowReduction`; its kernel against Optuna's best schedule of the same kernel "
        "(`optuna-one-kernel`), and the graph against `fixed` end to end, by GPU time with "
        "calls queued, and captured whole into a CUDA graph where the run has PyTorch and a GPU.",
        "",
    ]
    tuned = tuned_against(sweep_tuners(sweep), "one-kernel")
    rows = []
    for c in sweep["cases"]:
        k, e, q = c["kernel_us"], c["end_to_end_us"], c["queued_gpu_us"]
        rows.append(
            [
                c["case"],
                _rule(c["one_kernel_rule"]),
                _launch(c["one_kernel_launch"]),
                *(us(k[arm]) for arm in ("one-kernel", *tuned)),
                _percent(c["one_kernel_gap"]),
                us(e["fixed"]),
                us(e["one-kernel"]),
                _ratio(c["one_kernel_over_fixed"]),
                us(q["fixed"]),
                us(q["one-kernel"]),
                us(e["fixed+capture"]),
                us(e["one-kernel+capture"]),
                _ratio(c["captured_one_kernel_over_fixed"]),
                _yes(c["one_kernel_correct"]),
            ]
        )
    lines += table(
        [
            "case",
            "rule",
            "launch",
            "kernel us: rule",
            *(arm.removesuffix("-one-kernel") for arm in tuned),  # the table is one-kernel's
            "gap",
            "e2e us: fixed",
            "one-kernel",
            "one-kernel/fixed (95% CI)",
            "GPU us queued: fixed",
            "one-kernel",
            "captured us: fixed",
            "one-kernel",
            "captured ratio (95% CI)",
            "correct",
        ],
        rows,
    )
    return lines + _findings(
        sweep, "one_kernel", "fixed", "one-kernel", "Optuna's best of the same kernel"
    )


def _optimum(tuned: list[str]) -> str:
    """What a gap is measured to: the one tuner's find, or the best of several."""
    return tuned[0] if len(tuned) == 1 else "the best tuned"


# The peer whose kernel `one-kernel` is held against (`sweep_report.py` records its figures by
# name).
INDUCTOR = inductor_peer()


def _inductor_table(sweep: Sweep) -> list[str]:
    """`one-kernel` against inductor's graph, where the sweep ran inductor (a GPU with PyTorch)."""
    cases = [c for c in sweep["cases"] if "inductor" in c]
    if not cases:
        return []
    rows = [
        [
            c["case"],
            _launch(c["one_kernel_launch"]),
            us(c["inductor"]["gpu_us"]["one-kernel"]),
            us(c["inductor"]["gpu_us"][INDUCTOR]),
            _ratio(c["inductor"]["gpu_ratio"]),
            us(c["inductor"]["captured_us"]["one-kernel"]),
            us(c["inductor"]["captured_us"][INDUCTOR]),
            _ratio(c["inductor"]["captured_ratio"] or {}),
        ]
        for c in cases
    ]
    slower = sweep.get("one_kernel_slower_than_inductor", [])
    verdict = (
        f"`one-kernel` is slower than inductor by GPU time in: {', '.join(slower)}."
        if slower
        else "`one-kernel` is slower than inductor by GPU time in no Case (no interval above 1)."
    )
    return [
        "",
        "## One kernel against inductor",
        "",
        f"`{INDUCTOR}` (inductor, default mode, fp32) fuses these graphs too; both by GPU time "
        "with calls queued (the whole call: for a graph of one kernel, that kernel and its "
        "launch), and both captured whole into a CUDA graph, end to end.",
        "",
        *table(
            [
                "case",
                "one-kernel launch",
                "GPU us: one-kernel",
                INDUCTOR,
                "ratio (95% CI)",
                "captured us: one-kernel",
                INDUCTOR,
                "captured ratio (95% CI)",
            ],
            rows,
        ),
        "",
        verdict,
    ]


def _sources_section(sweep: Sweep) -> list[str]:
    """Every source's best kernel side by side, a row per Case (sweeps rendered before the
    Cases' rows held them: none)."""
    cases = [c for c in sweep["cases"] if "sources" in c]
    return [*sweep_sources_table(cases), ""] if cases else []


def _findings(
    sweep: Mapping[str, Any], key: str, against: str, arm: str, optimum: str
) -> list[str]:
    """The Cases where `arm` is slower than `against` end to end, and where its kernel is
    beyond the goal."""
    slower, beyond = sweep[f"{key}_slower_than_{against}"], sweep[f"{key}_beyond_goal"]
    return [
        "",
        f"Cases where {code(arm)} is slower than {code(against)} end to end (interval above 1): "
        f"{', '.join(slower) if slower else 'none'}.",
        f"Cases where the {code(arm)} kernel is more than {GOAL_GAP:.0%} slower than {optimum}: "
        f"{', '.join(beyond) if beyond else 'none'}.",
        "",
    ]


def _reductions_section(rows: dict | None) -> list[str]:
    lines = [
        "## Graphs with large reductions",
        "",
        "Which rule schedules each kernel (reduce, then add 1), under the default list and "
        "with `WindowReduction` added; `unchanged` means the two scheduled modules print "
        "the same.",
        "",
    ]
    if rows is None:
        return lines + ["Not recorded: this sweep was measured before sweeps recorded it."]
    return lines + table(
        ["graph", "default rules", "fixed rules", "unchanged"],
        [
            [name, _rules(row["default"]), _rules(row["fixed"]), _yes(row["unchanged"])]
            for name, row in rows.items()
        ],
    )


def _rule(assigned: dict | None) -> str:
    return "not recorded" if assigned is None else ", ".join(sorted(set(assigned.values())))


def _launch(launch: dict) -> str:
    return " x ".join(str(v) for v in launch.values() if v) or MISSING


def _percent(gap: float | None) -> str:
    return MISSING if gap is None else f"{gap:+.1%}"


def _yes(value: object) -> str:
    return "yes" if value else "NO"


def _ratio(r: dict) -> str:
    if r.get("low") is None:  # one trial of one block: no interval
        return f"{r['ratio']:.3f}" if r else MISSING
    return f"{r['ratio']:.3f} ({r['low']:.3f}–{r['high']:.3f})"


def _rules(assigned: dict) -> str:
    return ", ".join(f"{code(kernel)}: {rule}" for kernel, rule in assigned.items())
