"""No kernel is timed twice: measurements keyed by the compiled kernel, kept in the run folder."""

import tvm

from baselines.case import Case
from baselines.template import PoolSchedule
from tuning.kernel import fused_function, kernel_module
from tuning.kernel_cache import KernelCache, kernel_key

SPEC = {"kind": "llvm"}


def _key(schedule) -> str:
    _, func = fused_function(Case(channels=2, height=8, width=8), SPEC)
    target = tvm.target.Target("llvm")
    executable = tvm.compile(kernel_module(schedule.apply(func, target)), target=target)
    return kernel_key(executable, {})


def test_the_same_kernel_has_one_key_and_another_kernel_another():
    assert _key(PoolSchedule(outputs_w=2)) == _key(PoolSchedule(outputs_w=2))
    assert _key(PoolSchedule(outputs_w=2)) != _key(PoolSchedule(outputs_w=4))


def test_a_measurement_is_reused_across_instances_and_says_so(tmp_path):
    path = tmp_path / "kernels.json"
    cache = KernelCache(path)
    cache.put("k1", {"status": "ok", "kernel_us": 2.5, "samples_us": [2.5], "build_s": 1.0})
    cache.put("k2", {"status": "wrong", "reason": "wrong result", "max_abs_err": 1.0})
    reread = KernelCache(path)
    assert reread.get("k1") == {"status": "ok", "kernel_us": 2.5, "samples_us": [2.5],
                                "reused": True}
    assert reread.get("k2")["reason"] == "wrong result"
    assert reread.get("k3") is None and reread.get(None) is None


def test_outcomes_that_may_be_the_runner_s_fault_are_tried_again(tmp_path):
    cache = KernelCache(tmp_path / "kernels.json")
    for reason in ("runner crashed", "time limit", "run error"):
        cache.put(reason, {"status": "failed", "reason": reason})
        assert cache.get(reason) is None
    assert len(cache) == 0
