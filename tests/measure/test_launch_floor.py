"""`python3 -m pool_fusion_tuning.tuning.launch_floor`: what a call of one launch costs the GPU.
The arithmetic and the kernel on the CPU; the measurement where there is a CUDA GPU."""

import pytest
import tvm
from conftest import read_json

from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.tuning.launch_floor import gaps, main, one_thread, render


def test_gaps_are_the_idle_time_between_one_kernel_s_end_and_the_next_one_s_start():
    found = gaps([(0.0, 1.0), (2.0, 1.0), (4.5, 1.5), (6.5, 1.0)])
    assert found == {"kernel_us": 1.0, "gap_us": 1.0}  # idle: 1.0, 1.5, 0.5


def test_the_one_thread_kernel_builds_for_cuda_and_stores_one_value():
    library = tvm.compile(one_thread(), target=make_target("cuda"))
    source = library.mod.imports[0].inspect_source()
    assert "a_ptr[0] = 0x1p+0f" in source and "threadIdx" not in source.split("{", 1)[1]


def test_without_a_gpu_it_says_so_in_one_line(tmp_path, capsys):
    if tvm.cuda(0).exist:
        pytest.skip("a CUDA GPU is visible")
    assert main([str(tmp_path / "out")]) == 2
    assert (
        capsys.readouterr().err
        == "pool_fusion_tuning.tuning.launch_floor needs a CUDA GPU and PyTorch with CUDA\n"
    )
    assert not (tmp_path / "out").exists()
    assert main([]) == 2


def test_an_out_that_is_a_file_is_one_line(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("mine")
    assert main([str(taken)]) == 2
    assert capsys.readouterr().err == f"{taken} exists and is not a folder: give another OUT\n"
    assert taken.read_text() == "mine"


def test_the_table_gives_each_call_s_figures():
    row = {"queued_gpu_us": 2.5, "kernels_per_call": 1.0, "kernel_us": 1.408, "gap_us": 1.024}
    assert "| x | 2.50 | 1 | 1.408 | 1.024 |" in render({"x": row})


@pytest.mark.gpu
@pytest.mark.torch
def test_on_a_gpu_one_kernel_costs_its_launch_and_its_work(tmp_path):
    assert main([str(tmp_path)]) == 0

    found = read_json(tmp_path / "launch_floor.json")
    floor, ours = found["a one-thread kernel"], found["`one-kernel`, the issue's Case"]
    assert floor["kernels_per_call"] == ours["kernels_per_call"] == 1
    assert floor["queued_gpu_us"] < ours["queued_gpu_us"]
    assert floor["kernel_us"] < ours["kernel_us"] < ours["queued_gpu_us"]
