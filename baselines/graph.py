"""The Relax module of a Case, built from TOPI computes exactly as the issue's TVMScript is."""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax, topi

from .case import Case


def float32_scalar(value: float) -> relax.Expr:
    """A 0-d float32 Relax constant, the one `relax.const(value, "float32")` makes, without the
    ml_dtypes import that `relax.const` does for NumPy's bfloat16 and float8 types (about 1 s of
    CPU of each process that builds a graph, `tuning.base.children.import_tvm`)."""
    data = tvm.runtime.tensor(np.array(value, "float32"))
    return tvm.ir.GenericConst(data, relax.TensorType((), "float32"))


def build_graph(case: Case, split_after_pool: bool = False) -> tvm.IRModule:
    """Return the Relax module for `case`.

    For the default Case this is structurally equal to the issue's module (tests hold it). With
    `split_after_pool` the pool's result leaves the dataflow block, the issue's PARTIAL.
    """
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(case.input_shape, "float32"))

    def add_one(value):
        # The bias stays a Relax constant, so TIR takes it as a 0-d buffer like the graph.
        return bb.emit_te(topi.add, value, float32_scalar(1), primfunc_name_hint="add")

    def concat(values):
        return bb.emit_te(topi.concatenate, values, 1, primfunc_name_hint="concatenate")

    def prelude_and_pool():
        # PARTIAL binds the pool to a non-dataflow var: FuseOps cannot fuse across it.
        """The pool, on the input or on the Case's prelude (branches of Adds joined by concats);
        with `split_after_pool` bound outside the dataflow block (PARTIAL)."""
        emit = bb.emit_output if split_after_pool else bb.emit
        pool_input = x
        if case.prelude:
            groups = []
            for _ in range(case.branches):
                leaves = [add_one(x) for _ in range(case.branches)]
                groups.append(add_one(concat(leaves)))
            pool_input = concat(groups)
        return emit(
            bb.call_te(
                topi.nn.pool2d,
                pool_input,
                (case.window, case.window),
                (case.stride, case.stride),
                (1, 1),
                (0, 0, 0, 0),
                "max",
                False,
                "NCHW",
                primfunc_name_hint="pool2d",
            )
        )

    def tail(pooled):
        outputs, value = [], pooled
        for _ in range(case.tail):
            value = add_one(value)
            outputs.append(value)
        result = relax.Tuple([outputs[0], outputs[-1]]) if case.shared_output else outputs[-1]
        return bb.emit_output(result)

    with bb.function("main", [x]):
        with bb.dataflow():
            result = tail(prelude_and_pool())
        bb.emit_func_output(result)
    return bb.get()


def _reduction_graph(shape, reduce) -> tvm.IRModule:
    """`reduce(x) + 1` as a Relax module: a reduction whose consumer is elementwise."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            reduced = bb.emit_te(reduce, x, primfunc_name_hint="reduce")
            out = bb.emit_output(
                bb.emit_te(topi.add, reduced, float32_scalar(1), primfunc_name_hint="add")
            )
        bb.emit_func_output(out)
    return bb.get()


# Graphs whose reduction a window rule must leave to the default rules, and one it may take.
REDUCTION_GRAPHS = {
    "global_avg_pool": lambda: _reduction_graph(
        (1, 16, 64, 64), lambda x: topi.nn.adaptive_pool(x, (1, 1), "avg")
    ),
    "long_sum": lambda: _reduction_graph(
        (1, 16, 64, 1024), lambda x: topi.sum(x, axis=3, keepdims=True)
    ),
    "softmax": lambda: _reduction_graph((1, 16, 64, 64), lambda x: topi.nn.softmax(x, axis=3)),
    "short_max": lambda: _reduction_graph(
        (1, 16, 64, 4), lambda x: topi.max(x, axis=3, keepdims=True)
    ),
}
