"""The gap by kernel class in a model report: TVM's kernels alone (launches x time) per list and
tuned, and each arm's kernels in its CUPTI profile, summed by class: matmul, convolution, window
reduction, other reduction, elementwise. Alone, inputs stay warm in L2: the headline compares
profile with profile.

TVM's kernels are classed by the analysis (name, fused operators, rule, window), PyTorch's by kernel
name (cuBLAS, cuDNN, Triton, ATen). Matching is by class, not kernel by kernel, since Inductor and
TVM fuse differently. A name no class claims is elementwise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pool_fusion_tuning.baselines.kernel_names import function_of
from pool_fusion_tuning.baselines.peers import PEERS, inductor_peer
from pool_fusion_tuning.runfolder.model_records import ModelReport

from .escape import code, md
from .model_names import arm_of
from .model_tables import duration

CLASSES = ("matmul", "convolution", "window reduction", "other reduction", "elementwise")
# PyTorch's kernel names -> class, first match wins (lower case). Depthwise convolutions and pools
# first; then Inductor's generated kernels by their prefix (poi: pointwise, per/red: reductions),
# as the rest of the name lists the operators fused in (triton_poi_fused_addmm_gelu is a bias and
# GELU after cuBLAS's GEMM); convolutions before matmuls (cuDNN's implicit GEMMs say "gemm").
# cuDNN's depthwise kernel is conv2d_c1_k1_* (one input and one output channel a group); its
# layout conversions run inside its convolution calls, cuBLAS's epilogue and scaling kernels
# inside its GEMMs, so each counts with the call that launches it.
_TORCH = (
    ("window reduction", ("depthwise", "dwconv", "pool", "conv2d_c1_k1")),
    ("elementwise", ("triton_poi",)),
    ("other reduction", ("triton_per", "triton_red")),
    ("convolution", ("conv", "fprop", "winograd", "implicit_convolve", "nhwctonchw", "nchwtonhwc")),
    ("matmul", ("gemm", "gemv", "cutlass", "matmul", "triton_tem", "_mm_", "addmm", "cublas")),
    ("other reduction", ("reduce", "softmax", "norm", "mean")),
)
_FAST_MATMUL_RULES = ("Matmul", "GEMV")
# The classes whose reduction is a multiply-add: 2 x elements reduced x outputs floating-point
# operations a launch.
ARITHMETIC = ("matmul", "convolution")


def tvm_class(kernel: dict) -> str:
    """The class of a TVM kernel of the analysis: a convolution Matmul does not take is depthwise
    or grouped, which a reduction rule takes."""
    name = kernel["name"]
    if "matmul" in name or "dense" in name:
        return "matmul"
    if "conv" in name:
        matmul = kernel["rules"].get("default") in _FAST_MATMUL_RULES
        return "convolution" if matmul else "window reduction"
    if kernel.get("pattern") or "pool" in name:
        return "window reduction"
    return "other reduction" if kernel.get("window") is not None else "elementwise"


def torch_class(name: str) -> str:
    lowered = name.lower()
    for found, marks in _TORCH:
        if any(mark in lowered for mark in marks):
            return found
    return "elementwise"


def class_rows(report: ModelReport) -> list[dict]:
    """Per class, ms per call: each TVM column's kernels alone (None where one lacks a time), each
    profiled TVM arm's kernels (`profiled_ms`, by column) and each profiled peer's."""
    lists = tvm_columns(report)
    base = report.get("tuned", {}).get("base")
    found = report.get("profiled", {}).items()
    profiled = {arm: p["kernels_us"] for arm, p in found if p.get("kernels_us")}
    peers = [p for p in report["peers"] if p in profiled]
    ours = [c for c in lists if arm_of(c) in profiled]
    by_name = {k["name"]: tvm_class(k) for k in report["kernels"]}
    classed = functools.partial(_profiled_tvm_class, by_name=by_name)
    rows = []
    for name in CLASSES:
        kernels = [k for k in report["kernels"] if by_name[k["name"]] == name]
        tvm = {rules: kernels_ms(kernels, rules, base) for rules in lists}
        torch = {peer: _profiled_ms(profiled[peer], name, torch_class) for peer in peers}
        in_network = {c: _profiled_ms(profiled[arm_of(c)], name, classed) for c in ours}
        if kernels or any(torch.values()) or any(in_network.values()):
            row = {"class": name, "kernels": len(kernels), "tvm_ms": tvm, "torch_ms": torch}
            row["profiled_ms"] = in_network
            work = [gflop(k) for k in kernels]
            if name in ARITHMETIC and None not in work:  # every kernel's work known
                row["gflop"] = sum(k["calls"] * w for k, w in zip(kernels, work))
            rows.append(row)
    return rows


def _profiled_ms(kernels_us: dict, name: str, classed: Callable[[str], str]) -> float:
    return sum(us for kernel, us in kernels_us.items() if classed(kernel) == name) / 1e3


def _profiled_tvm_class(kernel: str, by_name: dict) -> str:
    """A profiled TVM kernel (`<function>_kernel[_N]`) in its function's class."""
    function = function_of(kernel)
    return by_name.get(function) or tvm_class({"name": function, "rules": {}})


