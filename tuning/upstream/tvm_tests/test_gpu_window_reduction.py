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
# ruff: noqa: E501
"""Tests of dlight's WindowReduction rule: one thread per output of a small-window reduction
(pooling, depthwise convolution) with its elementwise epilogue."""

import re

import numpy as np
import pytest

import tvm
import tvm.testing
from tvm import te, tirx
from tvm.ir import IRModule, assert_structural_equal
from tvm.relax.backend.cuda import pipeline as cuda_pipeline
from tvm.s_tir import dlight as dl
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T
from tvm.target import Target
from tvm.testing import env

TARGET = Target("nvidia/geforce-rtx-3090-ti")


def _schedule(mod: IRModule) -> IRModule:
    with TARGET:
        rule = dl.gpu.WindowReduction()
        return dl.ApplyDefaultSchedule(rule)(mod)  # pylint: disable=not-callable


# fmt: off

# MaxPool2d 2x2, stride 2, and the Add after it, fused (apache/tvm#20401): one thread
# per output, the window's rows loaded from memory as vectors.
@I.ir_module(s_tir=True)
class MaxPoolAddBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pool_max_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)))
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(64), T.int64(32), T.int64(32), T.int64(2), T.int64(2)):
            with T.sblock("pool_max"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                T.writes(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                with T.init():
                    pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(64), T.int64(32), T.int64(32)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] + T.float32(1.0)


@I.ir_module(s_tir=True)
class MaxPoolAddAfter:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        pool_max_intermediate_local = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), scope="local")
        x_local = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), scope="local")
        for ax0_ax1_ax2_ax3_fused_0 in T.thread_binding(T.int64(256), thread="blockIdx.x"):
            for ax0_ax1_ax2_ax3_fused_1 in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                for ax0, ax1, ax2, ax3_0 in T.grid(T.int64(1), T.int64(1), T.int64(2), T.int64(1)):
                    for ax3_1 in T.vectorized(T.int64(2)):
                        with T.sblock("x_local"):
                            v0 = T.axis.spatial(T.int64(1), ax0)
                            v1 = T.axis.spatial(T.int64(64), ax0_ax1_ax2_ax3_fused_0 // T.int64(4) + ax1)
                            v2 = T.axis.spatial(T.int64(64), ax0_ax1_ax2_ax3_fused_0 % T.int64(4) * T.int64(16) + ax0_ax1_ax2_ax3_fused_1 // T.int64(32) * T.int64(2) + ax2)
                            v3 = T.axis.spatial(T.int64(64), ax0_ax1_ax2_ax3_fused_1 % T.int64(32) * T.int64(2) + ax3_0 * T.int64(2) + ax3_1)
                            T.reads(x[v0, v1, v2, v3])
                            T.writes(x_local[v0, v1, v2, v3])
                            x_local[v0, v1, v2, v3] = x[v0, v1, v2, v3]
                for ax0 in T.unroll(T.int64(1)):
                    for ax1 in T.unroll(T.int64(1)):
                        for ax2 in T.unroll(T.int64(1)):
                            for ax3 in T.unroll(T.int64(1)):
                                for ax4 in T.unroll(T.int64(2)):
                                    for ax5 in T.unroll(T.int64(2)):
                                        with T.sblock("pool_max"):
                                            v_ax0 = T.axis.spatial(T.int64(1), ax0)
                                            v_ax1 = T.axis.spatial(T.int64(64), ax0_ax1_ax2_ax3_fused_0 // T.int64(4) + ax1)
                                            v_ax2 = T.axis.spatial(T.int64(32), ax0_ax1_ax2_ax3_fused_0 % T.int64(4) * T.int64(8) + ax0_ax1_ax2_ax3_fused_1 // T.int64(32) + ax2)
                                            v_ax3 = T.axis.spatial(T.int64(32), ax0_ax1_ax2_ax3_fused_1 % T.int64(32) + ax3)
                                            v_rv0, v_rv1 = T.axis.remap("RR", [ax4, ax5])
                                            T.reads(x_local[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                                            T.writes(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3])
                                            T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                                            with T.init():
                                                pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                                            pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3], x_local[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                with T.sblock("T_add"):
                    v_ax0 = T.axis.spatial(T.int64(1), T.int64(0))
                    v_ax1 = T.axis.spatial(T.int64(64), (ax0_ax1_ax2_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_ax3_fused_1) // T.int64(1024))
                    v_ax2 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_ax3_fused_1) % T.int64(1024) // T.int64(32))
                    v_ax3 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_ax3_fused_1) % T.int64(32))
                    T.reads(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3])
                    T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                    T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] + T.float32(1.0)


# MaxPool2d 3x3, stride 2, padding 1, then ReLU: the padding is inlined into the
# window's loads; the windows overlap too little to share rows.
@I.ir_module(s_tir=True)
class PaddedMaxPoolBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), compute_intermediate: T.Buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(66), T.int64(66)))
        pool_max_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)))
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(64), T.int64(66), T.int64(66)):
            with T.sblock("pad_temp"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(x[v_ax0, v_ax1, v_ax2 - T.int64(1), v_ax3 - T.int64(1)])
                T.writes(pad_temp[v_ax0, v_ax1, v_ax2, v_ax3])
                pad_temp[v_ax0, v_ax1, v_ax2, v_ax3] = T.if_then_else(T.int64(1) <= v_ax2 and v_ax2 < T.int64(65) and T.int64(1) <= v_ax3 and v_ax3 < T.int64(65), x[v_ax0, v_ax1, v_ax2 - T.int64(1), v_ax3 - T.int64(1)], T.float32(-340282346638528859811704183484516925440.0))
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(64), T.int64(32), T.int64(32), T.int64(3), T.int64(3)):
            with T.sblock("pool_max"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(pad_temp[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                T.writes(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                with T.init():
                    pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], pad_temp[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(32), T.int64(32)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(pool_max_intermediate[v_i0, v_i1, v_i2, v_i3])
                T.writes(compute_intermediate[v_i0, v_i1, v_i2, v_i3])
                compute_intermediate[v_i0, v_i1, v_i2, v_i3] = T.max(pool_max_intermediate[v_i0, v_i1, v_i2, v_i3], T.float32(0.0))


@I.ir_module(s_tir=True)
class PaddedMaxPoolAfter:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), compute_intermediate: T.Buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        pool_max_intermediate_local = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), scope="local")
        for i0_i1_i2_i3_fused_0 in T.thread_binding(T.int64(256), thread="blockIdx.x"):
            for i0_i1_i2_i3_fused_1 in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                for ax0 in T.unroll(T.int64(1)):
                    for ax1 in T.unroll(T.int64(1)):
                        for ax2 in T.unroll(T.int64(1)):
                            for ax3 in T.unroll(T.int64(1)):
                                for ax4 in T.unroll(T.int64(3)):
                                    for ax5 in T.unroll(T.int64(3)):
                                        with T.sblock("pool_max"):
                                            v_ax0 = T.axis.spatial(T.int64(1), ax0)
                                            v_ax1 = T.axis.spatial(T.int64(64), i0_i1_i2_i3_fused_0 // T.int64(4) + ax1)
                                            v_ax2 = T.axis.spatial(T.int64(32), i0_i1_i2_i3_fused_0 % T.int64(4) * T.int64(8) + i0_i1_i2_i3_fused_1 // T.int64(32) + ax2)
                                            v_ax3 = T.axis.spatial(T.int64(32), i0_i1_i2_i3_fused_1 % T.int64(32) + ax3)
                                            v_rv0, v_rv1 = T.axis.remap("RR", [ax4, ax5])
                                            T.reads(x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0 - T.int64(1), v_ax3 * T.int64(2) + v_rv1 - T.int64(1)])
                                            T.writes(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3])
                                            T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                                            with T.init():
                                                pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                                            pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3], T.if_then_else(T.int64(1) <= v_ax2 * T.int64(2) + v_rv0 and v_ax2 * T.int64(2) + v_rv0 < T.int64(65) and T.int64(1) <= v_ax3 * T.int64(2) + v_rv1 and v_ax3 * T.int64(2) + v_rv1 < T.int64(65), x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0 - T.int64(1), v_ax3 * T.int64(2) + v_rv1 - T.int64(1)], T.float32(-340282346638528859811704183484516925440.0)))
                with T.sblock("compute"):
                    v_i0 = T.axis.spatial(T.int64(1), T.int64(0))
                    v_i1 = T.axis.spatial(T.int64(64), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) // T.int64(1024))
                    v_i2 = T.axis.spatial(T.int64(32), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) % T.int64(1024) // T.int64(32))
                    v_i3 = T.axis.spatial(T.int64(32), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) % T.int64(32))
                    T.reads(pool_max_intermediate_local[v_i0, v_i1, v_i2, v_i3])
                    T.writes(compute_intermediate[v_i0, v_i1, v_i2, v_i3])
                    compute_intermediate[v_i0, v_i1, v_i2, v_i3] = T.max(pool_max_intermediate_local[v_i0, v_i1, v_i2, v_i3], T.float32(0.0))


