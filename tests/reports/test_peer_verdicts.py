"""Each model report holds each TVM arm against each peer in every shared figure: the H200's
NASNet run rendered as recorded, profiled, and without the TVM arms' queued GPU time."""

import json
import shutil
import tarfile

import pytest
from conftest import ROOT, python_without_tvm, read_json

from pool_fusion_tuning.reports.model_peers import peer_rows

STORED = ROOT / "reports" / "h200" / "models" / "models.tar.xz"
TVM, PEERS = ("tvm-default", "tvm-fixed"), ("torch-eager", "torch-compile")
NOT_CAPTURED = "RuntimeError: operation not permitted when stream is capturing"
# PyTorch kernels of a profile (us per call), as CUPTI names them, and their class.
TORCH_KERNELS = {
    "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw": (900.0, "convolution"),
    "conv_depthwise2d_forward_kernel": (100.0, "window reduction"),
    "max_pool_forward_nchw": (30.0, "window reduction"),
    "ampere_sgemm_128x64_nn": (20.0, "matmul"),
    "triton_red_fused_mean_1": (5.0, "other reduction"),
    "triton_poi_fused_add_relu_0": (50.0, "elementwise"),
    "void at::native::vectorized_elementwise_kernel<4>": (7.0, "elementwise"),
    # convnext_tiny's on the H100; batch norm stays elementwise
    "conv2d_c1_k1_nhwc": (11.0, "window reduction"),
    "void cudnn::engines_precompiled::nhwcToNchwKernel<float, float, float, true, false>": (
        3.0,
        "convolution",
    ),
    "void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, true, 1>": (
        2.0,
        "matmul",
    ),
    "void scal_kernel<float, float, 1, true, 6, 5, 5, 3>(cublasTransposeParams<float>)": (
        1.0,
        "matmul",
    ),
    "void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>": (4.0, "elementwise"),
    # Inductor's kernels by their kind, whatever operators their names list
    "triton_poi_fused_addmm_gelu_view_16": (6.0, "elementwise"),
    "triton_per_fused_convolution_native_layer_norm_permute_15": (2.5, "other reduction"),
    "triton_poi_fused__native_batch_norm_legit_no_training_convolution_relu_35": (
        1.5,
        "elementwise",
    ),
    "triton_poi_fused_max_pool2d_with_indices_3": (0.5, "window reduction"),
}


# The three runs, rendered in one process without TVM.
RUNS = ("recorded", "profiled", "no-gpu-time")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """run name -> (report.md, report.json, the profile recorded in its trial)."""
    folders, profiles = {}, {}
    root = tmp_path_factory.mktemp("stored")
    with tarfile.open(STORED) as stored:
        members = [m for m in stored.getmembers() if "/nasnetalarge" in m.name]
        stored.extractall(root, members=members)
    for name in RUNS:
        folders[name] = tmp_path_factory.mktemp(name) / "nasnetalarge"
        shutil.copytree(root / "models" / "nasnetalarge", folders[name])
        if name != "recorded":
            profiles[name] = _profile(folders[name], drop_tvm_gpu_time=name == "no-gpu-time")
    python_without_tvm(
        "from pathlib import Path\n"
        "from pool_fusion_tuning.reports.model_report import render_model_run\n"
        "from pool_fusion_tuning.runfolder.store import Run\n"
        f"for path in {[str(f) for f in folders.values()]!r}:\n"
        "    render_model_run(Run.open(Path(path)))"
    )
    return {
        name: (
            (run / "report.md").read_text(),
            read_json(run / "report.json"),
            profiles.get(name),
        )
        for name, run in folders.items()
    }