def tvm_columns(report: ModelReport) -> list[str]:
    """The TVM columns of a report's kernel tables: each rule list, then "tuned" where a kernel
    was tuned."""
    lists = [*report["settings"]["rule_lists"]]
    tuned = any(k["kernel_us"].get("tuned") for k in report["kernels"])
    return lists + ["tuned"] if tuned else lists


def gflop(kernel: dict) -> float | None:
    """A multiply-add reduction's work in one launch, GFLOP; None where unknown."""
    if kernel.get("window") is None or kernel.get("outputs") is None:
        return None
    return 2 * kernel["window"] * kernel["outputs"] / 1e9


def kernel_us(kernel: dict, rules: str, base: str | None = None) -> float | None:
    """A kernel's time under `rules`; under "tuned", its tuned time where tvm-tuned takes it,
    else its time under the tuned build's `base` list."""
    if rules == "tuned":
        return kernel["kernel_us"].get("tuned") or kernel["kernel_us"].get(base or "")
    return kernel["kernel_us"].get(rules)


def kernels_ms(kernels: list[dict], rules: str, base: str | None = None) -> float | None:
    """Sum of launches x kernel time under `rules`, in ms; None if a kernel lacks a time."""
    times = [kernel_us(k, rules, base) for k in kernels]
    if None in times:
        return None
    return sum(k["calls"] * t for k, t in zip(kernels, times)) / 1e3


def worst_class(rows: list[dict], peer: str, column: str = "default") -> dict | None:
    """The class where TVM's `column` (a list, or "tuned") loses most time to `peer`, where it
    loses any."""
    gaps = [
        (tvm_ms(row, column) - row["torch_ms"][peer], row)
        for row in rows
        if tvm_ms(row, column) is not None and peer in row["torch_ms"]
    ]
    gaps = [(gap, row) for gap, row in gaps if gap > 0]
    return max(gaps, key=lambda pair: pair[0])[1] if gaps else None


def tvm_ms(row: dict, column: str) -> float | None:
    """A class's TVM time under `column`: in its arm's profile where profiled, else alone."""
    found = row["profiled_ms"].get(column)
    return found if found is not None else row["tvm_ms"].get(column)


def _peer(rows: list[dict]) -> str | None:
    """The peer the headline holds TVM against: torch.compile where profiled, else the first
    profiled."""
    peers = {peer for row in rows for peer in row["torch_ms"]}
    order = [inductor_peer(), *PEERS]
    return next((p for p in order if p in peers), None)


