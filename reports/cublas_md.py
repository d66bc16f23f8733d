"""## Each matmul beside cuBLAS: each TVM matmul kernel's times beside PyTorch eager's GEMM of the
same shape alone (cublas_gemms.json); no section where the run has no such record."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.model_records import CublasGemm, ModelReport

from .cells import MISSING, tenths
from .escape import code, md
from .kernel_classes import kernel_us, rate, tvm_columns

CUBLAS_FILE = "cublas_gemms.json"


def gemm_label(shape: CublasGemm) -> str:
    """M x N x K, B x before it where batched, "+ bias" where a bias add is fused."""
    dims = [shape["m"], shape["n"], shape["k"]]
    if shape["batch"] is not None:
        dims.insert(0, shape["batch"])
    return " x ".join(str(d) for d in dims) + (" + bias" if shape["bias"] else "")


def gemm_tflop(shape: CublasGemm) -> float:
    """2 x B x M x N x K floating-point operations, in TFLOP (the bias add left out)."""
    return 2 * (shape["batch"] or 1) * shape["m"] * shape["n"] * shape["k"] / 1e12


def cublas_rows(report: ModelReport) -> list[dict]:
    """A row per matmul kernel whose shape was read, costliest first: shape, calls, time under
    each column and cuBLAS's (None where missing)."""
    found = report.get("cublas")
    if not found:
        return []
    columns = tvm_columns(report)
    base = report.get("tuned", {}).get("base")
    shapes = {name: shape for shape in found["shapes"] for name in shape["kernels"]}
    rows = []
    for kernel in report["kernels"]:
        shape = shapes.get(kernel["name"])
        if shape is None:
            continue
        measured: dict = dict(shape.get("measured") or {})
        rows.append(
            {
                "kernel": kernel["name"],
                "shape": shape,
                "calls": kernel["calls"],
                "tvm_us": {column: kernel_us(kernel, column, base) for column in columns},
                "cublas_us": measured.get("kernel_us") if measured.get("status") == "ok" else None,
            }
        )
    last = columns[-1]
    return sorted(rows, key=lambda row: -row["calls"] * (row["tvm_us"][last] or 0))


def cublas_section(report: ModelReport) -> list[str]:
    """The section: a row per matmul kernel, what is measured, the shapes not read."""
    found = report.get("cublas")
    if not found or not (found["shapes"] or found["unread"]):
        return []
    columns = tvm_columns(report)
    last = columns[-1]  # tuned where tuned, else the last list
    head = [
        "kernel",
        "GEMM (B x) M x N x K",
        "calls",
        *(f"`{c}` us" for c in columns),
        "cuBLAS us",
        f"`{last}` / cuBLAS",
        f"TFLOP/s `{last}`",
        "TFLOP/s cuBLAS",
    ]
    lines = [
        "",
        "## Each matmul beside cuBLAS",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---|" + "---:|" * (len(head) - 2),
    ]
    for row in cublas_rows(report):
        ours, theirs = row["tvm_us"][last], row["cublas_us"]
        tflop = gemm_tflop(row["shape"])
        cells = [
            code(row["kernel"]),
            md(gemm_label(row["shape"])),
            str(row["calls"]),
            *(tenths(row["tvm_us"][c]) for c in columns),
            tenths(theirs),
            f"{ours / theirs:.2f}" if ours and theirs else MISSING,
            rate(tflop / ours * 1e6) if ours else MISSING,
            rate(tflop / theirs * 1e6) if theirs else MISSING,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    samples = found["protocol"].get("repeat")
    lines += [
        "",
        "cuBLAS: PyTorch eager's GEMM of the same shape alone (`F.linear`; where batched "
        "`torch.bmm`, or `torch.baddbmm` with a bias), fp32 with TF32 off; epilogue: bias add "
        "only, where the kernel fuses one (the TVM kernel's other fused operators are not in "
        "it). Timed as the TVM kernels are: "
        f"the same GPU timer, the median of {samples} samples; TFLOP/s is 2 x B x M x N x K "
        "over the time.",
    ]
    failed = [
        f"{code(name)} ({md(shape['measured'].get('detail'))})"
        for shape in found["shapes"]
        if shape.get("measured", {}).get("status", "ok") != "ok"
        for name in shape["kernels"]
    ]
    if failed:
        lines += ["", f"Not timed in PyTorch: {'; '.join(failed)}."]
    if found["unread"]:
        said = "; ".join(f"{code(name)} ({md(why)})" for name, why in found["unread"].items())
        lines += ["", f"No GEMM shape read: {said}."]
    return lines