def _profile(run, drop_tvm_gpu_time):
    """Each arm's kernel sum (its call-path median) and captured call (0.9 of it)."""
    path = run / "trials" / "trial_0.json"
    record = read_json(path)
    profiled = {}
    for arm in (*TVM, *PEERS):
        blocks = record["block_samples_us"]["call_path"][arm]
        median = sorted(s for block in blocks for s in block)[len(blocks) // 2]
        kernels = {name: us for name, (us, _) in TORCH_KERNELS.items()} if arm in PEERS else {}
        profiled[arm] = {"kernel_sum_us": median, "kernels_per_call": 3.0, "kernels_us": kernels}
        profiled[arm]["captured_us"] = 0.9 * median
    del profiled["torch-compile"]["captured_us"]
    profiled["torch-compile"]["captured_reason"] = NOT_CAPTURED
    record["profiled"] = profiled
    if drop_tvm_gpu_time:
        for arm in TVM:
            record["block_samples_us"]["gpu_queued"][arm] = [[] for _ in range(8)]
    path.write_text(json.dumps(record))
    return profiled


def test_a_run_without_a_profile_compares_by_the_call_path(rendered):
    report, data, _ = rendered["recorded"]
    assert "nothing to compare" not in report and "no GPU time to compare" not in report
    rows = {(r["arm"], r["peer"]): list(r["figures"]) for r in peer_rows(data)}
    assert rows == {(a, p): ["call_path"] for a in TVM for p in PEERS}
    for peer in PEERS:
        assert f"Against `{peer}` (TVM / PyTorch): `tvm-default` end to end" in report
    assert "this run has no profile" in report and "## Against PyTorch" in report


def test_the_kernel_sum_and_the_captured_call_compare_each_tvm_arm_with_each_peer(rendered):
    report, _, profiled = rendered["profiled"]
    for arm in TVM:
        for peer in PEERS:
            ratio = profiled[arm]["kernel_sum_us"] / profiled[peer]["kernel_sum_us"]
            line = f"| `{arm}` | `{peer}` | kernel sum (CUPTI profile) |"
            (row,) = [r for r in report.splitlines() if r.startswith(line)]
            assert row.endswith(f"| {ratio:.3f} |")
        captured = f"| `{arm}` | `torch-eager` | captured into a CUDA graph |"
        assert any(r.startswith(captured) for r in report.splitlines())
        assert f"| `{arm}` | `torch-compile` | captured into a CUDA graph |" not in report
    assert f"- No captured call for `torch-compile`: {NOT_CAPTURED}" in report
    assert "end to end, own call path |" not in report.split("## Against PyTorch")[1].split("##")[0]
    assert "the kernel sum and the captured call compare instead" in report


def test_a_list_without_queued_gpu_time_is_held_against_the_default_by_its_kernel_sum(rendered):
    report, data, profiled = rendered["no-gpu-time"]
    gain_us = profiled["tvm-default"]["kernel_sum_us"] - profiled["tvm-fixed"]["kernel_sum_us"]
    assert data["recovered"]["fixed"]["measured_kernel_sum_ms"] == pytest.approx(gain_us / 1e3)
    assert "in the kernel sum of the whole call (CUPTI)" in report
    assert "no GPU time to compare" not in report


def test_kernels_are_classed_on_both_sides():
    from pool_fusion_tuning.reports.kernel_classes import torch_class, tvm_class

    assert {name: torch_class(name) for name in TORCH_KERNELS} == {
        name: found for name, (_, found) in TORCH_KERNELS.items()
    }
    rules = {"default": "Matmul"}
    assert tvm_class({"name": "fused_conv2d2_add4", "rules": rules}) == "convolution"
    assert tvm_class({"name": "fused_matmul1_add2", "rules": rules}) == "matmul"
    depthwise = {"name": "fused_conv2d1_add", "rules": {"default": "GeneralReduction"}}
    assert tvm_class(depthwise) == "window reduction"
    assert tvm_class({"name": "fused_max_pool2d_add", "rules": {}, "window": 4}) == (
        "window reduction"
    )
    assert tvm_class({"name": "layer_norm", "rules": {}, "window": 96}) == "other reduction"
    assert tvm_class({"name": "transpose", "rules": {}, "window": None}) == "elementwise"


def test_the_gap_by_class_sums_both_sides_and_names_the_worst(rendered):
    from pool_fusion_tuning.reports.kernel_classes import class_rows, tvm_class

    report, data, _ = rendered["profiled"]
    rows = {row["class"]: row for row in class_rows(data)}
    for name, row in rows.items():
        theirs = sum(us for us, found in TORCH_KERNELS.values() if found == name) / 1e3
        assert row["torch_ms"] == pytest.approx({peer: theirs for peer in PEERS})
        ours = [k for k in data["kernels"] if tvm_class(k) == name]
        total = sum(k["calls"] * k["kernel_us"]["default"] for k in ours) / 1e3
        assert row["kernels"] == len(ours) and row["tvm_ms"]["default"] == pytest.approx(total)
    assert sum(row["kernels"] for row in rows.values()) == len(data["kernels"])
    assert "## The gap by kernel class" in report
    gaps = {n: r["tvm_ms"]["default"] - r["torch_ms"]["torch-compile"] for n, r in rows.items()}
    worst = max(gaps, key=lambda n: gaps[n])
    assert f"TVM's default list loses most in {worst}:" in report


def test_the_headline_names_the_class_the_tuned_build_loses_most_in_too():
    """The rule wins the window reductions back; tuned, the matmuls are what is left."""
    from pool_fusion_tuning.reports.kernel_classes import class_section, class_text

    def kernel(name, calls, rule, **us):
        return {"name": name, "calls": calls, "rules": {"default": rule}, "window": 49,
                "pattern": False, "kernel_us": us}  # fmt: skip

    report = {
        "settings": {"rule_lists": ["default", "fixed"]},
        "kernels": [
            kernel("fused_matmul_add", 2, "Matmul", default=100.0, fixed=100.0, tuned=80.0),
            kernel("fused_conv2d_add", 1, "GeneralReduction", default=300.0, fixed=10.0),
        ],
        "tuned": {"base": "fixed"},
        "peers": ["torch-compile"],
        "profiled": {"torch-compile": {"kernels_us": {"sgemm_128x64": 50.0, "depthwise_k": 5.0}}},
    }
    said = class_text(report)
    assert "TVM's default list loses most in window reduction: 300.0 us against 5.0 us" in said
    assert said.endswith("; tuned, in matmul: 160.0 us against 50.0 us.")
    # The multiply-add classes' rates: the matmul's 2 x 1200 x 50000 FLOP, twice a call.
    for kernel in report["kernels"]:
        kernel |= {"window": 1200, "outputs": 50000}
    (rates,) = [line for line in class_section(report) if line.startswith("TFLOP/s")]
    said = (
        "matmul (0.24 GFLOP a call) `default` 1.2, `fixed` 1.2, `tuned` 1.5, `torch-compile` 4.8."
    )
    assert rates.endswith(said) and "convolution" not in rates  # the depthwise one is none
    # A small network's rates keep two significant digits, not 0.
    report["kernels"][0] |= {"window": 27, "outputs": 2000}
    (rates,) = [line for line in class_section(report) if line.startswith("TFLOP/s")]
    assert rates.endswith(
        "matmul (0.00022 GFLOP a call) `default` 0.0011, `fixed` 0.0011, "
        "`tuned` 0.0013, `torch-compile` 0.0043."
    )
    del report["kernels"][0]["kernel_us"]["tuned"], report["tuned"]
    assert class_text(report).endswith("against 5.0 us.")  # without tuned kernels, no tuned part


def test_profiled_tvm_arms_are_classed_and_the_headline_compares_profile_with_profile():
    """Kernels alone run with warm inputs: where TVM's arms were profiled, their kernels there
    (named `<function>_kernel` as on the H100) are what the headline holds against PyTorch."""
    from pool_fusion_tuning.reports.kernel_classes import class_rows, class_section, class_text

    def kernel(name, rules, window, **us):
        return {"name": name, "calls": 9, "rules": rules, "window": window, "kernel_us": us}

    dw = {"default": "GeneralReduction", "fixed": "WindowReduction"}
    mm, conv = "fused_matmul5_add10", "fused_conv2d7_add11"
    report = {
        "settings": {"rule_lists": ["default", "fixed"]},
        "kernels": [
            kernel(mm, {"default": "Matmul"}, 1536, default=66.5, fixed=66.5),
            kernel(conv, dw, 49, default=190.0, fixed=8.0),
        ],
        "peers": ["torch-compile"],
        "profiled": {  # us per call, by the names CUPTI gives
            "tvm-default": {
                "kernels_us": {
                    f"{mm}_kernel": 819.4,
                    f"{conv}_kernel": 1700.0,
                    "transpose_kernel": 11.6,
                }
            },
            "tvm-fixed": {"kernels_us": {f"{mm}_kernel": 819.4, f"{conv}_kernel": 80.0}},
            "torch-compile": {
                "kernels_us": {
                    "sm80_xmma_gemm_f32f32_tn_n_cublas": 295.7,
                    "conv2d_c1_k1_nhwc": 100.0,
                }
            },
        },
    }
    rows = {row["class"]: row for row in class_rows(report)}
    assert rows["matmul"]["tvm_ms"]["default"] == pytest.approx(0.5985)  # 9 x 66.5 us alone
    assert rows["matmul"]["profiled_ms"] == pytest.approx({"default": 0.8194, "fixed": 0.8194})
    assert rows["elementwise"]["profiled_ms"]["default"] == pytest.approx(0.0116)  # by name
    said = class_text(report)
    assert said.startswith("By kernel class (each arm's kernels in its CUPTI profile)")
    assert "loses most in window reduction: 1.70 ms against 100.0 us" in said
    header = [line for line in class_section(report) if line.startswith("| class")]
    lists, arms = "`default` | `fixed`", "`tvm-default` | `tvm-fixed` | `torch-compile`"
    assert header == [f"| class | TVM kernels | {lists} | {arms} |"]