def class_text(report: ModelReport) -> str:
    """The headline's sentence: the class where the default list loses most to PyTorch, and
    where tuned kernels are in, the class where the tuned build does."""
    rows = class_rows(report)
    peer = _peer(rows)
    worst = worst_class(rows, peer) if peer is not None else None
    if peer is None or worst is None:
        return ""
    basis = (
        "each arm's kernels in its CUPTI profile"
        if "default" in worst["profiled_ms"]
        else f"launches x time alone, beside {code(peer)}'s kernels in its CUPTI profile"
    )
    text = (
        f"By kernel class ({basis}), TVM's default list loses most in {md(worst['class'])}: "
        f"{_against(worst, 'default', peer)}"
    )
    tuned = worst_class(rows, peer, "tuned") if "tuned" in rows[0]["tvm_ms"] else None
    if tuned is not None:
        text += f"; tuned, in {md(tuned['class'])}: {_against(tuned, 'tuned', peer)}"
    return text + "."


def _against(row: dict, column: str, peer: str) -> str:
    return f"{duration(tvm_ms(row, column))} against {duration(row['torch_ms'][peer])}"


def class_section(report: ModelReport) -> list[str]:
    """## The gap by kernel class: a row per class, a column per TVM list and PyTorch peer."""
    rows = class_rows(report)
    if not any(row["torch_ms"] for row in rows):
        return []
    lists = list(rows[0]["tvm_ms"])
    ours = list(rows[0]["profiled_ms"])
    peers = list(dict.fromkeys(peer for row in rows for peer in row["torch_ms"]))
    arms = [arm_of(c) for c in ours] + peers
    head = ["class", "TVM kernels", *(f"`{c}`" for c in lists + arms)]
    lines = [
        "",
        "## The gap by kernel class",
        "",
        "Per call, ms: under each list (`default`, ...) each TVM kernel's time alone (inputs warm "
        "in L2) times its launches; under each arm (`tvm-*`, PyTorch's) its kernels of the class "
        "in the arm's CUPTI profile, which compare like with like (PyTorch's classed by kernel "
        "name, by class, not kernel by kernel, as Inductor fuses across TVM's kernels).",
        "",
        "| " + " | ".join(head) + " |",
        "|---|" + "---:|" * (len(head) - 1),
    ]
    for row in rows:
        cells = [*(row["tvm_ms"][r] for r in lists), *_arm_ms(row, ours, peers).values()]
        shown = [duration(c) if c is not None else "—" for c in cells]
        lines.append(f"| {row['class']} | {row['kernels']} | " + " | ".join(shown) + " |")
    rates = [_rates(row, lists, ours, peers) for row in rows if row.get("gflop")]
    if rates:
        lines += [
            "",
            "TFLOP/s (2 x elements reduced x outputs of each TVM launch; PyTorch's kernels of "
            "the class taken to do the same work): " + "; ".join(rates) + ".",
        ]
    return lines


def _arm_ms(row: dict, ours: list[str], peers: list[str]) -> dict:
    """arm -> ms of the class in the arm's profile: TVM's arms, then the peers."""
    found = {arm_of(c): row["profiled_ms"].get(c) for c in ours}
    return found | {p: row["torch_ms"].get(p) for p in peers}


def _rates(row: dict, lists: list[str], ours: list[str], peers: list[str]) -> str:
    times = {**{r: row["tvm_ms"][r] for r in lists}, **_arm_ms(row, ours, peers)}
    shown = [f"`{name}` {rate(row['gflop'] / ms)}" for name, ms in times.items() if ms]
    return f"{row['class']} ({_digits(row['gflop'], 2)} GFLOP a call) " + ", ".join(shown)


def rate(tflops: float) -> str:
    """TFLOP/s to one decimal, a small network's rate (under 0.1) to two significant digits."""
    return _digits(tflops, 1)


def _digits(value: float, decimals: int) -> str:
    """`decimals` decimals, or two significant digits where those would show zero."""
    return f"{value:.{decimals}f}" if value >= 10**-decimals else f"{value:.2g}"