# AvgPool2d 3x3, stride 1, padding 1 (Inception's): each input row is read by three
# windows, so a thread computes two rows of outputs.
@I.ir_module(s_tir=True)
class OverlappingWindowsBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(128), T.int64(32), T.int64(32)), "float32"), pool_avg: T.Buffer((T.int64(1), T.int64(128), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"op_pattern": 4, "tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(128), T.int64(34), T.int64(34)))
        pool_sum = T.sblock_alloc_buffer((T.int64(1), T.int64(128), T.int64(32), T.int64(32)))
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(128), T.int64(34), T.int64(34)):
            with T.sblock("pad_temp"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(x[v_ax0, v_ax1, v_ax2 - T.int64(1), v_ax3 - T.int64(1)])
                T.writes(pad_temp[v_ax0, v_ax1, v_ax2, v_ax3])
                pad_temp[v_ax0, v_ax1, v_ax2, v_ax3] = T.if_then_else(T.int64(1) <= v_ax2 and v_ax2 < T.int64(33) and T.int64(1) <= v_ax3 and v_ax3 < T.int64(33), x[v_ax0, v_ax1, v_ax2 - T.int64(1), v_ax3 - T.int64(1)], T.float32(0.0))
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(128), T.int64(32), T.int64(32), T.int64(3), T.int64(3)):
            with T.sblock("pool_sum"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(pad_temp[v_ax0, v_ax1, v_ax2 + v_rv0, v_ax3 + v_rv1])
                T.writes(pool_sum[v_ax0, v_ax1, v_ax2, v_ax3])
                with T.init():
                    pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(0.0)
                pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] + pad_temp[v_ax0, v_ax1, v_ax2 + v_rv0, v_ax3 + v_rv1]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(128), T.int64(32), T.int64(32)):
            with T.sblock("pool_avg"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(pool_sum[v_ax0, v_ax1, v_ax2, v_ax3])
                T.writes(pool_avg[v_ax0, v_ax1, v_ax2, v_ax3])
                T.sblock_attr({"schedule_rule": "meta_schedule.pool_avg"})
                pool_avg[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] / T.Cast("float32", (T.min(T.int64(1), T.int64(32) - v_ax2) + T.int64(2)) * (T.min(T.int64(1), T.int64(32) - v_ax3) + T.int64(2)))


@I.ir_module(s_tir=True)
class OverlappingWindowsAfter:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(128), T.int64(32), T.int64(32)), "float32"), pool_avg: T.Buffer((T.int64(1), T.int64(128), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"op_pattern": 4, "tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        pool_sum_local = T.sblock_alloc_buffer((T.int64(1), T.int64(128), T.int64(32), T.int64(32)), scope="local")
        for ax0_ax1_ax2_0_ax3_fused_0 in T.thread_binding(T.int64(256), thread="blockIdx.x"):
            for ax0_ax1_ax2_0_ax3_fused_1 in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                for ax0 in T.unroll(T.int64(1)):
                    for ax1 in T.unroll(T.int64(1)):
                        for ax2 in T.unroll(T.int64(2)):
                            for ax3 in T.unroll(T.int64(1)):
                                for ax4 in T.unroll(T.int64(3)):
                                    for ax5 in T.unroll(T.int64(3)):
                                        with T.sblock("pool_sum"):
                                            v_ax0 = T.axis.spatial(T.int64(1), ax0)
                                            v_ax1 = T.axis.spatial(T.int64(128), ax0_ax1_ax2_0_ax3_fused_0 // T.int64(2) + ax1)
                                            v_ax2 = T.axis.spatial(T.int64(32), ax0_ax1_ax2_0_ax3_fused_0 % T.int64(2) * T.int64(16) + ax0_ax1_ax2_0_ax3_fused_1 // T.int64(32) * T.int64(2) + ax2)
                                            v_ax3 = T.axis.spatial(T.int64(32), ax0_ax1_ax2_0_ax3_fused_1 % T.int64(32) + ax3)
                                            v_rv0, v_rv1 = T.axis.remap("RR", [ax4, ax5])
                                            T.reads(x[v_ax0, v_ax1, v_ax2 + v_rv0 - T.int64(1), v_ax3 + v_rv1 - T.int64(1)])
                                            T.writes(pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3])
                                            with T.init():
                                                pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(0.0)
                                            pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3] + T.if_then_else(T.int64(1) <= v_ax2 + v_rv0 and v_ax2 + v_rv0 < T.int64(33) and T.int64(1) <= v_ax3 + v_rv1 and v_ax3 + v_rv1 < T.int64(33), x[v_ax0, v_ax1, v_ax2 + v_rv0 - T.int64(1), v_ax3 + v_rv1 - T.int64(1)], T.float32(0.0))
                for ax2_1 in T.unroll(T.int64(2)):
                    with T.sblock("pool_avg"):
                        v_ax0 = T.axis.spatial(T.int64(1), T.int64(0))
                        v_ax1 = T.axis.spatial(T.int64(128), (ax0_ax1_ax2_0_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_0_ax3_fused_1) // T.int64(512))
                        v_ax2 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_0_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_0_ax3_fused_1) % T.int64(512) // T.int64(32) * T.int64(2) + ax2_1)
                        v_ax3 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_0_ax3_fused_0 * T.int64(256) + ax0_ax1_ax2_0_ax3_fused_1) % T.int64(32))
                        T.reads(pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3])
                        T.writes(pool_avg[v_ax0, v_ax1, v_ax2, v_ax3])
                        T.sblock_attr({"schedule_rule": "meta_schedule.pool_avg"})
                        pool_avg[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3] / T.Cast("float32", (T.min(T.int64(1), T.int64(32) - v_ax2) + T.int64(2)) * (T.min(T.int64(1), T.int64(32) - v_ax3) + T.int64(2)))


