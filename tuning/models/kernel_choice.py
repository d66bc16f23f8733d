"""Which kernels `--tune-top` takes (the costliest under the default list) and what each
computes, as the report names it."""

from __future__ import annotations

from pool_fusion_tuning.reports.kernel_classes import tvm_class
from pool_fusion_tuning.runfolder.model_records import Analysis, KernelTimes
from pool_fusion_tuning.runfolder.store import Run, read_record
from pool_fusion_tuning.tuning.candidates.outcome import Status

from .model_plan import ALL_MIN_SHARE, PATTERN_KERNELS, chosen_classes


def costliest(run: Run, count: int | None, kernels: str = PATTERN_KERNELS) -> list[dict]:
    """The analyses of the `count` kernels that `kernels` (a `--kernels` choice) takes with the
    largest launches x default time, costliest first; with `count` None, every such kernel that
    takes ALL_MIN_SHARE of the network's summed kernel time or more."""
    times = read_record(run.path / "kernel_times.json", KernelTimes)["kernels"]
    costs: list[tuple[float, str, dict]] = []
    for kernel in read_record(run.path / "analysis.json", Analysis)["kernels"]:
        default = times.get(kernel["name"], {}).get("default")
        kernel_us = default.get("kernel_us") if default and default["status"] == Status.OK else None
        if kernel_us is not None:
            costs.append((kernel["calls"] * kernel_us, kernel["name"], dict(kernel)))
    total = sum(cost for cost, *_ in costs)
    if count is None:
        costs = [c for c in costs if c[0] >= ALL_MIN_SHARE * total]
    costs = [c for c in costs if takes(kernels, c[2])]
    return [kernel for *_, kernel in sorted(costs, key=lambda c: c[:2], reverse=True)[:count]]


def takes(kernels: str, kernel: dict) -> bool:
    """Whether the `--kernels` choice `kernels` takes `kernel` (an analysis' kernel)."""
    classes = chosen_classes(kernels)
    return bool(kernel["pattern"]) if classes is None else tvm_class(kernel) in classes


def kernel_kind(kernel: dict) -> str:
    """What a kernel computes, as the report names it: its class in the report's gap by kernel
    class, and ", idle lanes" where it has the pattern."""
    kind = tvm_class(kernel)
    return f"{kind}, idle lanes" if kernel.get("pattern") else kind
