"""Small `torch.nn` modules of the shapes the real networks have around the #20401 pattern:
what the model tests import, analyse and check where torchvision and timm cannot load. Each is
written as torchvision writes the block, with fewer channels and pixels, so that CPU builds
stay quick. Import it after `pytest.importorskip("torch")`.
"""

import torch
import torch.nn.functional as F
from torch import nn


class ConvBN(nn.Sequential):
    """torchvision's BasicConv2d / Conv2dNormActivation: conv without bias, BatchNorm, act."""

    def __init__(self, cin, cout, kernel, stride=1, groups=1, act=nn.ReLU):
        layers = [
            nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        super().__init__(*layers, *([act()] if act else []))


class InceptionBlock(nn.Module):
    """InceptionA's shape: 1x1, 5x5 and 3x3 branches, and the pool branch, a padded 3x3 average
    pool (count_include_pad=True, torchvision's) then a 1x1 conv; the branches concatenated."""

    def __init__(self, channels=8):
        super().__init__()
        self.branch1x1 = ConvBN(channels, 8, 1)
        self.branch5x5 = nn.Sequential(ConvBN(channels, 6, 1), ConvBN(6, 8, 5))
        self.branch3x3 = nn.Sequential(ConvBN(channels, 8, 1), ConvBN(8, 8, 3))
        self.branch_pool = ConvBN(channels, 4, 1)

    def forward(self, x):
        pooled = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        branches = [self.branch1x1(x), self.branch5x5(x), self.branch3x3(x)]
        return torch.cat([*branches, self.branch_pool(pooled)], 1)


class ConvNeXtBlock(nn.Module):
    """torchvision's CNBlock: 7x7 depthwise conv with bias, LayerNorm over channels (NHWC), MLP
    with GELU, layer scale, residual. 96 channels as convnext_tiny's first stage, so the
    LayerNorm's reduction (96 > the window limit) is the real one."""

    def __init__(self, channels=96):
        super().__init__()
        self.dwconv = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(channels, 4 * channels), nn.GELU(), nn.Linear(4 * channels, channels)
        )
        self.layer_scale = nn.Parameter(torch.full((channels, 1, 1), 0.5))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.mlp(self.norm(y)).permute(0, 3, 1, 2)
        return x + self.layer_scale * y


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expansion, 3x3 depthwise, each with BatchNorm and ReLU6; 1x1
    projection with BatchNorm; residual. 96 hidden channels, so the projection's reduction is
    larger than the window limit."""

    def __init__(self, channels=16, expand=6):
        super().__init__()
        hidden = channels * expand
        self.conv = nn.Sequential(
            ConvBN(channels, hidden, 1, act=nn.ReLU6),
            ConvBN(hidden, hidden, 3, groups=hidden, act=nn.ReLU6),
            ConvBN(hidden, channels, 1, act=None),
        )

    def forward(self, x):
        return x + self.conv(x)


class PoolResidual(nn.Module):
    """Xception's block exit: a padded 3x3 stride-2 MaxPool whose result is added to a strided
    1x1 conv's shortcut."""

    def __init__(self, channels=8):
        super().__init__()
        self.rep = ConvBN(channels, channels, 3)
        self.skip = ConvBN(channels, channels, 1, stride=2, act=None)

    def forward(self, x):
        return F.max_pool2d(self.rep(x), 3, 2, 1) + self.skip(x)


class DenseTransition(nn.Module):
    """DenseNet's _Transition: BatchNorm, ReLU, 1x1 conv, 2x2 average pool."""

    def __init__(self, cin=16, cout=8):
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.norm(x))), 2, 2)


def _randomized(module: nn.Module) -> nn.Module:
    """BatchNorms given random statistics and affine terms (fresh ones are the identity, which
    would hide a wrong BatchNorm from the numeric check)."""
    generator = torch.Generator().manual_seed(1)
    for norm in module.modules():
        if isinstance(norm, nn.BatchNorm2d):
            for buffer in (norm.running_mean, norm.weight, norm.bias):
                buffer.data = torch.randn(buffer.shape, generator=generator)
            norm.running_var.data = torch.rand(norm.running_var.shape, generator=generator) + 0.5
    return module


def _input(*shape):
    return torch.randn(shape, generator=torch.Generator().manual_seed(2))


# FILE.py:FUNCTION specs, as a user writes them: (module, example inputs).
def inception_block():
    return _randomized(InceptionBlock()), _input(1, 8, 12, 12)


def convnext_block():
    return ConvNeXtBlock(), _input(1, 96, 8, 8)


def inverted_residual():
    return _randomized(InvertedResidual()), _input(1, 16, 10, 10)


def pool_residual():
    return _randomized(PoolResidual()), _input(1, 8, 12, 12)


def dense_transition():
    return _randomized(DenseTransition()), _input(1, 16, 12, 12)
