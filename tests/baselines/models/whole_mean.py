"""A user's network whose forward ends in a whole-tensor `mean`, which TVM's default CUDA rules
cannot schedule (apache/tvm#20061): a stem conv, a padded average pool, a depthwise conv, a
MaxPool + Add, then `.mean()` of the whole output. A FILE.py:FUNCTION spec for the tests."""

import torch
import torch.nn.functional as F
from torch import nn


class WholeMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x):
        y = self.depthwise(F.avg_pool2d(self.stem(x), 3, 1, 1))
        return (y + F.max_pool2d(y, 3, 1, 1)).mean()


def make():
    return WholeMean(), (torch.randn(1, 3, 16, 16),)
