"""The row rule (row_reduction.py: a warp or fewer threads per short row) and its benchmark
(row_bench.py): every schedule right on llvm against NumPy, what the rule declines, its launch
and registers on a CUDA target built without running, the tables and their decision."""

import json
import shutil
import tarfile
from pathlib import Path

import pytest
import tvm
from tvm.script import tirx as T

import baselines.row_bench
from baselines.anatomy import cuda_source, ptxas_resources
from baselines.pipeline import make_target
from baselines.row_bench import SCHEDULES, main, measure, schedule
from baselines.row_kernels import KERNELS, LAYER_NORM, SOFTMAX, RowKernel, reference
from baselines.row_reduction import RowReduction, choose_lanes, with_row_reduction
from baselines.row_report import decision, markdown
from baselines.rules import RULE_LISTS, first_rule, fixed_rules
from baselines.torch_peer import torch_available
from baselines.window_kernels import KERNELS as WINDOW_KERNELS
from baselines.window_kernels import fused, reduction_function

CUDA = make_target("cuda")
needs_torch = pytest.mark.skipif(not torch_available(), reason="PyTorch's peer: pip install torch")
SMALL = [
    RowKernel("softmax-49", "a window's softmax", SOFTMAX, (2, 3, 49)),
    RowKernel("softmax-unit-axis", "MaxViT's 5-D softmax", SOFTMAX, (1, 2, 3, 5, 49)),
    RowKernel("softmax-50", "ViT-B/32's", SOFTMAX, (3, 50)),
    RowKernel("softmax-7", "fewer elements than lanes", SOFTMAX, (9, 7)),
    RowKernel("layer_norm-64", "MaxViT's", LAYER_NORM, (1, 5, 64)),
    RowKernel("layer_norm-33", "odd rows", LAYER_NORM, (7, 33)),
]


@pytest.mark.parametrize("kernel", SMALL, ids=[k.name for k in SMALL])
def test_every_schedule_is_right_on_llvm(kernel):
    row = measure(kernel, "llvm", [])
    for name in SCHEDULES:
        entry = row["schedules"][name]
        assert entry["correct"] and entry["error"] < 1e-5, (name, entry)
        assert entry["timer"] == "time_evaluator" and entry["median_us"] > 0
    assert row["schedules"]["default"]["rule"] == "GeneralReduction"
    assert {row["schedules"][n]["rule"] for n in ("warp", "lanes16", "lanes8")} == {"RowReduction"}


def test_a_result_off_the_reference_is_wrong_and_not_timed(monkeypatch):
    """The gate: against a reference shifted by 1e-3, every schedule is wrong, none timed."""
    monkeypatch.setattr(
        baselines.row_bench, "reference", lambda kernel, arrays: reference(kernel, arrays) + 1e-3
    )
    row = measure(SMALL[0], "llvm", [])
    for entry in row["schedules"].values():
        assert not entry["correct"] and entry["error"] > 1e-4 and "median_us" not in entry


@needs_torch
def test_pytorch_is_checked_and_timed_beside():
    row = measure(SMALL[4], "llvm", ["torch-eager"])
    peer = row["schedules"]["torch-eager"]
    assert peer["correct"] and peer["timer"] == "perf_counter" and peer["median_us"] > 0


def test_a_warp_per_row_with_several_rows_per_block_on_cuda():
    _, entries = schedule(KERNELS["swin_t-s1-softmax"], "cuda")  # 9408 rows of 49
    assert (entries["default"]["grid"], entries["default"]["block"]) == (9408, 256)
    assert (entries["warp"]["grid"], entries["warp"]["block"]) == (1176, 256)  # 8 rows a block
    assert (entries["lanes8"]["grid"], entries["lanes8"]["block"]) == (294, 256)  # 32 rows


def test_few_rows_still_fill_the_h200():
    """ViT-B/32's 600 rows: blocks halved until each of 132 multiprocessors gets one."""
    _, entries = schedule(KERNELS["vit_b_32-softmax"], "cuda")
    assert (entries["warp"]["grid"], entries["warp"]["block"]) == (150, 128)


@pytest.mark.parametrize("length, lanes", [(49, 32), (64, 32), (33, 32), (32, 16), (16, 8), (5, 4)])
def test_lanes_follow_the_row(length, lanes):
    assert choose_lanes(length, CUDA) == lanes


def _function(kernel: RowKernel):
    return kernel.function()


