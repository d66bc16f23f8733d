"""The +capture arms: the whole VM call captured into a CUDA graph and replayed. Needs PyTorch
and a GPU: it runs on the GPU machine and is skipped elsewhere; the CLI's refusals run on CPU."""

import importlib.util

import numpy as np
import pytest

from baselines.arms import ARMS
from tuning.cli import UsageError, check_arms_fit_target
from tuning.harness import Protocol, check

from conftest import tune

HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_a_capture_arm_needs_a_cuda_target():
    with pytest.raises(UsageError, match="fixed\\+capture captures CUDA launches"):
        check_arms_fit_target(["on", "fixed+capture"], "llvm")
    check_arms_fit_target(["on", "fixed+capture"], "cuda")


@pytest.mark.skipif(HAS_TORCH, reason="the refusal is for machines without PyTorch")
def test_a_capture_arm_without_torch_is_one_line_and_exit_2():
    done = tune("--target", "llvm", "--budget", "0", "--arms", "on,fixed+capture")
    assert done.returncode == 2 and "needs PyTorch" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch")
@pytest.mark.parametrize("name", ["fixed+capture", "serial+capture", "one-kernel+capture"])
def test_a_replayed_call_matches_the_reference_for_every_input(case, name, tmp_path):
    import torch
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from tvm import relax

    from baselines.pipeline import lower, make_target
    from tuning.harness import CapturedVMArm, device_for

    target = make_target("cuda")
    executable = relax.build(lower(case, ARMS[name], target), target=target,
                             relax_pipeline=None, tir_pipeline="default")
    device = device_for(target)
    arm = CapturedVMArm(relax.VirtualMachine(executable, device), device)
    # Three inputs through one graph: each is copied into the captured input buffer.
    assert check(case, arm, 3) == {"correct": True, "max_abs_err": 0.0}
    samples = arm.timer(np.zeros(case.input_shape, "float32"),
                        Protocol(number=10, repeat=3, min_repeat_ms=1))()
    assert len(samples) == 3 and all(s > 0 for s in samples)
