"""The GEMM a TVM matmul kernel computes, read off real CPU-built kernels of small torch models:
a Linear on a 4-D input (convnext's MLP, bias fused), a batched matmul, and kernels that are no
GEMM, left unread with why."""

import pytest

from pool_fusion_tuning.baselines.models.gemm_shape import (
    GemmShape,
    GemmShapeUnread,
    gemm_shape,
)
from pool_fusion_tuning.baselines.models.importer import prepare_model
from pool_fusion_tuning.baselines.models.kernels import unscheduled_kernels
from pool_fusion_tuning.baselines.models.model_spec import ModelOptions
from pool_fusion_tuning.baselines.pipeline import make_target

pytestmark = pytest.mark.torch


def _kernels(spec: str) -> dict:
    model = prepare_model(f"tests/fixtures/model_blocks.py:{spec}", ModelOptions())
    return unscheduled_kernels(model.mod, make_target("cuda"))


@pytest.fixture(scope="module")
def convnext():
    return _kernels("convnext_block")


def test_a_linear_on_a_4d_input_is_m_x_n_x_k_with_its_bias(convnext):
    # ConvNeXtBlock: 96 channels on 8 x 8 pixels, the MLP 96 -> 384 -> 96, each with a bias
    shapes = {name: gemm_shape(f) for name, f in convnext.items() if "matmul" in name}
    assert sorted(shapes.values(), key=lambda s: s.n) == [
        GemmShape(m=64, n=96, k=384, batch=None, bias=True),
        GemmShape(m=64, n=384, k=96, batch=None, bias=True),
    ]


def test_a_batched_matmul_is_b_x_m_x_n_x_k_without_a_bias():
    kernels = _kernels("batched_matmul")
    (name,) = [name for name in kernels if "matmul" in name]
    # bmm(q[4, 5, 8], k[4, 7, 8].transpose(1, 2)) * 0.5: the scale is no bias
    assert gemm_shape(kernels[name]) == GemmShape(m=5, n=7, k=8, batch=4, bias=False)


def test_a_kernel_that_is_no_gemm_is_not_read_and_says_why(convnext):
    conv = next(f for name, f in convnext.items() if "conv2d" in name)
    with pytest.raises(GemmShapeUnread, match="not one reduction axis"):
        gemm_shape(conv)  # a depthwise 7x7: reduced over its window's two axes
    norm = next(f for name, f in convnext.items() if "layer_norm" in name)
    with pytest.raises(GemmShapeUnread, match="2 reduction blocks"):
        gemm_shape(norm)
    elementwise = next(f for name, f in convnext.items() if "gelu" in name)
    with pytest.raises(GemmShapeUnread, match="0 reduction blocks"):
        gemm_shape(elementwise)
