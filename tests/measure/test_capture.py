"""The +capture arms: the whole VM call captured into a CUDA graph and replayed. Needs PyTorch
and a GPU: it runs on the GPU machine and is skipped elsewhere; the CLI's refusals run on CPU."""

import numpy as np
import pytest
from conftest import tune

from pool_fusion_tuning.baselines import torch_peer
from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.peers import PEERS, captured_peers
from pool_fusion_tuning.baselines.reference import random_input, reference
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.cli.choices import check_arms_fit_target
from pool_fusion_tuning.tuning.measure.harness import check
from pool_fusion_tuning.tuning.measure.protocol import Protocol
from pool_fusion_tuning.tuning.measure.vm_arms import outputs_of


def test_a_capture_arm_needs_a_cuda_target():
    with pytest.raises(UsageError, match="fixed\\+capture captures CUDA launches"):
        check_arms_fit_target(["on", "fixed+capture"], "llvm")
    check_arms_fit_target(["on", "fixed+capture"], "cuda")
    with pytest.raises(UsageError, match="torch-compile\\+capture captures CUDA launches"):
        check_arms_fit_target(["on", "torch-compile+capture"], "llvm")


def test_pytorch_gets_the_capture_treatment_beside_a_tvm_capture_arm(monkeypatch):
    monkeypatch.setattr(torch_peer, "torch_available", lambda: True)
    names, missing = torch_peer.capture_counterparts(["on", "fixed+capture"], "cuda")
    assert names == ["on", "fixed+capture", *captured_peers()] and missing == {}
    assert torch_peer.capture_counterparts(["on", "fixed"], "cuda") == (["on", "fixed"], {})
    names, missing = torch_peer.capture_counterparts(["on"], "llvm")
    assert names == ["on"] and set(missing) == set(captured_peers())
    assert "needs a CUDA GPU" in missing["torch-compile+capture"]


def test_without_pytorch_every_peer_is_reported_not_measured(monkeypatch):
    monkeypatch.setattr(torch_peer, "torch_available", lambda: False)
    names, missing = torch_peer.capture_counterparts(["on"], "cuda")
    assert names == ["on"] and set(missing) == set(PEERS)
    assert all("PyTorch is not installed" in reason for reason in missing.values())


@pytest.mark.skipif(
    torch_peer.torch_available(), reason="the refusal is for machines without PyTorch"
)
def test_a_capture_arm_without_torch_is_one_line_and_exit_2():
    done = tune("--target", "llvm", "--budget", "0", "--arms", "on,fixed+capture")
    assert done.returncode == 2 and "needs PyTorch" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.torch
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fixed+capture", "serial+capture", "one-kernel+capture"])
def test_a_replayed_call_matches_the_reference_for_every_input(case, name, tmp_path):
    import tvm
    from tvm import relax

    from pool_fusion_tuning.baselines.pipeline import lower, make_target
    from pool_fusion_tuning.tuning.measure.vm_arms import CapturedVMArm, device_for

    target = make_target("cuda")
    executable = relax.build(
        lower(case, ARMS[name], target), target=target, relax_pipeline=None, tir_pipeline="default"
    )
    device = device_for(target)
    arm = CapturedVMArm(relax.VirtualMachine(executable, device), device)
    # Three inputs through one graph: each is copied into the captured input buffer.
    assert check(case, arm, 3) == {"correct": True, "max_abs_err": 0.0}
    # As a Python user calls it: a new input already on the device, copied in, replayed.
    x = random_input(case, 7)
    got = outputs_of(arm.python_call(tvm.runtime.tensor(x, device=device)))
    arm.sync()
    for g, w in zip(got, reference(case, x)):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
    protocol = Protocol(number=10, repeat=3, min_repeat_ms=1)
    for timer in (arm.timer, arm.python_timer):
        samples = timer(np.zeros(case.input_shape, "float32"), protocol)()
        assert len(samples) == 3 and all(s > 0 for s in samples)


@pytest.mark.torch
@pytest.mark.gpu
def test_a_cuda_trial_keeps_three_figures_per_arm_in_balanced_blocks():
    from conftest import DEFAULT

    from pool_fusion_tuning.baselines.arms import DEFAULT_ARMS
    from pool_fusion_tuning.tuning.environment import gpu_arch
    from pool_fusion_tuning.tuning.measure.harness import TrialJob, run_trial

    arms = [DEFAULT_ARMS[2], ARMS["fixed"], ARMS["fixed+capture"]]
    protocol = Protocol(number=2, repeat=2, min_repeat_ms=1, warmup_s=0, blocks=None)
    target = TargetSpec("cuda", gpu_arch())
    record = run_trial(TrialJob(DEFAULT, arms, target, protocol, 1, peers=("torch-eager+capture",)))
    names = {"on", "fixed", "fixed+capture", "torch-eager+capture"}
    assert record["design"]["positions"] and record["design"]["carryover"]
    assert len(record["block_orders"]) == record["design"]["blocks"] == 8
    assert all(set(order) == names for order in record["block_orders"])
    samples = record["block_samples_us"]
    assert set(samples) == {"call_path", "python_call", "gpu_queued"}
    for figure in samples.values():
        assert set(figure) == names
        assert all(
            len(blocks) == 8 and all(len(b) == 2 for b in blocks) for blocks in figure.values()
        )
