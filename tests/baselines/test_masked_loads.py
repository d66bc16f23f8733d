"""`masked_loads`: the same outputs, every window load before the first branch in the PTX."""

import re
import subprocess

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import s_tir

from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.masked_loads import mask_loads
from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.template import PoolSchedule
from pool_fusion_tuning.baselines.window_bench import without_bindings
from pool_fusion_tuning.baselines.window_reduction import WindowReduction
from pool_fusion_tuning.tuning.candidates.kernel import bias_count, fused_function, kernel_module
from pool_fusion_tuning.tuning.candidates.kernel_check import _inputs, expected_outputs
from pool_fusion_tuning.tuning.tuners.space import Space

CUDA = make_target("cuda")
CUDA_SPEC = TargetSpec("cuda")
# `s1-h6` smaller: an odd output height (9) under the rule's two rows a thread, one Add.
ODD_ROWS = Case(channels=6, height=10, width=10, window=2, stride=1, prelude=False, tail=1)
# `s1-96` smaller: 5 x 23 x 23 outputs, two Adds; and a Case with the prelude (padded loads).
ODD = Case(
    channels=5, height=24, width=24, window=2, stride=1, prelude=False, tail=2, shared_output=False
)
PRELUDE = Case(channels=4, height=12, width=12, window=3, stride=1, prelude=True, tail=3)
# Enough outputs (36 x 19 x 19) for the rule's two rows a thread, the last row guarded.
ROWS_PRELUDE = Case(channels=4, height=20, width=20, window=2, stride=1, prelude=True, tail=1)


def _rule(case: Case):
    _, func = fused_function(case, CUDA_SPEC, True)
    return func, WindowReduction().apply(func, CUDA, False)


def _strided(case: Case):
    _, func = fused_function(case, CUDA_SPEC, True)
    space = Space.for_target(case, CUDA, True)
    params = {**space.seeds()[0], "threads": 32, "unroll": True, "outputs_strided": 4}
    sch = s_tir.Schedule(func)
    space.config(params).schedule(sch, "cuda")
    return func, sch


@pytest.mark.parametrize("schedule", [_rule, _strided], ids=["rule", "strided"])
@pytest.mark.parametrize(
    "case",
    [ODD_ROWS, ODD, PRELUDE, ROWS_PRELUDE],
    ids=["odd-rows", "odd", "prelude", "two-rows-prelude"],
)
def test_masked_loads_compute_every_output_right(case, schedule):
    """The masked CUDA schedule on the CPU writes every output, equal to NumPy's."""
    func, sch = schedule(case)
    guarded = without_bindings(func, sch.trace)
    serial = mask_loads(guarded)
    assert not tvm_ffi.structural_equal(serial, guarded)
    library = tvm.compile(kernel_module(serial), target="llvm")
    biases = bias_count(func)
    expected = expected_outputs(case, biases, 0, True)
    outputs = [tvm.runtime.tensor(np.full(e.shape, np.nan, "float32")) for e in expected]
    library["main"](*(tvm.runtime.tensor(a) for a in _inputs(case, biases, 0, True)), *outputs)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_only_guarded_blocks_writing_registers_lose_their_guard():
    func, sch = _rule(ODD_ROWS)
    scheduled = sch.mod["main"]
    masked = mask_loads(scheduled)
    assert not tvm_ffi.structural_equal(masked, scheduled)
    text = masked.script()
    assert "T.min(" in text and "T.where(" in text  # clamped loads; the stores' guard stays
    _, even = _rule(ODD_ROWS.replace(channels=8, height=17, width=17))  # no guard: unchanged
    assert tvm_ffi.structural_equal(mask_loads(even.mod["main"]), even.mod["main"])


@pytest.mark.nvcc
def test_the_rules_kernel_issues_its_window_loads_before_any_branch(tmp_path):
    """Masked, all six loads of `s1-h6`'s kernel come before the guarded stores."""
    s1_h6 = Case(channels=48, height=20, width=20, window=2, stride=1, prelude=False, tail=1)
    func, sch = _rule(s1_h6)
    scheduled = sch.mod["main"].with_attr("tirx.is_scheduled", True)

    def ops(f, name):
        source = tvm.compile(kernel_module(f), target=CUDA).mod.imports[0].inspect_source()
        (tmp_path / f"{name}.cu").write_text(source)
        ptx = tmp_path / f"{name}.ptx"
        subprocess.run(
            ["nvcc", "--ptx", "-arch=sm_90", "-o", ptx, tmp_path / f"{name}.cu"], check=True
        )
        found = re.findall(r"^\s*(?:@!?%\w+\s+)?(ld\.global|st\.global|bra)", ptx.read_text(), re.M)
        return found

    before, after = ops(scheduled, "plain"), ops(mask_loads(scheduled), "masked")
    assert "bra" in before[: before.index("st.global")]
    first_branch = after.index("bra")
    assert after[:first_branch] == ["ld.global"] * 6
    assert "ld.global" not in after[first_branch:]


def test_one_kernel_masks_its_loads_and_fixed_is_the_shipped_rule_alone():
    one, capture, fixed = ARMS["one-kernel"], ARMS["one-kernel+capture"], ARMS["fixed"]
    assert one.describe()["masked_loads"] is True and capture.masked_loads
    assert (one.rules, one.whole_graph, one.bind_constants) == ("fixed", True, True)
    assert "masked_loads" not in fixed.describe()


def test_the_templates_knob_masks_the_scheduled_function_on_cuda_only():
    """A point's `masked_loads` masks on CUDA; the CPU schedule ignores it."""
    _, func = fused_function(ODD_ROWS, CUDA_SPEC, True)
    space = Space.for_target(ODD_ROWS, CUDA, True)
    point = {**space.seeds()[0], "outputs_h": 2, "unroll": True}
    plain = space.config(point).apply(func, CUDA)
    masked = space.config({**point, "masked_loads": True}).apply(func, CUDA)
    assert not tvm_ffi.structural_equal(masked, plain)
    assert tvm_ffi.structural_equal(masked, mask_loads(plain))
    cpu = make_target("llvm")
    cpu_point = {"outputs_h": 2, "unroll": True}
    assert tvm_ffi.structural_equal(
        PoolSchedule(**cpu_point, masked_loads=True).apply(func, cpu),
        PoolSchedule(**cpu_point).apply(func, cpu),
    )


def test_the_rules_one_kernel_is_timed_alone_as_one_kernel_compiles_it(tmp_path):
    """The tuner times `one-kernel` masked, in a record apart from an older unmasked one."""
    from pool_fusion_tuning.tuning.candidates.rule_schedule import DefaultSchedule
    from pool_fusion_tuning.tuning.tuners.optuna.tuner import _rule_kernels

    _, func = fused_function(ODD_ROWS, CUDA_SPEC, True)
    plain, masked = DefaultSchedule("fixed"), DefaultSchedule("fixed", masked_loads=True)
    assert tvm_ffi.structural_equal(masked.apply(func, CUDA), mask_loads(plain.apply(func, CUDA)))
    assert masked.to_dict() == {**plain.to_dict(), "masked_loads": True}

    class Recording:
        def evaluate(self, schedules):
            return [{"status": "ok", "kernel_us": 1.0, "schedule": s.to_dict()} for s in schedules]

    kernels = _rule_kernels(tmp_path, Recording(), ("fixed",), masked=True)
    assert kernels["fixed"]["schedule"]["masked_loads"] is True
    assert [p.name for p in tmp_path.iterdir()] == ["fixed-masked_kernel.json"]
