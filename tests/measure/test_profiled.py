"""Each arm's kernel sum and captured call (tuning/measure/profiled.py): the per-call sums from a
profile's kernels, a trial record's shape with them, and on a GPU both figures of a TVM arm and
a PyTorch peer of the same small graph."""

from pathlib import Path

import numpy as np
import pytest
import tvm

from pool_fusion_tuning.runfolder.checker import file_problem
from pool_fusion_tuning.tuning.measure.profiled import kernel_sums, profile_arms
from pool_fusion_tuning.tuning.measure.protocol import Protocol

TRIAL = Path("trials/trial_0.json")


def test_the_kernels_of_several_calls_are_summed_per_call():
    kernels = [("gemm", 30.0), ("relu", 2.0), ("gemm", 34.0), ("relu", 4.0)]
    found = kernel_sums(kernels, 2)
    assert found["kernel_sum_us"] == pytest.approx(35.0)
    assert found["kernels_per_call"] == 2
    assert found["kernels_us"] == pytest.approx({"gemm": 32.0, "relu": 3.0})


def test_a_trial_record_keeps_them_and_a_damaged_one_is_named():
    record = {"trial": 0, "checks": {"tvm-fixed": {"correct": True}}}
    good = {"kernel_sum_us": 35.0, "kernels_per_call": 2.0, "captured_reason": "no capture"}
    assert file_problem(TRIAL, {**record, "profiled": {"tvm-fixed": good}}) is None
    bad = {**good, "kernel_sum_us": "35 us"}
    assert "kernel_sum_us" in file_problem(TRIAL, {**record, "profiled": {"tvm-fixed": bad}})


@pytest.mark.gpu
@pytest.mark.torch
def test_a_tvm_arm_and_a_peer_are_profiled_and_captured_on_the_gpu():
    import torch
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    from pool_fusion_tuning.baselines.models.build import build_model
    from pool_fusion_tuning.baselines.pipeline import make_target
    from pool_fusion_tuning.baselines.rules import RULE_LISTS
    from pool_fusion_tuning.baselines.torch_peer import PeerArm
    from pool_fusion_tuning.tuning.measure.vm_arms import VMArm

    x = np.random.default_rng(0).standard_normal((64, 256)).astype("float32")
    module = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU()).eval()
    exported = torch.export.export(module, (torch.from_numpy(x),))
    target, device = make_target("cuda"), tvm.cuda(0)
    executable = build_model(from_exported_program(exported), target, RULE_LISTS["fixed"](target))
    on_gpu = module.cuda()  # after the import, which reads the weights on the host
    built = {
        "tvm-fixed": VMArm(relax.VirtualMachine(executable, device), device),
        "torch-eager": PeerArm("torch-eager", lambda v: (on_gpu(v),), "cuda"),
    }
    found = profile_arms(built, x, Protocol(repeat=3, min_repeat_ms=5))
    for name, figures in found.items():
        assert figures["kernel_sum_us"] > 0 and figures["kernels_per_call"] >= 1, name
        assert figures.get("captured_us", 0) > 0, figures.get("captured_reason")
