"""The window rule over the class of apache/tvm#20401, the serial alternative and their
benchmark: each kernel's rule per list, numerics on llvm, launch, declining, ptxas's report."""

import ast
import dataclasses
import math
import re
import sys

import numpy as np
import pytest
import tvm
from conftest import read_json
from tvm import relax, s_tir, te
from tvm.relax import op as R

from pool_fusion_tuning.baselines import rules as rules_module
from pool_fusion_tuning.baselines import serial_reduction, window_reduction
from pool_fusion_tuning.baselines.anatomy import cuda_source, launch_configs, ptxas_resources
from pool_fusion_tuning.baselines.pipeline import make_target, unscheduled
from pool_fusion_tuning.baselines.rules import (
    RULE_LISTS,
    WholeGraphWindowReduction,
    first_rule,
    rule_assignment,
    rule_name,
)
from pool_fusion_tuning.baselines.serial_reduction import SerialGeneralReduction
from pool_fusion_tuning.baselines.window_bench import (
    REPEAT,
    build,
    main,
    measure,
    schedule,
    time_kernel,
    without_bindings,
)
from pool_fusion_tuning.baselines.window_kernels import (
    _F,
    KERNELS,
    Kernel,
    _batch_norm,
    _conv,
    _torch_batch_norm,
    _torch_conv,
    fused,
    reduction_function,
)
from pool_fusion_tuning.baselines.window_reduction import (
    MAX_WINDOW,
    MULTIPROCESSORS,
    Launch,
    _block_threads,
    _inline_window,
    _vector_width,
)
from pool_fusion_tuning.tuning.upstream.tvm_examples import UNALIGNED_VIEW

CUDA = make_target("cuda")
H200_SMS = 132
# The references are PyTorch's pools and convolutions (CI installs its CPU build).


def _small(name: str, **inputs) -> Kernel:
    return dataclasses.replace(KERNELS[name], inputs=inputs)


def _bn(channels: int) -> dict:
    return {name: (channels,) for name in ("gamma", "beta", "mean", "var")}


def _add_one(emit, value):
    return emit(R.add(value, relax.const(1.0, "float32")))


def _hardswish(emit, value):
    three, six = relax.const(3.0, "float32"), relax.const(6.0, "float32")
    return emit(
        R.multiply(value, emit(R.divide(emit(R.clip(emit(R.add(value, three)), 0, 6)), six)))
    )


