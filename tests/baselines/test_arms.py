"""Every arm compiles the whole graph on llvm and matches the NumPy reference."""

import numpy as np
import pytest
import tvm
from conftest import DEFAULT, read_json
from tvm import relax

from pool_fusion_tuning.baselines.arms import DEFAULT_ARMS
from pool_fusion_tuning.baselines.pipeline import build, make_target
from pool_fusion_tuning.baselines.reference import random_input, reference
from pool_fusion_tuning.runfolder.store import folder_writer
from pool_fusion_tuning.tuning.measure.vm_arms import outputs_of


@pytest.mark.parametrize("arm", DEFAULT_ARMS, ids=lambda arm: arm.name)
def test_arm_matches_reference_on_llvm(case, arm, tmp_path):
    vm = relax.VirtualMachine(
        build(case, arm, make_target("llvm"), folder_writer(tmp_path)), tvm.cpu()
    )
    for seed in range(2):
        x = random_input(case, seed)
        got = outputs_of(vm["main"](tvm.runtime.tensor(x)))
        want = reference(case, x)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def test_ir_after_fusion_and_scheduling_is_saved(tmp_path):
    build(DEFAULT, DEFAULT_ARMS[2], make_target("cuda"), folder_writer(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "05_FuseOps.py",
        "06_FuseTIR.py",
        "07_ApplyDefaultSchedule.py",
    ]


def test_serial_replaces_only_the_fused_pool_function(tmp_path):
    build(DEFAULT, DEFAULT_ARMS[3], make_target("cuda"), folder_writer(tmp_path))
    record = read_json(tmp_path / "intervention.json")
    assert record["replaced_function"] == "fused_pool2d_add2"
    assert record["other_functions_unchanged"] is True
    assert set(record["unchanged_functions"]) >= {"add2", "main"}
    assert record["before_sha256"] != record["after_sha256"]


def test_off_runs_no_fusion(tmp_path):
    build(DEFAULT, DEFAULT_ARMS[0], make_target("llvm"), folder_writer(tmp_path))
    after = (tmp_path / "06_FuseTIR.py").read_text()
    assert "def pool2d(" in after and "fused_" not in after


def test_the_python_call_figure_calls_main_with_a_tensor_on_the_device(tmp_path):
    from pool_fusion_tuning.tuning.measure.protocol import Protocol
    from pool_fusion_tuning.tuning.measure.vm_arms import VMArm

    device = tvm.cpu()
    arm = VMArm(
        relax.VirtualMachine(
            build(DEFAULT, DEFAULT_ARMS[3], make_target("llvm"), folder_writer(tmp_path)), device
        ),
        device,
    )
    x = random_input(DEFAULT, 1)
    got = outputs_of(arm.python_call(tvm.runtime.tensor(x, device=device)))
    for g, w in zip(got, reference(DEFAULT, x)):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
    samples = arm.python_timer(x, Protocol(number=2, repeat=3, min_repeat_ms=1))()
    assert len(samples) == 3 and all(s > 0 for s in samples)
