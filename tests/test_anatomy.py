"""Kernel anatomy without a GPU: launch configuration and ptxas resources of the CUDA kernels."""

import shutil

import pytest
from tvm import relax

from baselines.anatomy import kernel_table, parse_ptxas
from baselines.arms import DEFAULT_ARMS
from baselines.pipeline import lower, make_target

from conftest import DEFAULT

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def _fused_kernel(arm):
    target = make_target("cuda")
    mod = lower(DEFAULT, arm, target)
    rows = kernel_table(mod, relax.build(mod, target=target, relax_pipeline=None))
    return {row["name"]: row for row in rows}["fused_pool2d_add2_kernel"]


def test_on_launches_one_block_per_output_with_shared_memory():
    kernel = _fused_kernel(DEFAULT_ARMS[2])
    assert (kernel["grid"], kernel["block"]) == (147456, 256)
    assert kernel["shared_bytes"] > 0
    assert kernel["local_bytes"] == 0


def test_serial_launches_one_thread_per_output_without_shared_memory():
    kernel = _fused_kernel(DEFAULT_ARMS[3])
    assert (kernel["grid"], kernel["block"]) == (144 * 32 * 32 // 256, 256)
    assert kernel["shared_bytes"] == 0
    assert kernel["registers"] > 0


def test_parse_ptxas_reads_every_field():
    report = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 17 registers, used 1 barriers, 132 bytes smem, 372 bytes cmem[0]"""
    assert parse_ptxas(report) == {"k": {"local_bytes": 8, "spill_bytes": 8, "registers": 17,
                                         "shared_bytes": 132}}
