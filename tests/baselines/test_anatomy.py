"""Kernel anatomy without a GPU: launch configuration and ptxas resources of the CUDA kernels."""

import pytest
import tvm
from conftest import DEFAULT
from tvm import relax, s_tir

from pool_fusion_tuning.baselines.anatomy import kernel_table, launch_configs, parse_ptxas
from pool_fusion_tuning.baselines.arms import DEFAULT_ARMS
from pool_fusion_tuning.baselines.pipeline import lower, make_target
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.template import PoolSchedule
from pool_fusion_tuning.tuning.candidates.kernel import fused_function, kernel_module

# The default case's fused kernel computes 144 x 32 x 32 outputs.
OUTPUTS = 144 * 32 * 32


def _fused_kernel(arm):
    target = make_target("cuda")
    mod = lower(DEFAULT, arm, target)
    rows = kernel_table(mod, relax.build(mod, target=target, relax_pipeline=None))
    return {row["name"]: row for row in rows}["fused_pool2d_add2_kernel"]


@pytest.mark.nvcc
def test_on_launches_one_block_per_output_with_shared_memory():
    kernel = _fused_kernel(DEFAULT_ARMS[2])
    assert (kernel["grid"], kernel["block"]) == (147456, 256)
    assert kernel["shared_bytes"] > 0
    assert kernel["local_bytes"] == 0


@pytest.mark.nvcc
def test_serial_launches_one_thread_per_output_without_shared_memory():
    kernel = _fused_kernel(DEFAULT_ARMS[3])
    assert (kernel["grid"], kernel["block"]) == (OUTPUTS // 256, 256)
    assert kernel["shared_bytes"] == 0
    assert kernel["registers"] > 0


def test_launch_is_read_from_thread_loops_and_from_lowered_thread_extents():
    target = make_target("cuda")
    _, func = fused_function(DEFAULT, TargetSpec("cuda"))
    tile = PoolSchedule(threads=128, outputs_w=2, outputs_h=2)
    scheduled = kernel_module(tile.apply(func, target))
    expected = {"main_kernel": {"grid": OUTPUTS // (128 * 2 * 2), "block": 128}}
    assert launch_configs(scheduled) == expected
    # Lowered, the thread loops become `thread_extent` attributes (T.launch_thread).
    lowered = tvm.ir.transform.Sequential(
        [
            s_tir.transform.LowerInitBlock(),
            s_tir.transform.ConvertBlocksToOpaque(),
            s_tir.transform.LowerOpaqueBlock(),
        ]
    )(scheduled)
    assert "T.thread_binding" not in lowered.script()
    assert launch_configs(lowered) == expected


def test_functions_without_thread_bindings_launch_nothing():
    _, func = fused_function(DEFAULT, TargetSpec("cuda"))
    assert launch_configs(kernel_module(func)) == {}


def test_parse_ptxas_reads_every_field():
    report = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 17 registers, used 1 barriers, 132 bytes smem, 372 bytes cmem[0]"""
    assert parse_ptxas(report) == {
        "k": {"local_bytes": 8, "spill_bytes": 8, "registers": 17, "shared_bytes": 132}
    }