# AvgPool2d 2x2 + ReLU (DenseNet's transition): Reduction would give each output a
# block of 4 threads; the sum, the division and the ReLU in one thread.
@I.ir_module(s_tir=True)
class AveragePoolBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), compute_intermediate: T.Buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pool_sum = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)))
        pool_avg_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)))
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(64), T.int64(32), T.int64(32), T.int64(2), T.int64(2)):
            with T.sblock("pool_sum"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                T.writes(pool_sum[v_ax0, v_ax1, v_ax2, v_ax3])
                with T.init():
                    pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(0.0)
                pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] + x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(64), T.int64(32), T.int64(32)):
            with T.sblock("pool_avg"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(pool_sum[v_ax0, v_ax1, v_ax2, v_ax3])
                T.writes(pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T.sblock_attr({"schedule_rule": "meta_schedule.pool_avg"})
                pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] / T.Cast("float32", T.max((T.min(v_ax2, T.int64(0)) * T.int64(2) + T.min(v_ax2 * T.int64(2) + T.int64(1), T.int64(63)) + T.int64(1) - v_ax2 * T.int64(2)) * (T.min(v_ax3, T.int64(0)) * T.int64(2) + T.min(v_ax3 * T.int64(2) + T.int64(1), T.int64(63)) + T.int64(1) - v_ax3 * T.int64(2)), T.int64(1)))
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(32), T.int64(32)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(pool_avg_intermediate[v_i0, v_i1, v_i2, v_i3])
                T.writes(compute_intermediate[v_i0, v_i1, v_i2, v_i3])
                compute_intermediate[v_i0, v_i1, v_i2, v_i3] = T.max(pool_avg_intermediate[v_i0, v_i1, v_i2, v_i3], T.float32(0.0))


@I.ir_module(s_tir=True)
class AveragePoolAfter:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), compute_intermediate: T.Buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        pool_sum_local = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(32), T.int64(32)), scope="local")
        x_local = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), scope="local")
        for i0_i1_i2_i3_fused_0 in T.thread_binding(T.int64(256), thread="blockIdx.x"):
            for i0_i1_i2_i3_fused_1 in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                for ax0, ax1, ax2, ax3_0 in T.grid(T.int64(1), T.int64(1), T.int64(2), T.int64(1)):
                    for ax3_1 in T.vectorized(T.int64(2)):
                        with T.sblock("x_local"):
                            v0 = T.axis.spatial(T.int64(1), ax0)
                            v1 = T.axis.spatial(T.int64(64), i0_i1_i2_i3_fused_0 // T.int64(4) + ax1)
                            v2 = T.axis.spatial(T.int64(64), i0_i1_i2_i3_fused_0 % T.int64(4) * T.int64(16) + i0_i1_i2_i3_fused_1 // T.int64(32) * T.int64(2) + ax2)
                            v3 = T.axis.spatial(T.int64(64), i0_i1_i2_i3_fused_1 % T.int64(32) * T.int64(2) + ax3_0 * T.int64(2) + ax3_1)
                            T.reads(x[v0, v1, v2, v3])
                            T.writes(x_local[v0, v1, v2, v3])
                            x_local[v0, v1, v2, v3] = x[v0, v1, v2, v3]
                for ax0 in T.unroll(T.int64(1)):
                    for ax1 in T.unroll(T.int64(1)):
                        for ax2 in T.unroll(T.int64(1)):
                            for ax3 in T.unroll(T.int64(1)):
                                for ax4 in T.unroll(T.int64(2)):
                                    for ax5 in T.unroll(T.int64(2)):
                                        with T.sblock("pool_sum"):
                                            v_ax0 = T.axis.spatial(T.int64(1), ax0)
                                            v_ax1 = T.axis.spatial(T.int64(64), i0_i1_i2_i3_fused_0 // T.int64(4) + ax1)
                                            v_ax2 = T.axis.spatial(T.int64(32), i0_i1_i2_i3_fused_0 % T.int64(4) * T.int64(8) + i0_i1_i2_i3_fused_1 // T.int64(32) + ax2)
                                            v_ax3 = T.axis.spatial(T.int64(32), i0_i1_i2_i3_fused_1 % T.int64(32) + ax3)
                                            v_rv0, v_rv1 = T.axis.remap("RR", [ax4, ax5])
                                            T.reads(x_local[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                                            T.writes(pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3])
                                            with T.init():
                                                pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(0.0)
                                            pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum_local[v_ax0, v_ax1, v_ax2, v_ax3] + x_local[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1]
                with T.sblock("compute"):
                    v_i0 = T.axis.spatial(T.int64(1), T.int64(0))
                    v_i1 = T.axis.spatial(T.int64(64), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) // T.int64(1024))
                    v_i2 = T.axis.spatial(T.int64(32), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) % T.int64(1024) // T.int64(32))
                    v_i3 = T.axis.spatial(T.int64(32), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) % T.int64(32))
                    T.reads(pool_sum_local[v_i0, v_i1, v_i2, v_i3])
                    T.writes(compute_intermediate[v_i0, v_i1, v_i2, v_i3])
                    compute_intermediate[v_i0, v_i1, v_i2, v_i3] = T.max(pool_sum_local[v_i0, v_i1, v_i2, v_i3] / T.Cast("float32", T.max((T.min(v_i2, T.int64(0)) * T.int64(2) + T.min(v_i2 * T.int64(2) + T.int64(1), T.int64(63)) + T.int64(1) - v_i2 * T.int64(2)) * (T.min(v_i3, T.int64(0)) * T.int64(2) + T.min(v_i3 * T.int64(2) + T.int64(1), T.int64(63)) + T.int64(1) - v_i3 * T.int64(2)), T.int64(1))), T.float32(0.0))


# Two outputs, the second computed from the first: the thread that reduces a window
# writes both.
@I.ir_module(s_tir=True)
class SeveralOutputsBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((1, 64, 64, 64), "float32"), T_add: T.Buffer((1, 64, 32, 32), "float32"), T_add_1: T.Buffer((1, 64, 32, 32), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pool_max = T.sblock_alloc_buffer((1, 64, 32, 32))
        for n, c, h, w, rh, rw in T.grid(1, 64, 32, 32, 2, 2):
            with T.sblock("pool_max"):
                v_n, v_c, v_h, v_w, v_rh, v_rw = T.axis.remap("SSSSRR", [n, c, h, w, rh, rw])
                T.reads(x[v_n, v_c, v_h * 2 + v_rh, v_w * 2 + v_rw])
                T.writes(pool_max[v_n, v_c, v_h, v_w])
                with T.init():
                    pool_max[v_n, v_c, v_h, v_w] = T.float32(-340282346638528859811704183484516925440.0)
                pool_max[v_n, v_c, v_h, v_w] = T.max(pool_max[v_n, v_c, v_h, v_w], x[v_n, v_c, v_h * 2 + v_rh, v_w * 2 + v_rw])
        for i0, i1, i2, i3 in T.grid(1, 64, 32, 32):
            with T.sblock("T_add"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(pool_max[v_i0, v_i1, v_i2, v_i3])
                T.writes(T_add[v_i0, v_i1, v_i2, v_i3])
                T_add[v_i0, v_i1, v_i2, v_i3] = pool_max[v_i0, v_i1, v_i2, v_i3] + T.float32(1.0)
        for i0, i1, i2, i3 in T.grid(1, 64, 32, 32):
            with T.sblock("T_add_1"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(T_add[v_i0, v_i1, v_i2, v_i3])
                T.writes(T_add_1[v_i0, v_i1, v_i2, v_i3])
                T_add_1[v_i0, v_i1, v_i2, v_i3] = T_add[v_i0, v_i1, v_i2, v_i3] + T.float32(2.0)


@I.ir_module(s_tir=True)
class SeveralOutputsAfter:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((1, 64, 64, 64), "float32"), T_add: T.Buffer((1, 64, 32, 32), "float32"), T_add_1: T.Buffer((1, 64, 32, 32), "float32")):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        pool_max_local = T.sblock_alloc_buffer((1, 64, 32, 32), scope="local")
        x_local = T.sblock_alloc_buffer((1, 64, 64, 64), scope="local")
        for i0_i1_i2_i3_fused_0 in T.thread_binding(256, thread="blockIdx.x"):
            for i0_i1_i2_i3_fused_1 in T.thread_binding(256, thread="threadIdx.x"):
                for ax0, ax1, ax2, ax3_0 in T.grid(1, 1, 2, 1):
                    for ax3_1 in T.vectorized(2):
                        with T.sblock("x_local"):
                            v0 = T.axis.spatial(1, ax0)
                            v1 = T.axis.spatial(64, i0_i1_i2_i3_fused_0 // 4 + ax1)
                            v2 = T.axis.spatial(64, i0_i1_i2_i3_fused_0 % 4 * 16 + i0_i1_i2_i3_fused_1 // 32 * 2 + ax2)
                            v3 = T.axis.spatial(64, i0_i1_i2_i3_fused_1 % 32 * 2 + ax3_0 * 2 + ax3_1)
                            T.reads(x[v0, v1, v2, v3])
                            T.writes(x_local[v0, v1, v2, v3])
                            x_local[v0, v1, v2, v3] = x[v0, v1, v2, v3]
                for ax0 in T.unroll(1):
                    for ax1 in T.unroll(1):
                        for ax2 in T.unroll(1):
                            for ax3 in T.unroll(1):
                                for ax4 in T.unroll(2):
                                    for ax5 in T.unroll(2):
                                        with T.sblock("pool_max"):
                                            v_n = T.axis.spatial(1, ax0)
                                            v_c = T.axis.spatial(64, i0_i1_i2_i3_fused_0 // 4 + ax1)
                                            v_h = T.axis.spatial(32, i0_i1_i2_i3_fused_0 % 4 * 8 + i0_i1_i2_i3_fused_1 // 32 + ax2)
                                            v_w = T.axis.spatial(32, i0_i1_i2_i3_fused_1 % 32 + ax3)
                                            v_rh, v_rw = T.axis.remap("RR", [ax4, ax5])
                                            T.reads(x_local[v_n, v_c, v_h * 2 + v_rh, v_w * 2 + v_rw])
                                            T.writes(pool_max_local[v_n, v_c, v_h, v_w])
                                            with T.init():
                                                pool_max_local[v_n, v_c, v_h, v_w] = T.float32(-340282346638528859811704183484516925440.0)
                                            pool_max_local[v_n, v_c, v_h, v_w] = T.max(pool_max_local[v_n, v_c, v_h, v_w], x_local[v_n, v_c, v_h * 2 + v_rh, v_w * 2 + v_rw])
                with T.sblock("T_add"):
                    v_i0 = T.axis.spatial(1, 0)
                    v_i1 = T.axis.spatial(64, (i0_i1_i2_i3_fused_0 * 256 + i0_i1_i2_i3_fused_1) // 1024)
                    v_i2 = T.axis.spatial(32, (i0_i1_i2_i3_fused_0 * 256 + i0_i1_i2_i3_fused_1) % 1024 // 32)
                    v_i3 = T.axis.spatial(32, (i0_i1_i2_i3_fused_0 * 256 + i0_i1_i2_i3_fused_1) % 32)
                    T.reads(pool_max_local[v_i0, v_i1, v_i2, v_i3])
                    T.writes(T_add[v_i0, v_i1, v_i2, v_i3])
                    T_add[v_i0, v_i1, v_i2, v_i3] = pool_max_local[v_i0, v_i1, v_i2, v_i3] + T.float32(1.0)
                for ax0 in T.unroll(1):
                    for ax1 in T.unroll(1):
                        for ax2 in T.unroll(1):
                            for ax3 in T.unroll(1):
                                with T.sblock("T_add_1"):
                                    v_i0 = T.axis.spatial(1, ax0)
                                    v_i1 = T.axis.spatial(64, i0_i1_i2_i3_fused_0 // 4 + ax1)
                                    v_i2 = T.axis.spatial(32, i0_i1_i2_i3_fused_0 % 4 * 8 + i0_i1_i2_i3_fused_1 // 32 + ax2)
                                    v_i3 = T.axis.spatial(32, i0_i1_i2_i3_fused_1 % 32 + ax3)
                                    T.reads(T_add[v_i0, v_i1, v_i2, v_i3])
                                    T.writes(T_add_1[v_i0, v_i1, v_i2, v_i3])
                                    T_add_1[v_i0, v_i1, v_i2, v_i3] = T_add[v_i0, v_i1, v_i2, v_i3] + T.float32(2.0)


# Depthwise Conv2d 3x3 + BatchNorm (decomposed for inference) + ReLU6 (MobileNetV2):
# the same schedule for a convolution's window, its epilogue in place.
@I.ir_module(s_tir=True)
class DepthwiseConvEpilogueBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), weight: T.Buffer((T.int64(64), T.int64(1), T.int64(3), T.int64(3)), "float32"), mean: T.Buffer((T.int64(64),), "float32"), var: T.Buffer((T.int64(64),), "float32"), gamma: T.Buffer((T.int64(64),), "float32"), beta: T.Buffer((T.int64(64),), "float32"), compute_intermediate_1: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(66), T.int64(66)))
        group_conv2d_nchw_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)))
        expand_dims_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(1), T.int64(1)))
        T_subtract_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)))
        expand_dims_intermediate_1 = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(1), T.int64(1)))
        T_add_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(1), T.int64(1)))
        compute_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(1), T.int64(1)))
        T_divide_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)))
        expand_dims_intermediate_1_2 = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(1), T.int64(1)))
        T_multiply_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)))
        expand_dims_intermediate_1_2_3 = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(1), T.int64(1)))
        T_add_intermediate_1 = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)))
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(66), T.int64(66)):
            with T.sblock("pad_temp"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(x[v_i0, v_i1, v_i2 - T.int64(1), v_i3 - T.int64(1)])
                T.writes(pad_temp[v_i0, v_i1, v_i2, v_i3])
                pad_temp[v_i0, v_i1, v_i2, v_i3] = T.if_then_else(T.int64(1) <= v_i2 and v_i2 < T.int64(65) and T.int64(1) <= v_i3 and v_i3 < T.int64(65), x[v_i0, v_i1, v_i2 - T.int64(1), v_i3 - T.int64(1)], T.float32(0.0))
        for nn, ff, yy, xx, rc, ry, rx in T.grid(T.int64(1), T.int64(64), T.int64(64), T.int64(64), T.int64(1), T.int64(3), T.int64(3)):
            with T.sblock("group_conv2d_nchw"):
                v_nn, v_ff, v_yy, v_xx, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [nn, ff, yy, xx, rc, ry, rx])
                T.reads(pad_temp[v_nn, v_ff + v_rc, v_yy + v_ry, v_xx + v_rx], weight[v_ff, v_rc, v_ry, v_rx])
                T.writes(group_conv2d_nchw_intermediate[v_nn, v_ff, v_yy, v_xx])
                with T.init():
                    group_conv2d_nchw_intermediate[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                group_conv2d_nchw_intermediate[v_nn, v_ff, v_yy, v_xx] = group_conv2d_nchw_intermediate[v_nn, v_ff, v_yy, v_xx] + pad_temp[v_nn, v_ff + v_rc, v_yy + v_ry, v_xx + v_rx] * weight[v_ff, v_rc, v_ry, v_rx]
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(1), T.int64(1)):
            with T.sblock("expand_dims"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(mean[v_i1])
                T.writes(expand_dims_intermediate[v_i0, v_i1, v_i2, v_i3])
                expand_dims_intermediate[v_i0, v_i1, v_i2, v_i3] = mean[v_i1]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(64), T.int64(64), T.int64(64)):
            with T.sblock("T_subtract"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(group_conv2d_nchw_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], expand_dims_intermediate[v_ax0, v_ax1, T.int64(0), T.int64(0)])
                T.writes(T_subtract_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T_subtract_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = group_conv2d_nchw_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] - expand_dims_intermediate[v_ax0, v_ax1, T.int64(0), T.int64(0)]
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(1), T.int64(1)):
            with T.sblock("expand_dims1"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(var[v_i1])
                T.writes(expand_dims_intermediate_1[v_i0, v_i1, v_i2, v_i3])
                expand_dims_intermediate_1[v_i0, v_i1, v_i2, v_i3] = var[v_i1]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(64), T.int64(1), T.int64(1)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(expand_dims_intermediate_1[v_ax0, v_ax1, v_ax2, v_ax3])
                T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = expand_dims_intermediate_1[v_ax0, v_ax1, v_ax2, v_ax3] + T.float32(9.9999997473787516e-06)
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(1), T.int64(1)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(T_add_intermediate[v_i0, v_i1, v_i2, v_i3])
                T.writes(compute_intermediate[v_i0, v_i1, v_i2, v_i3])
                compute_intermediate[v_i0, v_i1, v_i2, v_i3] = T.sqrt(T_add_intermediate[v_i0, v_i1, v_i2, v_i3])
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(64), T.int64(64), T.int64(64)):
            with T.sblock("T_divide"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_subtract_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], compute_intermediate[v_ax0, v_ax1, T.int64(0), T.int64(0)])
                T.writes(T_divide_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T_divide_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T_subtract_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] / compute_intermediate[v_ax0, v_ax1, T.int64(0), T.int64(0)]
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(1), T.int64(1)):
            with T.sblock("expand_dims2"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(gamma[v_i1])
                T.writes(expand_dims_intermediate_1_2[v_i0, v_i1, v_i2, v_i3])
                expand_dims_intermediate_1_2[v_i0, v_i1, v_i2, v_i3] = gamma[v_i1]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(64), T.int64(64), T.int64(64)):
            with T.sblock("T_multiply"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_divide_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], expand_dims_intermediate_1_2[v_ax0, v_ax1, T.int64(0), T.int64(0)])
                T.writes(T_multiply_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T_multiply_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T_divide_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] * expand_dims_intermediate_1_2[v_ax0, v_ax1, T.int64(0), T.int64(0)]
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(1), T.int64(1)):
            with T.sblock("expand_dims3"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(beta[v_i1])
                T.writes(expand_dims_intermediate_1_2_3[v_i0, v_i1, v_i2, v_i3])
                expand_dims_intermediate_1_2_3[v_i0, v_i1, v_i2, v_i3] = beta[v_i1]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(64), T.int64(64), T.int64(64)):
            with T.sblock("T_add1"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(T_multiply_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], expand_dims_intermediate_1_2_3[v_ax0, v_ax1, T.int64(0), T.int64(0)])
                T.writes(T_add_intermediate_1[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add_intermediate_1[v_ax0, v_ax1, v_ax2, v_ax3] = T_multiply_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] + expand_dims_intermediate_1_2_3[v_ax0, v_ax1, T.int64(0), T.int64(0)]
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(64), T.int64(64), T.int64(64)):
            with T.sblock("compute1"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(T_add_intermediate_1[v_i0, v_i1, v_i2, v_i3])
                T.writes(compute_intermediate_1[v_i0, v_i1, v_i2, v_i3])
                compute_intermediate_1[v_i0, v_i1, v_i2, v_i3] = T.max(T.min(T_add_intermediate_1[v_i0, v_i1, v_i2, v_i3], T.float32(6.0)), T.float32(0.0))


@I.ir_module(s_tir=True)
class DepthwiseConvEpilogueAfter:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), weight: T.Buffer((T.int64(64), T.int64(1), T.int64(3), T.int64(3)), "float32"), mean: T.Buffer((T.int64(64),), "float32"), var: T.Buffer((T.int64(64),), "float32"), gamma: T.Buffer((T.int64(64),), "float32"), beta: T.Buffer((T.int64(64),), "float32"), compute_intermediate_1: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32")):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        group_conv2d_nchw_intermediate_local = T.sblock_alloc_buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), scope="local")
        for i0_i1_i2_0_i3_fused_0 in T.thread_binding(T.int64(512), thread="blockIdx.x"):
            for i0_i1_i2_0_i3_fused_1 in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                for ax0 in T.unroll(T.int64(1)):
                    for ax1 in T.unroll(T.int64(1)):
                        for ax2 in T.unroll(T.int64(2)):
                            for ax3 in T.unroll(T.int64(1)):
                                for ax4 in T.unroll(T.int64(1)):
                                    for ax5 in T.unroll(T.int64(3)):
                                        for ax6 in T.unroll(T.int64(3)):
                                            with T.sblock("group_conv2d_nchw"):
                                                v_nn = T.axis.spatial(T.int64(1), ax0)
                                                v_ff = T.axis.spatial(T.int64(64), i0_i1_i2_0_i3_fused_0 // T.int64(8) + ax1)
                                                v_yy = T.axis.spatial(T.int64(64), i0_i1_i2_0_i3_fused_0 % T.int64(8) * T.int64(8) + i0_i1_i2_0_i3_fused_1 // T.int64(64) * T.int64(2) + ax2)
                                                v_xx = T.axis.spatial(T.int64(64), i0_i1_i2_0_i3_fused_1 % T.int64(64) + ax3)
                                                v_rc, v_ry, v_rx = T.axis.remap("RRR", [ax4, ax5, ax6])
                                                T.reads(x[v_nn, v_ff + v_rc, v_yy + v_ry - T.int64(1), v_xx + v_rx - T.int64(1)], weight[v_ff, v_rc, v_ry, v_rx])
                                                T.writes(group_conv2d_nchw_intermediate_local[v_nn, v_ff, v_yy, v_xx])
                                                with T.init():
                                                    group_conv2d_nchw_intermediate_local[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                                                group_conv2d_nchw_intermediate_local[v_nn, v_ff, v_yy, v_xx] = group_conv2d_nchw_intermediate_local[v_nn, v_ff, v_yy, v_xx] + T.if_then_else(T.int64(1) <= v_yy + v_ry and v_yy + v_ry < T.int64(65) and T.int64(1) <= v_xx + v_rx and v_xx + v_rx < T.int64(65), x[v_nn, v_ff + v_rc, v_yy + v_ry - T.int64(1), v_xx + v_rx - T.int64(1)], T.float32(0.0)) * weight[v_ff, v_rc, v_ry, v_rx]
                for i2_1 in T.unroll(T.int64(2)):
                    with T.sblock("compute1"):
                        v_i0 = T.axis.spatial(T.int64(1), T.int64(0))
                        v_i1 = T.axis.spatial(T.int64(64), (i0_i1_i2_0_i3_fused_0 * T.int64(256) + i0_i1_i2_0_i3_fused_1) // T.int64(2048))
                        v_i2 = T.axis.spatial(T.int64(64), (i0_i1_i2_0_i3_fused_0 * T.int64(256) + i0_i1_i2_0_i3_fused_1) % T.int64(2048) // T.int64(64) * T.int64(2) + i2_1)
                        v_i3 = T.axis.spatial(T.int64(64), (i0_i1_i2_0_i3_fused_0 * T.int64(256) + i0_i1_i2_0_i3_fused_1) % T.int64(64))
                        T.reads(group_conv2d_nchw_intermediate_local[v_i0, v_i1, v_i2, v_i3], mean[v_i1], var[v_i1], gamma[v_i1], beta[v_i1])
                        T.writes(compute_intermediate_1[v_i0, v_i1, v_i2, v_i3])
                        compute_intermediate_1[v_i0, v_i1, v_i2, v_i3] = T.max(T.min((group_conv2d_nchw_intermediate_local[v_i0, v_i1, v_i2, v_i3] - mean[v_i1]) / T.sqrt(var[v_i1] + T.float32(9.9999997473787516e-06)) * gamma[v_i1] + beta[v_i1], T.float32(6.0)), T.float32(0.0))


# Depthwise Conv2d 5x5 with nothing after it and no padding (NASNet's, padded apart):
# Reduction would give each output a block of 16 threads; the value is kept in a
# register and copied out.
@I.ir_module(s_tir=True)
class LoneDepthwiseConvBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(32), T.int64(36), T.int64(36)), "float32"), weight: T.Buffer((T.int64(32), T.int64(1), T.int64(5), T.int64(5)), "float32"), group_conv2d_nchw: T.Buffer((T.int64(1), T.int64(32), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"op_pattern": 4, "tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(32), T.int64(36), T.int64(36)))
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(32), T.int64(36), T.int64(36)):
            with T.sblock("pad_temp"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(x[v_i0, v_i1, v_i2, v_i3])
                T.writes(pad_temp[v_i0, v_i1, v_i2, v_i3])
                pad_temp[v_i0, v_i1, v_i2, v_i3] = x[v_i0, v_i1, v_i2, v_i3]
        for nn, ff, yy, xx, rc, ry, rx in T.grid(T.int64(1), T.int64(32), T.int64(32), T.int64(32), T.int64(1), T.int64(5), T.int64(5)):
            with T.sblock("group_conv2d_nchw"):
                v_nn, v_ff, v_yy, v_xx, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [nn, ff, yy, xx, rc, ry, rx])
                T.reads(pad_temp[v_nn, v_ff + v_rc, v_yy + v_ry, v_xx + v_rx], weight[v_ff, v_rc, v_ry, v_rx])
                T.writes(group_conv2d_nchw[v_nn, v_ff, v_yy, v_xx])
                with T.init():
                    group_conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                group_conv2d_nchw[v_nn, v_ff, v_yy, v_xx] = group_conv2d_nchw[v_nn, v_ff, v_yy, v_xx] + pad_temp[v_nn, v_ff + v_rc, v_yy + v_ry, v_xx + v_rx] * weight[v_ff, v_rc, v_ry, v_rx]


@I.ir_module(s_tir=True)
class LoneDepthwiseConvAfter:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(32), T.int64(36), T.int64(36)), "float32"), weight: T.Buffer((T.int64(32), T.int64(1), T.int64(5), T.int64(5)), "float32"), group_conv2d_nchw: T.Buffer((T.int64(1), T.int64(32), T.int64(32), T.int64(32)), "float32")):
        T.func_attr({"op_pattern": 4, "tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        group_conv2d_nchw_local = T.sblock_alloc_buffer((T.int64(1), T.int64(32), T.int64(32), T.int64(32)), scope="local")
        for ax0_ax1_ax2_ax3_fused_0 in T.thread_binding(T.int64(256), thread="blockIdx.x"):
            for ax0_ax1_ax2_ax3_fused_1 in T.thread_binding(T.int64(128), thread="threadIdx.x"):
                for ax0 in T.unroll(T.int64(1)):
                    for ax1 in T.unroll(T.int64(1)):
                        for ax2 in T.unroll(T.int64(1)):
                            for ax3 in T.unroll(T.int64(1)):
                                for ax4 in T.unroll(T.int64(1)):
                                    for ax5 in T.unroll(T.int64(5)):
                                        for ax6 in T.unroll(T.int64(5)):
                                            with T.sblock("group_conv2d_nchw"):
                                                v_nn = T.axis.spatial(T.int64(1), ax0)
                                                v_ff = T.axis.spatial(T.int64(32), ax0_ax1_ax2_ax3_fused_0 // T.int64(8) + ax1)
                                                v_yy = T.axis.spatial(T.int64(32), ax0_ax1_ax2_ax3_fused_0 % T.int64(8) * T.int64(4) + ax0_ax1_ax2_ax3_fused_1 // T.int64(32) + ax2)
                                                v_xx = T.axis.spatial(T.int64(32), ax0_ax1_ax2_ax3_fused_1 % T.int64(32) + ax3)
                                                v_rc, v_ry, v_rx = T.axis.remap("RRR", [ax4, ax5, ax6])
                                                T.reads(x[v_nn, v_ff + v_rc, v_yy + v_ry, v_xx + v_rx], weight[v_ff, v_rc, v_ry, v_rx])
                                                T.writes(group_conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx])
                                                with T.init():
                                                    group_conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] = T.float32(0.0)
                                                group_conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] = group_conv2d_nchw_local[v_nn, v_ff, v_yy, v_xx] + x[v_nn, v_ff + v_rc, v_yy + v_ry, v_xx + v_rx] * weight[v_ff, v_rc, v_ry, v_rx]
                with T.sblock("group_conv2d_nchw_local"):
                    v0 = T.axis.spatial(T.int64(1), T.int64(0))
                    v1 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_ax3_fused_0 * T.int64(128) + ax0_ax1_ax2_ax3_fused_1) // T.int64(1024))
                    v2 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_ax3_fused_0 * T.int64(128) + ax0_ax1_ax2_ax3_fused_1) % T.int64(1024) // T.int64(32))
                    v3 = T.axis.spatial(T.int64(32), (ax0_ax1_ax2_ax3_fused_0 * T.int64(128) + ax0_ax1_ax2_ax3_fused_1) % T.int64(32))
                    T.reads(group_conv2d_nchw_local[v0, v1, v2, v3])
                    T.writes(group_conv2d_nchw[v0, v1, v2, v3])
                    group_conv2d_nchw[v0, v1, v2, v3] = group_conv2d_nchw_local[v0, v1, v2, v3]