# The benchmark's kernels, small, and every other kind in the class.
CLASS = [
    _small("issue-maxpool-add", x=(1, 8, 16, 16)),
    _small("densenet-avgpool-relu", x=(2, 8, 12, 12)),
    _small("inception-avgpool3-pad", x=(1, 8, 11, 11)),
    _small("convnext-dw7-bias", x=(1, 8, 14, 14), weight=(8, 1, 7, 7), bias=(8,)),
    # 16 x 33 x 33 outputs: two rows per thread, the last row of 33 alone (a predicate).
    _small("mobilenet-dw3-bn-relu6", x=(1, 16, 33, 33), weight=(16, 1, 3, 3), **_bn(16)),
    _small("mobilenet-dw3-bn-relu6", x=(1, 8, 12, 12), weight=(8, 1, 3, 3), **_bn(8)),
    _small("resnext-group3-bn-relu", x=(1, 16, 10, 10), weight=(16, 4, 3, 3), **_bn(16)),
    _small("maxpool1d-relu", x=(2, 8, 64)),
    _small("maxpool3d-add", x=(1, 4, 6, 10, 10)),
    _small("nhwc-maxpool3-relu", x=(2, 12, 12, 8)),
    _small("nasnet-dw5-lone", x=(1, 8, 13, 13), weight=(8, 1, 5, 5)),  # alone: copied out
    Kernel(
        "mobilenetv3-dw5-bn-hardswish",
        "",
        {"x": (1, 8, 12, 12), "weight": (8, 1, 5, 5), **_bn(8)},
        lambda emit, x, w, *bn: _hardswish(emit, _batch_norm(emit, _conv(emit, x, w, 2), *bn)),
        lambda x, w, *bn: _F().hardswish(_torch_batch_norm(_torch_conv(x, w, padding=2), *bn)),
    ),
    Kernel(
        "avgpool-ceil-mode",
        "",
        {"x": (1, 8, 11, 11)},
        lambda emit, x: emit(R.nn.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=True)),
        lambda x: _F().avg_pool2d(x, 3, 2, 1, ceil_mode=True),
    ),
    Kernel(
        "maxpool-dilated-ceil-add",
        "",
        {"x": (1, 8, 17, 17)},
        lambda emit, x: _add_one(
            emit, emit(R.nn.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True))
        ),
        lambda x: _F().max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True) + 1,
    ),
    Kernel(
        "nhwc-avgpool-add",
        "",
        {"x": (1, 8, 8, 16)},
        lambda emit, x: _add_one(emit, emit(R.nn.avg_pool2d(x, 2, 2, layout="NHWC"))),
        lambda x: _F().avg_pool2d(x.permute(0, 3, 1, 2), 2, 2).permute(0, 2, 3, 1) + 1,
    ),
    Kernel(
        "nhwc-dw3-relu",
        "",
        {"x": (1, 10, 10, 8), "weight": (3, 3, 8, 1)},
        lambda emit, x, w: emit(
            R.nn.relu(
                emit(
                    R.nn.conv2d(x, w, padding=1, groups=8, data_layout="NHWC", kernel_layout="HWOI")
                )
            )
        ),
        lambda x, w: (
            _F()
            .relu(_F().conv2d(x.permute(0, 3, 1, 2), w.permute(2, 3, 0, 1), padding=1, groups=8))
            .permute(0, 2, 3, 1)
        ),
    ),
    Kernel(
        "adaptive-avgpool-add",
        "",
        {"x": (1, 8, 14, 14)},
        lambda emit, x: _add_one(emit, emit(R.nn.adaptive_avg_pool2d(x, (7, 7)))),
        lambda x: _F().adaptive_avg_pool2d(x, (7, 7)) + 1,
    ),
    Kernel(
        "avgpool3d-relu",
        "",
        {"x": (1, 4, 6, 8, 8)},
        lambda emit, x: emit(R.nn.relu(emit(R.nn.avg_pool3d(x, 2, 2)))),
        lambda x: _F().relu(_F().avg_pool3d(x, 2, 2)),
    ),
]
# Outside the class: the fixed list schedules as the default, short rows aside (ROW_RULES).
OUTSIDE = [
    _small("control-global-avgpool", x=(1, 64, 7, 7)),
    _small("control-window1-avgpool", x=(1, 8, 6, 6)),
    _small("lone-maxpool3", x=(1, 8, 12, 12)),  # padded values alone: Fallback's, as fast
    Kernel(
        "conv3x3-relu",
        "",
        {"x": (1, 32, 8, 8), "weight": (16, 32, 3, 3)},
        lambda emit, x, w: emit(R.nn.relu(_conv(emit, x, w, 1))),
        lambda x, w: _F().relu(_torch_conv(x, w, padding=1)),
    ),
    Kernel(
        "matmul-relu",
        "",
        {"x": (16, 32), "w": (32, 24)},
        lambda emit, x, w: emit(R.nn.relu(emit(R.matmul(x, w)))),
        lambda x, w: _F().relu(x @ w),
    ),
    Kernel(
        "softmax",
        "",
        {"x": (4, 64)},
        lambda emit, x: emit(R.nn.softmax(x)),
        lambda x: _F().softmax(x, -1),
    ),
]
# The rule each list gives the kernels outside the class.
OUTSIDE_RULES = {
    "control-global-avgpool": "Reduction",
    "control-window1-avgpool": "Fallback",
    "lone-maxpool3": "Fallback",
    "conv3x3-relu": "Matmul",
    "matmul-relu": "Matmul",
    "softmax": "GeneralReduction",
}
# Rows of at most 64 the fixed list gives RowReduction (row_reduction.py), not the window rule.
ROW_RULES = {"softmax": "RowReduction"}
SERIAL = {"Reduction": "SerialReduction", "GeneralReduction": "SerialGeneralReduction"}


def _ids(kernels):
    return [f"{k.name}-{'x'.join(map(str, k.inputs['x']))}" for k in kernels]


