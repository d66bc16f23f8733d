"""row_reduction.py and row_bench: schedules right on llvm, declines, CUDA launches, tables."""

import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
import tvm
from conftest import read_json
from tvm.script import tirx as T

from pool_fusion_tuning.baselines.anatomy import cuda_source, launch_configs, ptxas_resources
from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.row_kernels import (
    KERNELS,
    LAYER_NORM,
    SOFTMAX,
    RowKernel,
    error,
    reference,
    with_symbol,
)
from pool_fusion_tuning.baselines.row_reduction import (
    RowReduction,
    choose_lanes,
    with_row_reduction,
)
from pool_fusion_tuning.baselines.row_report import decision, row_bench_markdown
from pool_fusion_tuning.baselines.rules import RULE_LISTS, first_rule, fixed_rules, rule_name
from pool_fusion_tuning.baselines.window_bench import without_bindings
from pool_fusion_tuning.baselines.window_kernels import KERNELS as WINDOW_KERNELS
from pool_fusion_tuning.baselines.window_kernels import fused, reduction_function
from pool_fusion_tuning.tuning import row_bench
from pool_fusion_tuning.tuning.row_bench import SCHEDULES, main, measure, schedule

CUDA = make_target("cuda")
SMALL = [  # a window's softmax, MaxViT's 5-D one, ViT's, rows shorter than a warp, layer norms
    RowKernel(f"{op}-{'x'.join(map(str, shape))}", "", op, shape)
    for op, shape in [(SOFTMAX, (2, 3, 49)), (SOFTMAX, (1, 2, 3, 5, 49)), (SOFTMAX, (3, 50)),
                      (SOFTMAX, (9, 7)), (LAYER_NORM, (1, 5, 64)), (LAYER_NORM, (7, 33))]
]  # fmt: skip


@pytest.mark.parametrize("kernel", SMALL, ids=[k.name for k in SMALL])
def test_every_schedule_is_right_on_llvm(kernel):
    row = measure(kernel, "llvm", [])
    for name in SCHEDULES:
        entry = row["schedules"][name]
        assert entry["correct"] and entry["error"] < 1e-5, (name, entry)
        assert entry["timer"] == "time_evaluator" and entry["median_us"] > 0
    assert row["schedules"]["default"]["rule"] == "GeneralReduction"
    assert {row["schedules"][n]["rule"] for n in SCHEDULES if n != "default"} == {"RowReduction"}


def test_a_result_off_the_reference_is_wrong_and_not_timed(monkeypatch):
    """The gate: against a reference shifted by 1e-3, every schedule is wrong, none timed."""
    monkeypatch.setattr(
        row_bench, "reference", lambda kernel, arrays: reference(kernel, arrays) + 1e-3
    )
    row = measure(SMALL[0], "llvm", [])
    for entry in row["schedules"].values():
        assert not entry["correct"] and entry["error"] > 1e-4 and "median_us" not in entry


@pytest.mark.torch
def test_pytorch_is_checked_and_timed_beside():
    row = measure(SMALL[4], "llvm", ["torch-eager"])
    peer = row["schedules"]["torch-eager"]
    assert peer["correct"] and peer["timer"] == "perf_counter" and peer["median_us"] > 0


def test_launches_on_cuda():
    """Swin-T's 9408 rows: 8 or 32 a block; ViT-B/32's 600: blocks halved to fill 132 SMs."""
    launch = {}
    for name in ("swin_t-s1-softmax", "vit_b_32-softmax"):
        _, entries = schedule(KERNELS[name], "cuda")
        launch[name] = {n: (e["grid"], e["block"]) for n, e in entries.items()}
    swin, vit = launch["swin_t-s1-softmax"], launch["vit_b_32-softmax"]
    assert (swin["default"], swin["warp"], swin["lanes8"]) == ((9408, 256), (1176, 256), (294, 256))
    assert vit["warp"] == vit["warp-regs"] == (150, 128)
    assert [choose_lanes(n, CUDA) for n in (49, 64, 33, 32, 16, 5)] == [32, 32, 32, 16, 8, 4]