def test_the_rule_declines_what_is_not_a_short_row():
    long = RowKernel("softmax-65", "", SOFTMAX, (4, 65))
    wide = RowKernel("layer_norm-96", "Swin-T's", LAYER_NORM, (4, 96))
    for kernel in (long, wide):
        assert first_rule(_function(kernel), CUDA, [RowReduction()]) == (None, None)
    window = WINDOW_KERNELS["issue-maxpool-add"]  # a window, the window rule's
    mod = fused(window)
    assert first_rule(mod[reduction_function(mod)], CUDA, [RowReduction()]) == (None, None)
    assert first_rule(_middle_axis_sum(), CUDA, [RowReduction()]) == (None, None)
    symbolic = _symbolic_rows()
    assert first_rule(symbolic, CUDA, [RowReduction()]) == (None, None)


def _middle_axis_sum():
    @T.prim_func(private=True, s_tir=True)
    def func(x: T.Buffer((4, 8, 6), "float32"), y: T.Buffer((4, 8, 6), "float32")):
        s = T.sblock_alloc_buffer((4, 6))
        for i, k, j in T.grid(4, 8, 6):
            with T.sblock("s"):
                vi, vk, vj = T.axis.remap("SRS", [i, k, j])
                with T.init():
                    s[vi, vj] = T.float32(0)
                s[vi, vj] = s[vi, vj] + x[vi, vk, vj]
        for i, k, j in T.grid(4, 8, 6):
            with T.sblock("y"):
                vi, vk, vj = T.axis.remap("SSS", [i, k, j])
                y[vi, vk, vj] = x[vi, vk, vj] / s[vi, vj]

    return func