def _rules(kernel) -> dict:
    """The rule of the kernel's reduction under each list."""
    mod = fused(kernel)
    name = reduction_function(mod).name_hint
    return {lst: rule_assignment(mod, CUDA, rules(CUDA))[name] for lst, rules in RULE_LISTS.items()}


@pytest.mark.parametrize("kernel", CLASS, ids=_ids(CLASS))
def test_every_kernel_of_the_class_gets_the_window_rule(kernel):
    rules = _rules(kernel)
    assert rules["default"] in SERIAL  # the issue's schedule, or Reduction's block of few threads
    assert rules["fixed"] == "WindowReduction"
    assert rules["reduction-fix"] == SERIAL[rules["default"]]


@pytest.mark.parametrize("kernel", OUTSIDE, ids=_ids(OUTSIDE))
def test_kernels_outside_the_class_keep_their_default_schedule(kernel):
    rules = _rules(kernel)
    expected = OUTSIDE_RULES[kernel.name]
    assert (rules["default"], rules["fixed"]) == (expected, ROW_RULES.get(kernel.name, expected))
    assert rules["reduction-fix"] == SERIAL.get(expected, expected)
    if kernel.name in ROW_RULES:
        return  # its schedule: tests/baselines/test_row_bench.py
    mod = fused(kernel)
    with CUDA:
        default, fixed = (
            tvm.s_tir.dlight.ApplyDefaultSchedule(*RULE_LISTS[name](CUDA))(
                tvm.IRModule(dict(mod.functions))
            )
            for name in ("default", "fixed")
        )
    tvm.ir.assert_structural_equal(default, fixed)


@pytest.mark.torch
@pytest.mark.parametrize("kernel", CLASS, ids=_ids(CLASS))
def test_every_schedule_is_right_on_llvm(kernel):
    """Each list's CUDA schedules, replayed without their thread bindings, against PyTorch."""
    row = measure(kernel, list(RULE_LISTS), "llvm")
    assert {name: entry["correct"] for name, entry in row["lists"].items()} == dict.fromkeys(
        RULE_LISTS, True
    ), row


def _window(kernel):
    mod = fused(kernel)
    return _inline_window(s_tir.Schedule(mod[reduction_function(mod)]))


def test_the_window_is_read_off_each_layout():
    issue = _window(CLASS[0])  # 2x2, stride 2, read from memory: aligned columns
    assert (issue.shape, issue.size, issue.vector, issue.inlined_input) == (
        (1, 8, 8, 8),
        4,
        True,
        False,
    )
    padded = _window(CLASS[4])  # 3x3 over a padded input: rows shared, no vector loads
    assert (padded.size, padded.shares_rows, padded.vector, padded.inlined_input) == (
        9,
        True,
        False,
        True,
    )
    nhwc = _window(CLASS[9])  # channels innermost: neither rows nor vectors
    assert (nhwc.shape, nhwc.shares_rows, nhwc.vector) == ((2, 6, 6, 8), False, False)
    one_d = _window(CLASS[7])  # the axis before W is C: no rows to share
    assert (one_d.shape, one_d.shares_rows) == ((2, 8, 32), False)


def test_two_rows_per_thread_only_where_the_outputs_still_fill_the_gpu():
    window = _window(CLASS[4])
    launch = window_reduction._choose_launch(window, CUDA)
    assert launch.rows == 2  # 17424 outputs >= 2 x 132 multiprocessors x 32 threads
    small = window_reduction._choose_launch(_window(CLASS[5]), CUDA)
    assert _window(CLASS[5]).shares_rows and small == Launch(threads=32, rows=1)


def test_a_window_larger_than_row_window_takes_one_row_per_thread():
    """ConvNeXt's 7x7 windows overlap, but two rows per thread lost on the H200 (ROW_WINDOW)."""
    large = _small("convnext-dw7-bias", x=(1, 16, 33, 33), weight=(16, 1, 7, 7), bias=(16,))
    assert not _window(large).shares_rows
    assert window_reduction._choose_launch(_window(large), CUDA).rows == 1


