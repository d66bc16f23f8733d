"""report.md's kernels: each arm's CUDA kernels (ptxas), and the fused pool kernel's launch, time
and bandwidth."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.report_records import Report

from .cells import MISSING, table, us
from .escape import code


def kernels_table(report: Report) -> list[str]:
    """Each arm's CUDA kernels as ptxas reports them (launch, registers, shared and local
    memory); a line saying there are none on llvm."""
    rows = []
    for name, arm in report["arms"].items():
        for kernel in arm["kernels"]:
            rows.append(
                [
                    code(name),
                    code(kernel["name"][:48]),
                    kernel["grid"],
                    kernel["block"],
                    kernel["registers"],
                    kernel["shared_bytes"],
                    kernel["local_bytes"],
                ]
            )
    if not rows:
        return ["No CUDA kernels in this run (target llvm)."]
    return table(["arm", "kernel", "grid", "block", "registers", "shared B", "local B"], rows)


def fused_kernel_table(report: Report) -> list[str]:
    """The fused pool kernel in each arm: its launch, resources, time per launch and the
    bandwidth of the bytes it must move (and those of one kernel for the whole graph, where an arm
    is one); nothing for a run without it."""
    rows = [
        [
            code(r["arm"]),
            r["grid"],
            r["block"],
            r["registers"],
            r["shared_bytes"],
            r["local_bytes"],
            us(r["kernel_us"]),
            MISSING if r["gbps"] is None else f"{r['gbps']:.0f}",
        ]
        for r in report.get("fused_kernel", [])
    ]
    if not rows:
        return []
    whole = report.get("whole_kernel_bytes")
    moved = (
        (
            f"; {whole / 1e6:.2f} MB for one kernel of the whole graph (the graph's input "
            "read once, each output written once)"
        )
        if whole and any(r.get("whole_graph") for r in report.get("fused_kernel", []))
        else ""
    )
    return [
        "",
        "## The fused pool kernel in each arm",
        "",
        f"Kernel-level time is the GPU time per launch measured by the tuners' timer; GB/s "
        f"counts the {report['fused_kernel_bytes'] / 1e6:.2f} MB it must move (input read "
        f"once, output written once){moved}.",
        "",
    ] + table(
        ["arm", "grid", "block", "registers", "shared B", "local B", "kernel us", "GB/s"], rows
    )
