# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.  See the NOTICE file
# distributed with this work for additional information
# regarding copyright ownership.  The ASF licenses this file
# to you under the Apache License, Version 2.0 (the
# "License"); you may not use this file except in compliance
# with the License.  You may obtain a copy of the License at
#
#   http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an
# "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
# KIND, either express or implied.  See the License for the
# specific language governing permissions and limitations
# under the License.
# pylint: disable=missing-docstring
# ruff: noqa: E501, F841

import tvm
import tvm.testing
from tvm.ir import IRModule, assert_structural_equal
from tvm.relax.backend.cuda import pipeline as cuda_pipeline
from tvm.s_tir import dlight as dl
from tvm.script import ir as I
from tvm.script import tirx as T
from tvm.target import Target


def _check(mod_before: IRModule, mod_after: IRModule):
    target = Target("nvidia/geforce-rtx-3090-ti")
    with target:
        mod = dl.ApplyDefaultSchedule(  # pylint: disable=not-callable
            dl.gpu.WindowReduction(),
        )(mod_before)
    assert_structural_equal(mod, mod_after)


def test_max_pool_add():
    # MaxPool2d (2x2 window, stride 2) and the Add after it, fused: apache/tvm#20401.
    # fmt: off
    @I.ir_module
    class Before:
        @T.prim_func(s_tir=True)
        def main(lv15: T.Buffer((T.int64(1), T.int64(144), T.int64(64), T.int64(64)), "float32"), param_0: T.Buffer((), "float32"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(144), T.int64(32), T.int64(32)), "float32")):
            T.func_attr({"tirx.noalias": True})
            # with T.sblock("root"):
            pool_max_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(32), T.int64(32)))
            for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(144), T.int64(32), T.int64(32), T.int64(2), T.int64(2)):
                with T.sblock("pool_max"):
                    v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                    T.reads(lv15[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                    T.writes(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                    T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                    with T.init():
                        pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                    pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], lv15[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
            for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(144), T.int64(32), T.int64(32)):
                with T.sblock("T_add"):
                    v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                    T.reads(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], param_0[()])
                    T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                    T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] + param_0[()]

    @I.ir_module
    class After:
        @T.prim_func(s_tir=True)
        def main(lv15: T.Buffer((T.int64(1), T.int64(144), T.int64(64), T.int64(64)), "float32"), param_0: T.Buffer((), "float32"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(144), T.int64(32), T.int64(32)), "float32")):
            T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
            # with T.sblock("root"):
            pool_max_intermediate_local = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(32), T.int64(32)), scope="local")
            lv15_local = T.sblock_alloc_buffer((T.int64(1), T.int64(144), T.int64(64), T.int64(64)), scope="local")
            for ax0_ax1_ax2_ax3_fused_0 in T.thread_binding(T.int64(576), thread="blockIdx.x"):
                for ax0_ax1_ax2_ax3_fused_1 in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                    for ax0, ax1, ax2, ax3_0 in T.grid(T.int64(1), T.int64(1), T.int64(2), T.int64(1)):
                        for ax3_1 in T.vectorized(T.int64(2)):
                            with T.sblock("lv15_local"):
                                v0 = T.axis.spatial(T.int64(1), ax0)
                                v1 = T.axis.spatial(T.int64(144), ax0_ax1_ax2_ax3_fused_0 // T.int64(4) + ax1)
                                v2 = T.axis.spatial(T.int64(64), ax0_ax1_ax2_ax3_fused_0 % T.int64(4) * T.int64(16) + ax0_ax1_ax2_ax3_fused_1 // T.int64(32) * T.int64(2) + ax2)
                                v3 = T.axis.spatial(T.int64(64), ax0_ax1_ax2_ax3_fused_1 % T.int64(32) * T.int64(2) + ax3_0 * T.int64(2) + ax3_1)
                                T.reads(lv15[v0, v1, v2, v3])
                                T.writes(lv15_local[v0, v1, v2, v3])
                                lv15_local[v0, v1, v2, v3] = lv15[v0, v1, v2, v3]
                    for ax0 in T.unroll(T.int64(1)):
                        for ax1 in T.unroll(T.int64(1)):
                            for ax2 in T.unroll(T.int64(1)):
                                for ax3 in T.unroll(T.int64(1)):
                                    for ax4 in T.unroll(T.int64(2)):
                                        for ax5 in T.unroll(T.int64(2)):
                                            with T.sblock("pool_max"):
                                                v_ax0 = T.axis.spatial(T.int64(1), ax0)
                                                v_ax1 = T.axis.spatial(T.int64(144), ax0_ax1_ax2_ax3_fused_0 // T.int64(4) + ax1)
                                                v_ax2 = T.axis.spatial(T.int64(32), ax0_ax1_ax2_ax3_fused_0 % T.int64(4) * T.int64(8) + ax0_ax1_ax2_ax3_fused_1 // T.int64(32) + ax2)
                                                v_ax3 = T.axis.spatial(T.int64(32), ax0_ax1_ax2_ax3_fused_1 % T.int64(32) + ax3)
                                                v_rv0, v_rv1 = T.axis.remap("RR", [ax4, ax5])
                                                T.reads(lv15_local[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                                                T.writes(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3])
                                                T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                                                with T.init():
                                                    pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                                                pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3], lv15_local[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                    with T.sblock("T_add"):
                        v_ax0 = T.axis.spatial(T.int64(1), T.int64(0))
                        v_ax1 = T.axis.spatial(T.int64(144), (ax0_ax1_ax2_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_ax3_fused_1) // T.int64(1024))
                        v_ax2 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_ax3_fused_1) % T.int64(1024) // T.int64(32))
                        v_ax3 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_ax3_fused_1) % T.int64(32))
                        T.reads(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3], param_0[()])
                        T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                        T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] + param_0[()]
    # fmt: on
    _check(Before, After)


def test_global_pool_is_left_alone():
    # A 64x64 window is too long for one thread to reduce: GeneralReduction keeps it.
    # fmt: off
    @I.ir_module
    class Before:
        @T.prim_func(s_tir=True)
        def main(x: T.Buffer((T.int64(1), T.int64(16), T.int64(64), T.int64(64)), "float32"), param_0: T.Buffer((), "float32"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(16), T.int64(1), T.int64(1)), "float32")):
            T.func_attr({"tirx.noalias": True})
            # with T.sblock("root"):
            adaptive_pool_sum = T.sblock_alloc_buffer((T.int64(1), T.int64(16), T.int64(1), T.int64(1)))
            adaptive_pool_avg_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(16), T.int64(1), T.int64(1)))
            for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(16), T.int64(1), T.int64(1), T.int64(64), T.int64(64)):
                with T.sblock("adaptive_pool_sum"):
                    v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                    T.reads(x[v_ax0, v_ax1, v_ax2 * T.int64(64) + v_rv0, v_ax3 * T.int64(64) + v_rv1])
                    T.writes(adaptive_pool_sum[v_ax0, v_ax1, v_ax2, v_ax3])
                    with T.init():
                        adaptive_pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(0.0)
                    adaptive_pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] = adaptive_pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] + x[v_ax0, v_ax1, v_ax2 * T.int64(64) + v_rv0, v_ax3 * T.int64(64) + v_rv1]
            for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(16), T.int64(1), T.int64(1)):
                with T.sblock("adaptive_pool_avg"):
                    v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                    T.reads(adaptive_pool_sum[v_ax0, v_ax1, v_ax2, v_ax3])
                    T.writes(adaptive_pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                    T.sblock_attr({"schedule_rule": "meta_schedule.adaptive_pool_avg"})
                    adaptive_pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = adaptive_pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] / T.float32(4096.0)
            for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(16), T.int64(1), T.int64(1)):
                with T.sblock("T_add"):
                    v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                    T.reads(adaptive_pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], param_0[()])
                    T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                    T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = adaptive_pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] + param_0[()]
    # fmt: on
    _check(Before, Before)


def test_cuda_pipeline_tries_window_reduction_before_general_reduction():
    (schedule,) = [
        transform
        for transform in cuda_pipeline.legalize_passes(Target("nvidia/geforce-rtx-3090-ti"))
        if isinstance(transform, dl.ApplyDefaultSchedule)
    ]
    rules = [type(rule) for rule in schedule.rules]
    assert rules.index(dl.gpu.WindowReduction) + 1 == rules.index(dl.gpu.GeneralReduction)


if __name__ == "__main__":
    tvm.testing.main()