@pytest.mark.parametrize("outputs", [100, 2000, 4224, 8192, 20000, 33792, 147456, 10**6])
def test_small_outputs_fill_the_h200(outputs):
    threads = _block_threads(outputs, CUDA)
    blocks = math.ceil(outputs / threads)
    assert threads in (32, 64, 128, 256)
    if outputs >= H200_SMS * 32:
        assert blocks >= H200_SMS  # every multiprocessor gets a block
    else:
        assert threads == 32  # no smaller block than a warp
    if outputs >= H200_SMS * 256:
        assert threads == 256


@pytest.mark.parametrize(
    "channels, launch", [(32, {"grid": 196, "block": 128}), (64, {"grid": 196, "block": 64})]
)
def test_a_small_kernel_is_launched_on_every_multiprocessor(channels, launch):
    """2x2 pools of 28x28x32 or 14x14x64 outputs: 256 threads a block fill too few of 132 SMs."""
    size = 56 if channels == 32 else 28
    mod = fused(_small("issue-maxpool-add", x=(1, channels, size, size)))
    gv = reduction_function(mod)
    _, sch = first_rule(mod[gv], CUDA, RULE_LISTS["fixed"](CUDA))
    assert launch_configs(tvm.IRModule({gv: sch.mod["main"]})) == {f"{gv.name_hint}_kernel": launch}


def test_threads_follow_the_target():
    assert _block_threads(10**6, CUDA) == 256
    limited = tvm.target.Target({"kind": "cuda", "arch": "sm_90", "max_threads_per_block": 128})
    assert _block_threads(10**6, limited) == 128
    rocm = tvm.target.Target({"kind": "rocm", "mcpu": "gfx90a"})  # warps of 64, 256 threads
    assert (_block_threads(10**6, rocm), _block_threads(10, rocm)) == (256, 64)


def test_the_launch_depends_on_the_target_alone(monkeypatch):
    """No device is asked: one target gives one launch on any build host."""

    def no_device(*args, **kwargs):
        raise AssertionError("the rule asked for a device")

    monkeypatch.setattr(tvm.runtime, "device", no_device)
    assert MULTIPROCESSORS == H200_SMS  # the H200's launches stay those measured
    window = _window(CLASS[4])
    targets = [CUDA, tvm.target.Target("nvidia/geforce-rtx-3090-ti")]
    targets.append(tvm.target.Target({"kind": "cuda", "arch": "sm_52"}))
    launches = {window_reduction._choose_launch(window, t) for t in targets}
    assert launches == {Launch(threads=64, rows=2)}  # 17424 outputs, two rows a thread
    assert {(_block_threads(10**6, t), _block_threads(100, t)) for t in targets} == {(256, 32)}
    source = open(window_reduction.__file__).read()
    assert "runtime.device" not in source and "except Exception" not in source


def _reduction(kernel):
    mod = fused(kernel)
    return mod[reduction_function(mod)]


def test_window_one_is_declined():
    func = _reduction(OUTSIDE[1])
    assert _inline_window(s_tir.Schedule(func)).size == 1
    with CUDA:
        assert window_reduction.WindowReduction().apply(func, CUDA, False) is None
        assert WholeGraphWindowReduction().apply(func, CUDA, False) is None


@pytest.mark.xfail(
    strict=True, reason="TVM 0.27's Fallback computes a 1x1 average pool + 1 as x + 2"
)
def test_the_default_rules_compute_a_1x1_average_pool_and_add():
    row = measure(OUTSIDE[1], ["default"], "llvm")
    assert row["lists"]["default"]["correct"]


def _pool(index) -> tvm.tirx.PrimFunc:
    """A 2x2 max pool + 1 whose input index is `index(n, c, h, w, rh, rw)`."""
    x = te.placeholder((1, 4, 16, 16), name="x")
    rh, rw = te.reduce_axis((0, 2), "rh"), te.reduce_axis((0, 2), "rw")
    shape = (1, 4, 8, 8)
    pool = te.compute(
        shape, lambda n, c, h, w: te.max(x[index(n, c, h, w, rh, rw)], axis=[rh, rw]), "pool"
    )
    out = te.compute(shape, lambda *i: pool(*i) + 1, "out")
    return te.create_prim_func([x, out])