def _symbolic_rows():
    @T.prim_func(private=True, s_tir=True)
    def func(a: T.handle, b: T.handle):
        n = T.int64()
        x = T.match_buffer(a, (n, 49), "float32")
        y = T.match_buffer(b, (n, 49), "float32")
        s = T.sblock_alloc_buffer((n,))
        for i, k in T.grid(n, 49):
            with T.sblock("s"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    s[vi] = T.float32(0)
                s[vi] = s[vi] + x[vi, vk]
        for i, k in T.grid(n, 49):
            with T.sblock("y"):
                vi, vk = T.axis.remap("SS", [i, k])
                y[vi, vk] = x[vi, vk] / s[vi]

    return func


def test_the_seam_puts_the_rule_before_general_reduction_and_no_list_has_it_yet():
    rules = with_row_reduction(fixed_rules(CUDA))
    names = [type(rule).__name__ for rule in rules]
    assert names.index("RowReduction") + 1 == names.index("GeneralReduction")
    assert first_rule(KERNELS["swin_t-s4-softmax"].function(), CUDA, rules)[0] == "RowReduction"
    long = RowKernel("softmax-1000", "a classifier's", SOFTMAX, (2, 1000))
    assert first_rule(long.function(), CUDA, rules)[0] == "GeneralReduction"
    mod = fused(WINDOW_KERNELS["convnext-dw7-bias"])
    assert first_rule(mod[reduction_function(mod)], CUDA, rules)[0] == "WindowReduction"
    for make in RULE_LISTS.values():
        assert "RowReduction" not in [type(rule).__name__ for rule in make(CUDA)]


@pytest.mark.parametrize("name", ["swin_t-s1-softmax", "maxvit_t-s1-layer_norm"])
def test_with_registers_each_lane_loads_its_elements_once(name):
    """A warp per row of 49 or 64: two loads of the input per lane, against six (max, sum,
    output: softmax) or eight (sum, variance twice, output: layer norm) without."""
    mod, _ = schedule(KERNELS[name], "cuda")
    loads = {}
    for function in ("warp", "warp_regs"):
        source = cuda_source(tvm.compile(tvm.IRModule({function: mod[function]}), target=CUDA))
        body = source[source.index(f"{function}_kernel(float") :]
        loads[function] = body[body.index("{") :].count("x_ptr[")
    assert loads["warp_regs"] == 2 and loads["warp"] in (6, 8)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_row_kernels_keep_everything_in_registers():
    """At real sizes, the CUDA source through ptxas: no shared or local memory, no spills."""
    functions = {}
    for name in ("maxvit_t-s3-softmax", "maxvit_t-s1-layer_norm"):
        mod, _ = schedule(KERNELS[name], "cuda")
        for lanes in ("warp", "warp_regs", "lanes8"):
            symbol = f"{name}_{lanes}".replace("-", "_")
            functions[symbol] = mod[lanes].with_attr("global_symbol", symbol)
    resources = ptxas_resources(cuda_source(tvm.compile(tvm.IRModule(functions), target=CUDA)))
    assert len(resources) == len(functions)
    for name, found in resources.items():
        assert (found["shared_bytes"], found["local_bytes"], found["spill_bytes"]) == (0, 0, 0)
        assert found["registers"] <= 64, name


@needs_torch
def test_the_benchmark_writes_and_renders_its_tables_on_llvm(tmp_path):
    names = "vit_b_32-softmax,maxvit_t-s4-softmax"
    assert (
        main([str(tmp_path), "--target", "llvm", "--kernels", names, "--peers", "torch-eager"]) == 0
    )
    result = json.loads((tmp_path / "row_bench.json").read_text())
    assert [row["kernel"] for row in result["kernels"]] == names.split(",")
    assert list(result["kernels"][0]["schedules"]) == [*SCHEDULES, "torch-eager"]
    text = (tmp_path / "row_bench.md").read_text()
    assert "| vit_b_32-softmax | 600 x 50 |" in text
    assert "| vit_b_32-softmax | GeneralReduction 600x256 | RowReduction 150x128 |" in text
    assert "None from this run: it ran on the CPU" in text and "| WRONG" not in text
    (tmp_path / "row_bench.md").unlink()
    assert main([str(tmp_path), "--render"]) == 0
    assert (tmp_path / "row_bench.md").read_text() == text
    committed = tmp_path / "committed"  # as a run is committed: the JSON kept in an archive
    committed.mkdir()
    with tarfile.open(committed / "row_bench.tar.xz", "w:xz") as archive:
        archive.add(tmp_path / "row_bench.json", arcname="rows/row_bench.json")
    assert main([str(committed), "--render"]) == 0
    assert (committed / "row_bench.md").read_text() == text


STORED = Path(__file__).resolve().parents[2] / "reports" / "h200" / "rows"


@pytest.mark.skipif(not STORED.exists(), reason="no H200 run of row_bench committed yet")
def test_the_committed_h200_run_renders_again(tmp_path):
    shutil.copy(STORED / "row_bench.tar.xz", tmp_path)
    assert main([str(tmp_path), "--render"]) == 0
    assert (tmp_path / "row_bench.md").read_text() == (STORED / "row_bench.md").read_text()


def _result(warp: tuple, default: tuple = (9.0, 10.0, 11.0)) -> dict:
    def entry(q1, median, q3):
        return {"rule": "R", "grid": 1, "block": 32, "correct": True, "error": 0.0,
                "q1_us": q1, "median_us": median, "q3_us": q3}  # fmt: skip

    schedules = {"default": entry(*default), "warp": entry(*warp)}
    schedules |= {"warp-regs": entry(*warp), "lanes16": entry(*warp), "lanes8": entry(*warp)}
    schedules |= {"torch-eager": entry(2.0, 2.5, 3.0)}
    row = {"kernel": "k", "where": "w", "rows": 4, "length": 49, "schedules": schedules}
    environment = {"run_on": "cuda", "date": "d", "tvm": "t", "gpu": "NVIDIA H200"}
    return {"environment": environment, "tolerance": 1e-4, "kernels": [row]}


def test_the_decision_needs_the_warp_ahead_everywhere():
    taken = decision(_result((4.0, 5.0, 6.0)))
    assert taken.startswith("**taken**") and "x0.50 to x0.50 of the default's" in taken
    assert "x2.00 to x2.00 of PyTorch eager's" in taken
    overlapping = decision(_result((8.0, 9.0, 9.5)))
    assert overlapping.startswith("**not taken**") and "(k)" in overlapping
    wrong = _result((4.0, 5.0, 6.0))
    for name in ("warp", "warp-regs"):
        wrong["kernels"][0]["schedules"][name]["correct"] = False
    assert decision(wrong).startswith("**not taken**")
    wrong["kernels"][0]["schedules"]["warp-regs"]["correct"] = True  # one of the two suffices
    assert decision(wrong).startswith("**taken**: warp, row in registers beats")
    assert "WRONG" in markdown(wrong) and "x0.50" in markdown(_result((4.0, 5.0, 6.0)))


def test_bad_input_is_one_line_and_exit_two(tmp_path, capsys):
    bad = [
        [str(tmp_path), "--kernels", "nope"],
        [str(tmp_path), "--peers", "torch-nope"],
        [str(tmp_path / "absent"), "--render"],
    ]
    if not tvm.cuda(0).exist:
        bad.append([str(tmp_path), "--target", "cuda"])
    for argv in bad:
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert len(capsys.readouterr().err.strip().splitlines()[-1]) > 0