# MaxPool2d 3x3, stride 2, padding 1 + ReLU in NHWC: consecutive threads take
# consecutive channels.
@I.ir_module(s_tir=True)
class NhwcBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), compute_intermediate: T.Buffer((T.int64(1), T.int64(32), T.int64(32), T.int64(64)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pad_temp = T.sblock_alloc_buffer((T.int64(1), T.int64(66), T.int64(66), T.int64(64)))
        pool_max_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(32), T.int64(32), T.int64(64)))
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(66), T.int64(66), T.int64(64)):
            with T.sblock("pad_temp"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(x[v_ax0, v_ax1 - T.int64(1), v_ax2 - T.int64(1), v_ax3])
                T.writes(pad_temp[v_ax0, v_ax1, v_ax2, v_ax3])
                pad_temp[v_ax0, v_ax1, v_ax2, v_ax3] = T.if_then_else(T.int64(1) <= v_ax1 and v_ax1 < T.int64(65) and T.int64(1) <= v_ax2 and v_ax2 < T.int64(65), x[v_ax0, v_ax1 - T.int64(1), v_ax2 - T.int64(1), v_ax3], T.float32(-340282346638528859811704183484516925440.0))
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(32), T.int64(32), T.int64(64), T.int64(3), T.int64(3)):
            with T.sblock("pool_max"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(pad_temp[v_ax0, v_ax1 * T.int64(2) + v_rv0, v_ax2 * T.int64(2) + v_rv1, v_ax3])
                T.writes(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                with T.init():
                    pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max_intermediate[v_ax0, v_ax1, v_ax2, v_ax3], pad_temp[v_ax0, v_ax1 * T.int64(2) + v_rv0, v_ax2 * T.int64(2) + v_rv1, v_ax3])
        for i0, i1, i2, i3 in T.grid(T.int64(1), T.int64(32), T.int64(32), T.int64(64)):
            with T.sblock("compute"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(pool_max_intermediate[v_i0, v_i1, v_i2, v_i3])
                T.writes(compute_intermediate[v_i0, v_i1, v_i2, v_i3])
                compute_intermediate[v_i0, v_i1, v_i2, v_i3] = T.max(pool_max_intermediate[v_i0, v_i1, v_i2, v_i3], T.float32(0.0))


@I.ir_module(s_tir=True)
class NhwcAfter:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(64), T.int64(64), T.int64(64)), "float32"), compute_intermediate: T.Buffer((T.int64(1), T.int64(32), T.int64(32), T.int64(64)), "float32")):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        # with T.sblock("root"):
        pool_max_intermediate_local = T.sblock_alloc_buffer((T.int64(1), T.int64(32), T.int64(32), T.int64(64)), scope="local")
        for i0_i1_i2_i3_fused_0 in T.thread_binding(T.int64(256), thread="blockIdx.x"):
            for i0_i1_i2_i3_fused_1 in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                for ax0 in T.unroll(T.int64(1)):
                    for ax1 in T.unroll(T.int64(1)):
                        for ax2 in T.unroll(T.int64(1)):
                            for ax3 in T.unroll(T.int64(1)):
                                for ax4 in T.unroll(T.int64(3)):
                                    for ax5 in T.unroll(T.int64(3)):
                                        with T.sblock("pool_max"):
                                            v_ax0 = T.axis.spatial(T.int64(1), ax0)
                                            v_ax1 = T.axis.spatial(T.int64(32), i0_i1_i2_i3_fused_0 // T.int64(8) + ax1)
                                            v_ax2 = T.axis.spatial(T.int64(32), i0_i1_i2_i3_fused_0 % T.int64(8) * T.int64(4) + i0_i1_i2_i3_fused_1 // T.int64(64) + ax2)
                                            v_ax3 = T.axis.spatial(T.int64(64), i0_i1_i2_i3_fused_1 % T.int64(64) + ax3)
                                            v_rv0, v_rv1 = T.axis.remap("RR", [ax4, ax5])
                                            T.reads(x[v_ax0, v_ax1 * T.int64(2) + v_rv0 - T.int64(1), v_ax2 * T.int64(2) + v_rv1 - T.int64(1), v_ax3])
                                            T.writes(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3])
                                            T.sblock_attr({"schedule_rule": "meta_schedule.pool_max"})
                                            with T.init():
                                                pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-340282346638528859811704183484516925440.0)
                                            pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max_intermediate_local[v_ax0, v_ax1, v_ax2, v_ax3], T.if_then_else(T.int64(1) <= v_ax1 * T.int64(2) + v_rv0 and v_ax1 * T.int64(2) + v_rv0 < T.int64(65) and T.int64(1) <= v_ax2 * T.int64(2) + v_rv1 and v_ax2 * T.int64(2) + v_rv1 < T.int64(65), x[v_ax0, v_ax1 * T.int64(2) + v_rv0 - T.int64(1), v_ax2 * T.int64(2) + v_rv1 - T.int64(1), v_ax3], T.float32(-340282346638528859811704183484516925440.0)))
                with T.sblock("compute"):
                    v_i0 = T.axis.spatial(T.int64(1), T.int64(0))
                    v_i1 = T.axis.spatial(T.int64(32), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) // T.int64(2048))
                    v_i2 = T.axis.spatial(T.int64(32), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) % T.int64(2048) // T.int64(64))
                    v_i3 = T.axis.spatial(T.int64(64), (i0_i1_i2_i3_fused_0 * T.int64(256) + i0_i1_i2_i3_fused_1) % T.int64(64))
                    T.reads(pool_max_intermediate_local[v_i0, v_i1, v_i2, v_i3])
                    T.writes(compute_intermediate[v_i0, v_i1, v_i2, v_i3])
                    compute_intermediate[v_i0, v_i1, v_i2, v_i3] = T.max(pool_max_intermediate_local[v_i0, v_i1, v_i2, v_i3], T.float32(0.0))