def test_a_layout_the_rule_does_not_know_is_declined():
    nchw = _pool(lambda n, c, h, w, rh, rw: (n, c, h * 2 + rh, w * 2 + rw))
    transposed = _pool(lambda n, c, h, w, rh, rw: (n, c, w * 2 + rw, h * 2 + rh))
    rule = window_reduction.WindowReduction()
    with CUDA:
        assert rule.apply(nchw, CUDA, False) is not None
        assert rule.apply(transposed, CUDA, False) is None


def test_symbolic_shapes_are_declined():
    batch = tvm.tirx.Var("n", "int64")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((batch, 8, 16, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(_add_one(bb.emit, bb.emit(R.nn.max_pool2d(x, 2, 2))))
        bb.emit_func_output(out)
    mod = unscheduled(bb.get(), CUDA)
    (func,) = [f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    with CUDA:
        assert window_reduction.WindowReduction().apply(func, CUDA, False) is None
        assert WholeGraphWindowReduction().apply(func, CUDA, False) is None
    assert rule_assignment(mod, CUDA, RULE_LISTS["fixed"](CUDA)) == rule_assignment(
        mod, CUDA, RULE_LISTS["default"](CUDA)
    )


def test_an_error_while_scheduling_is_raised_by_the_rule(monkeypatch):
    """A launch of 0 threads fails `split` in the shipped rule; the project's lists decline."""
    func = _reduction(CLASS[0])

    def no_threads(window, target):
        return Launch(threads=0, rows=1)

    for module in (window_reduction, rules_module):
        monkeypatch.setattr(module, "_choose_launch", no_threads)
    with CUDA:
        with pytest.raises(tvm.s_tir.schedule.ScheduleError):
            window_reduction.WindowReduction().apply(func, CUDA, False)
        assert WholeGraphWindowReduction().apply(func, CUDA, False) is None


def test_the_serial_fix_falls_back_to_its_rule_on_an_error(monkeypatch):
    func = _reduction(CLASS[0])
    monkeypatch.setattr(serial_reduction, "_block_threads", lambda units, target: 0)
    with CUDA:
        ours = SerialGeneralReduction().apply(func, CUDA, False)
        theirs = tvm.s_tir.dlight.gpu.GeneralReduction().apply(func, CUDA, False)
    tvm.ir.assert_structural_equal(ours.mod, theirs.mod)


def test_the_lists_change_the_default_list_where_they_say():
    """`fixed`: Window and LargeReduction before Reduction, RowReduction before
    GeneralReduction; `reduction-fix`: the two serial rules in place."""
    names = {name: [rule_name(r) for r in rules(CUDA)] for name, rules in RULE_LISTS.items()}
    default = names["default"]
    window, row = default.index("Reduction"), default.index("GeneralReduction")
    assert window < row
    assert names["fixed"] == [
        *default[:window],
        "WindowReduction",
        "LargeReduction",
        *default[window:row],
        "RowReduction",
        *default[row:],
    ]
    assert names["reduction-fix"] == [SERIAL.get(name, name) for name in default]


def test_the_projects_rule_schedules_the_class_as_the_shipped_rule():
    for kernel in [*KERNELS.values(), *CLASS]:
        func = _reduction(kernel)
        with CUDA:
            ours = WholeGraphWindowReduction().apply(func, CUDA, False)
            shipped = window_reduction.WindowReduction().apply(func, CUDA, False)
        assert (ours is None) == (shipped is None), kernel.name
        if ours is not None:
            tvm.ir.assert_structural_equal(ours.mod, shipped.mod)


def test_the_shipped_rule_needs_only_tvm():
    tree = ast.parse(open(window_reduction.__file__).read())
    imported = {
        alias.name for n in ast.walk(tree) if isinstance(n, ast.Import) for alias in n.names
    }
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    # tvm_ffi is TVM's own FFI package, which dlight's Reduction and Fallback import too.
    assert {name.split(".")[0] for name in imported} - sys.stdlib_module_names == {"tvm", "tvm_ffi"}
    assert all(n.level == 0 for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))


@pytest.mark.nvcc
def test_the_kernels_of_both_candidates_keep_everything_in_registers():
    """The benchmark's kernels at real sizes, per list, in one module: no shared or local
    memory, no spills."""
    functions = {}
    for name in ("fixed", "reduction-fix"):
        rules = RULE_LISTS[name](CUDA)
        for kernel in KERNELS.values():
            func = _reduction(kernel)
            rule, sch = first_rule(func, CUDA, rules)
            if rule != "Fallback":
                symbol = f"{name}_{kernel.name}".replace("-", "_")
                functions[symbol] = sch.mod["main"].with_attr("global_symbol", symbol)
    resources = ptxas_resources(cuda_source(tvm.compile(tvm.IRModule(functions), target=CUDA)))
    assert len(resources) == len(functions)
    for name, found in resources.items():
        assert (found["shared_bytes"], found["local_bytes"], found["spill_bytes"]) == (0, 0, 0), (
            name
        )


@pytest.mark.torch
def test_the_benchmark_writes_its_tables_on_llvm(tmp_path):
    names = "issue-maxpool-add,control-window1-avgpool"
    assert main([str(tmp_path), "--target", "llvm", "--kernels", names]) == 0
    table = (tmp_path / "window_bench.md").read_text()
    assert "| issue-maxpool-add | GeneralReduction 147456x256 | WindowReduction 576x256 |" in table
    assert table.count("Fallback 196x1024 WRONG") == 3  # TVM's own bug in every list: exit 0
    result = read_json(tmp_path / "window_bench.json")
    assert [row["kernel"] for row in result["kernels"]] == names.split(",")
    assert list(result["kernels"][0]["lists"]) == list(RULE_LISTS)


def test_the_benchmark_times_a_built_kernel():
    """The timing path the GPU run takes, on the CPU: the reduction's function from the build."""
    kernel = CLASS[0]
    mod = fused(kernel)
    gv = reduction_function(mod)
    scheduled, _ = schedule(mod, RULE_LISTS["fixed"](CUDA), "llvm")
    samples = time_kernel(build(scheduled, "llvm"), gv.name_hint, scheduled[gv], tvm.cpu())
    assert len(samples) == REPEAT and min(samples) > 0


def test_the_benchmark_builds_every_kernel_for_cuda():
    """Everything the GPU run does before it runs anything: each list's CUDA build."""
    for kernel in KERNELS.values():
        mod = fused(kernel)
        for name in RULE_LISTS:
            scheduled, _ = schedule(mod, RULE_LISTS[name](CUDA), "cuda")
            assert "__global__" in cuda_source(build(scheduled, "cuda"))


def _declines(func: tvm.tirx.PrimFunc) -> bool:
    """Whether the shipped rule and the project's both leave `func` to the rules after them."""
    with CUDA:
        shipped = window_reduction.WindowReduction().apply(func, CUDA, False)
        ours = WholeGraphWindowReduction().apply(func, CUDA, False)
    return shipped is None and ours is None


def test_a_gather_is_declined():
    """`table[idx[i, k], j]` reduces over k through an index read from memory: no window."""
    table, idx = te.placeholder((32, 8), name="table"), te.placeholder((8, 3), "int32", "idx")
    k = te.reduce_axis((0, 3), "k")
    total = te.compute((8, 8), lambda i, j: te.sum(table[idx[i, k], j], axis=[k]), "total")
    out = te.compute((8, 8), lambda *i: total(*i) + 1, "out")
    assert _declines(te.create_prim_func([table, idx, out]))


def test_an_index_not_affine_in_the_window_is_declined():
    assert not _declines(_pool(lambda n, c, h, w, rh, rw: (n, c, h * 2 + rh, w * 2 + rw)))
    assert _declines(_pool(lambda n, c, h, w, rh, rw: (n, c, h * 2 + rh * rh, w * 2 + rw)))
    assert _declines(_pool(lambda n, c, h, w, rh, rw: (n, c, h * 2 + rh, w * rw)))


@pytest.mark.parametrize("side, taken", [(8, True), (9, False)])
def test_a_window_over_max_window_is_declined(side, taken):
    """8x8 windows (64 elements, MAX_WINDOW) are taken, 9x9 ones (81) left to GeneralReduction."""
    x = te.placeholder((1, 4, side * 4, side * 4), name="x")
    rh, rw = te.reduce_axis((0, side), "rh"), te.reduce_axis((0, side), "rw")
    pool = te.compute(
        (1, 4, 4, 4),
        lambda n, c, h, w: te.max(x[n, c, h * side + rh, w * side + rw], axis=[rh, rw]),
        "pool",
    )
    out = te.compute(pool.shape, lambda *i: pool(*i) + 1, "out")
    assert side * side <= MAX_WINDOW or not taken
    assert _declines(te.create_prim_func([x, out])) is not taken


# A 2x2 max pool + 1 over a view: a symbolic offset, offset_factor=1 (the shipped test's too).
_view_pool = tvm.script.from_source(UNALIGNED_VIEW)


def _with_offset_factor(func: tvm.tirx.PrimFunc, factor: int) -> tvm.tirx.PrimFunc:
    text = func.script().replace("offset_factor=1", f"offset_factor={factor}")
    assert f"offset_factor={factor}" in text
    return tvm.script.from_source(text)


def _view_run(kernel, device) -> None:
    """Run `kernel` on an input one element into its allocation; check it against NumPy."""
    data = np.random.default_rng(0).uniform(-1, 1, 1 + 8 * 16 * 16).astype("float32")
    base = tvm.runtime.tensor(data, device)
    view = base._create_view((1, 8, 16, 16), "float32", relative_byte_offset=4)
    got = tvm.runtime.empty((1, 8, 8, 8), "float32", device)
    kernel["main"](view, got)
    want = data[1:].reshape(1, 8, 8, 2, 8, 2).max(axis=(3, 5)) + 1
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_no_vector_load_where_the_offset_is_not_provably_aligned():
    """Rows load as 2-lane vectors where the offset is a multiple of 2, else as scalars; the
    scalar schedule on the CPU is right on a view one element in."""
    schedules = {}
    for factor in (1, 2):
        func = _view_pool if factor == 1 else _with_offset_factor(_view_pool, factor)
        with CUDA:
            schedules[factor] = window_reduction.WindowReduction().apply(func, CUDA, False)
        assert schedules[factor] is not None
    assert "T.vectorized" not in schedules[1].mod.script()
    assert "T.vectorized" in schedules[2].mod.script()
    kernel = tvm.compile(
        tvm.IRModule({"main": without_bindings(_view_pool, schedules[1].trace)}), target="llvm"
    )
    _view_run(kernel, tvm.cpu())


@pytest.mark.gpu
def test_a_pool_over_a_view_one_element_in_is_right_on_cuda():
    target = tvm.target.Target.from_device(tvm.cuda(0))
    with target:
        mod = tvm.s_tir.dlight.ApplyDefaultSchedule(window_reduction.WindowReduction())(
            tvm.IRModule({"main": _view_pool})
        )
    assert mod["main"].attrs["tirx.is_scheduled"]
    _view_run(tvm.compile(mod, target=target), tvm.cuda(0))


@pytest.mark.parametrize("dtype, lanes", [("float32", 4), ("float16", 8), ("float64", 2)])
def test_vector_width_is_chosen_in_bytes(dtype, lanes):
    assert _vector_width(lanes * 4, dtype) == lanes
    assert _vector_width(lanes // 2, dtype) == (lanes // 2 if lanes >= 4 else 1)
    assert _vector_width(3, dtype) == 1


def test_a_vulkan_target_gets_one_thread_per_output_within_its_limits():
    """Vulkan: warps of 1, at most 256 threads a block (the target's own limits)."""
    vulkan = tvm.target.Target("vulkan")
    func = _pool(lambda n, c, h, w, rh, rw: (n, c, h * 2 + rh, w * 2 + rw))
    with vulkan:
        sch = window_reduction.WindowReduction().apply(func, vulkan, False)
    assert sch is not None
    extents = {}
    text = sch.mod.script()
    for thread in ("blockIdx.x", "threadIdx.x"):
        (found,) = re.findall(
            rf'T\.thread_binding\((?:T\.int64\()?(\d+)\)?, thread="{thread}"\)', text
        )
        extents[thread] = int(found)
    assert extents["threadIdx.x"] <= int(vulkan.attrs["max_threads_per_block"])
    assert extents["blockIdx.x"] * extents["threadIdx.x"] == 1 * 4 * 8 * 8