def test_the_rule_declines_what_is_not_a_short_row():
    long = RowKernel("softmax-65", "", SOFTMAX, (4, 65)).function()
    wide = RowKernel("layer_norm-96", "Swin-T's", LAYER_NORM, (4, 96)).function()
    mod = fused(WINDOW_KERNELS["issue-maxpool-add"])  # a window: the window rule's
    for func in (long, wide, mod[reduction_function(mod)], _symbolic_rows()):
        assert first_rule(func, CUDA, [RowReduction()]) == (None, None)


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


def test_the_fixed_list_has_the_rule_right_before_general_reduction_and_no_other_list():
    rules = fixed_rules(CUDA)
    names = [rule_name(rule) for rule in rules]
    assert names.index("RowReduction") + 1 == names.index("GeneralReduction")
    window = names.index("WindowReduction")
    assert names[window + 1 : window + 3] == ["LargeReduction", "Reduction"]
    assert [rule_name(rule) for rule in with_row_reduction(rules)] == names  # once
    assert first_rule(KERNELS["swin_t-s4-softmax"].function(), CUDA, rules)[0] == "RowReduction"
    long = RowKernel("softmax-1000", "a classifier's", SOFTMAX, (2, 1000))
    assert first_rule(long.function(), CUDA, rules)[0] == "GeneralReduction"
    mod = fused(WINDOW_KERNELS["convnext-dw7-bias"])
    assert first_rule(mod[reduction_function(mod)], CUDA, rules)[0] == "WindowReduction"
    for name, make in RULE_LISTS.items():
        assert ("RowReduction" in [type(rule).__name__ for rule in make(CUDA)]) == (name == "fixed")


def test_the_fixed_list_builds_a_softmax_row_of_49_for_cuda_and_computes_it_on_llvm():
    """Six rows of 49 under `fixed`: a warp (and block) per row, right on llvm."""
    kernel = SMALL[0]
    func = kernel.function()
    rule, sch = first_rule(func, CUDA, fixed_rules(CUDA))
    assert rule == "RowReduction"
    with CUDA:
        scheduled = tvm.s_tir.dlight.ApplyDefaultSchedule(*fixed_rules(CUDA))(
            with_symbol(func, "main")
        )
    tvm.ir.assert_structural_equal(scheduled["main"].body, sch.mod["main"].body)  # the rule's
    (launch,) = launch_configs(scheduled).values()
    assert (launch["grid"], launch["block"]) == (6, 32)
    assert "__shfl" in cuda_source(tvm.compile(scheduled, target=CUDA))
    arrays = kernel.arrays()
    library = tvm.compile(with_symbol(without_bindings(func, sch.trace), "main"), target="llvm")
    out = tvm.runtime.tensor(np.zeros(kernel.shape, "float32"))
    library["main"](*[tvm.runtime.tensor(a) for a in arrays], out)
    assert error(out.numpy(), reference(kernel, arrays)) < 1e-6


@pytest.mark.parametrize("name", ["swin_t-s1-softmax", "maxvit_t-s1-layer_norm"])
def test_with_registers_each_lane_loads_its_elements_once(name):
    """A warp per row of 49 or 64: two loads per lane, not six (softmax) or eight (layer norm)."""
    mod, _ = schedule(KERNELS[name], "cuda")
    loads = {}
    for function in ("warp", "warp_regs"):
        source = cuda_source(tvm.compile(tvm.IRModule({function: mod[function]}), target=CUDA))
        body = source[source.index(f"{function}_kernel(float") :]
        loads[function] = body[body.index("{") :].count("x_ptr[")
    assert loads["warp_regs"] == 2 and loads["warp"] in (6, 8)


@pytest.mark.nvcc
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


@pytest.mark.torch
def test_the_benchmark_writes_and_renders_its_tables_on_llvm(tmp_path):
    names = "vit_b_32-softmax,maxvit_t-s4-softmax"
    assert (
        main([str(tmp_path), "--target", "llvm", "--kernels", names, "--peers", "torch-eager"]) == 0
    )
    result = read_json(tmp_path / "row_bench.json")
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
    assert "WRONG" in row_bench_markdown(wrong)
    assert "x0.50" in row_bench_markdown(_result((4.0, 5.0, 6.0)))


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