# AvgPool2d 1x1: nothing is reduced, the rule leaves it to Fallback.
@I.ir_module(s_tir=True)
class Window1DeclinedBefore:
    @T.prim_func(s_tir=True)
    def main(x: T.Buffer((T.int64(1), T.int64(8), T.int64(6), T.int64(6)), "float32"), T_add_intermediate: T.Buffer((T.int64(1), T.int64(8), T.int64(6), T.int64(6)), "float32")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        pool_sum = T.sblock_alloc_buffer((T.int64(1), T.int64(8), T.int64(6), T.int64(6)))
        pool_avg_intermediate = T.sblock_alloc_buffer((T.int64(1), T.int64(8), T.int64(6), T.int64(6)))
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(T.int64(1), T.int64(8), T.int64(6), T.int64(6), T.int64(1), T.int64(1)):
            with T.sblock("pool_sum"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(x[v_ax0, v_ax1, v_ax2 + v_rv0, v_ax3 + v_rv1])
                T.writes(pool_sum[v_ax0, v_ax1, v_ax2, v_ax3])
                with T.init():
                    pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(0.0)
                pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] + x[v_ax0, v_ax1, v_ax2 + v_rv0, v_ax3 + v_rv1]
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(8), T.int64(6), T.int64(6)):
            with T.sblock("pool_avg"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(pool_sum[v_ax0, v_ax1, v_ax2, v_ax3])
                T.writes(pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T.sblock_attr({"schedule_rule": "meta_schedule.pool_avg"})
                pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = pool_sum[v_ax0, v_ax1, v_ax2, v_ax3] / T.Cast("float32", T.max((T.min(T.int64(0), T.int64(5) - v_ax2) + T.int64(1) - T.max(T.int64(0) - v_ax2, T.int64(0))) * (T.min(T.int64(0), T.int64(5) - v_ax3) + T.int64(1) - T.max(T.int64(0) - v_ax3, T.int64(0))), T.int64(1)))
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(1), T.int64(8), T.int64(6), T.int64(6)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T.writes(T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] = pool_avg_intermediate[v_ax0, v_ax1, v_ax2, v_ax3] + T.float32(1.0)


# A batch of symbolic size: the launch cannot be sized from it, the rule declines.
@I.ir_module(s_tir=True)
class SymbolicShapeBefore:
    @T.prim_func(s_tir=True)
    def main(p_x: T.handle, p_out: T.handle):
        T.func_attr({"tirx.noalias": True})
        n = T.int64()
        x = T.match_buffer(p_x, (n, T.int64(8), T.int64(16), T.int64(16)))
        T_add = T.match_buffer(p_out, (n, T.int64(8), T.int64(8), T.int64(8)))
        # with T.sblock("root"):
        pool_max = T.sblock_alloc_buffer((n, T.int64(8), T.int64(8), T.int64(8)))
        for ax0, ax1, ax2, ax3, rv0, rv1 in T.grid(n, T.int64(8), T.int64(8), T.int64(8), T.int64(2), T.int64(2)):
            with T.sblock("pool_max"):
                v_ax0, v_ax1, v_ax2, v_ax3, v_rv0, v_rv1 = T.axis.remap("SSSSRR", [ax0, ax1, ax2, ax3, rv0, rv1])
                T.reads(x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
                T.writes(pool_max[v_ax0, v_ax1, v_ax2, v_ax3])
                with T.init():
                    pool_max[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(-3.4028234663852886e38)
                pool_max[v_ax0, v_ax1, v_ax2, v_ax3] = T.max(pool_max[v_ax0, v_ax1, v_ax2, v_ax3], x[v_ax0, v_ax1, v_ax2 * T.int64(2) + v_rv0, v_ax3 * T.int64(2) + v_rv1])
        for ax0, ax1, ax2, ax3 in T.grid(n, T.int64(8), T.int64(8), T.int64(8)):
            with T.sblock("T_add"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(pool_max[v_ax0, v_ax1, v_ax2, v_ax3])
                T.writes(T_add[v_ax0, v_ax1, v_ax2, v_ax3])
                T_add[v_ax0, v_ax1, v_ax2, v_ax3] = pool_max[v_ax0, v_ax1, v_ax2, v_ax3] + T.float32(1.0)
# fmt: on


@pytest.mark.parametrize(
    "before, after",
    [
        pytest.param(MaxPoolAddBefore, MaxPoolAddAfter, id="max_pool_add"),
        pytest.param(PaddedMaxPoolBefore, PaddedMaxPoolAfter, id="padded_max_pool"),
        pytest.param(OverlappingWindowsBefore, OverlappingWindowsAfter, id="overlapping_windows"),
        pytest.param(AveragePoolBefore, AveragePoolAfter, id="average_pool"),
        pytest.param(SeveralOutputsBefore, SeveralOutputsAfter, id="several_outputs"),
        pytest.param(
            DepthwiseConvEpilogueBefore, DepthwiseConvEpilogueAfter, id="depthwise_conv_epilogue"
        ),
        pytest.param(LoneDepthwiseConvBefore, LoneDepthwiseConvAfter, id="lone_depthwise_conv"),
        pytest.param(NhwcBefore, NhwcAfter, id="nhwc"),
    ],
)
def test_scheduled(before, after):
    assert_structural_equal(_schedule(before), after)


@pytest.mark.parametrize(
    "before",
    [
        pytest.param(Window1DeclinedBefore, id="window_1_declined"),
        pytest.param(SymbolicShapeBefore, id="symbolic_shape"),
    ],
)
def test_declined(before):
    unchanged = tvm.ir.load_json(tvm.ir.save_json(before))
    assert_structural_equal(_schedule(before), unchanged)


def test_issue_graph_gets_one_thread_per_output():
    # apache/tvm#20401's graph through the default CUDA pipeline (no GPU needed): the fused
    # MaxPool2d 2x2 + Add launches one thread per output, not a block of threads per output.
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((1, 64, 64, 64), "float32")):
            with R.dataflow():
                pool = R.nn.max_pool2d(x, pool_size=[2, 2], strides=[2, 2])
                out = R.add(pool, R.const(1, "float32"))
                R.output(out)
            return out

    with TARGET:
        mod = cuda_pipeline.get_default_pipeline(TARGET)(Module)
    (kernel,) = [func for func in mod.functions.values() if isinstance(func, tirx.PrimFunc)]
    binding = r'thread_binding\((?:T\.int64\()?(\d+)\)?, thread="(\w+)\.x"'
    launch = {thread: int(extent) for extent, thread in re.findall(binding, kernel.script())}
    assert launch["blockIdx"] * launch["threadIdx"] == 64 * 32 * 32


def _max_pool_add():
    x = te.placeholder((1, 32, 64, 64), name="x")
    rh, rw = te.reduce_axis((0, 2), "rh"), te.reduce_axis((0, 2), "rw")
    pool = te.compute(
        (1, 32, 32, 32),
        lambda n, c, h, w: te.max(x[n, c, h * 2 + rh, w * 2 + rw], axis=[rh, rw]),
        "pool_max",
    )
    out = te.compute(pool.shape, lambda *i: pool(*i) + tirx.const(1, "float32"), "T_add")

    def reference(a):
        return a.reshape(1, 32, 32, 2, 32, 2).max(axis=(3, 5)) + 1

    return te.create_prim_func([x, out]), (1, 32, 64, 64), reference


def _avg_pool_relu():
    # 35 rows of outputs, two per thread: the last row alone, under a predicate.
    x = te.placeholder((1, 64, 35, 35), name="x")
    padded = te.compute(
        (1, 64, 37, 37),
        lambda n, c, h, w: tirx.if_then_else(
            tirx.all(h >= 1, h < 36, w >= 1, w < 36),
            x[n, c, h - 1, w - 1],
            tirx.const(0, "float32"),
        ),
        "pad_temp",
    )
    rh, rw = te.reduce_axis((0, 3), "rh"), te.reduce_axis((0, 3), "rw")
    total = te.compute(
        (1, 64, 35, 35),
        lambda n, c, h, w: te.sum(padded[n, c, h + rh, w + rw], axis=[rh, rw]),
        "pool_sum",
    )
    out = te.compute(
        total.shape,
        lambda *i: tirx.max(total(*i) / tirx.const(9, "float32"), tirx.const(0, "float32")),
        "relu",
    )

    def reference(a):
        padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        total = sum(padded[:, :, i : i + 35, j : j + 35] for i in range(3) for j in range(3))
        return np.maximum(total / 9, 0)

    return te.create_prim_func([x, out]), (1, 64, 35, 35), reference


@pytest.mark.gpu
@pytest.mark.skipif(not env.has_cuda(), reason="need cuda")
@pytest.mark.parametrize("workload", [_max_pool_add, _avg_pool_relu])
def test_numerics_on_cuda(workload):
    func, shape, reference = workload()
    device = tvm.cuda()
    target = Target.from_device(device)
    with target:
        mod = dl.ApplyDefaultSchedule(dl.gpu.WindowReduction())(IRModule({"main": func}))
    assert mod["main"].attrs["tirx.is_scheduled"]
    kernel = tvm.compile(mod, target=target)
    data = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
    want = reference(data)
    got = tvm.runtime.empty(want.shape, "float32", device)
    kernel["main"](tvm.runtime.tensor(data, device), got)
    tvm.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    tvm.testing.main()
