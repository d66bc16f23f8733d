"""The models `tune models` runs: each entry a spec, its options, and what it is there to show.

Kept as data so that the report can say why each model is in the list, and a run folder can
record the list it ran. Input sizes are the models' own (inception_v3's 299 from its weights'
description, timm's from `pretrained_cfg`), at batch 1 and float32.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model_spec import ModelOptions


@dataclass(frozen=True)
class CatalogEntry:
    spec: str
    options: ModelOptions
    shows: str

    @property
    def label(self) -> str:
        """The entry's name in reports: the spec, and "decomposed" where it is."""
        return f"{self.spec} (decomposed)" if self.options.decompose else self.spec

    def to_dict(self) -> dict:
        return {"spec": self.spec, "options": self.options.to_dict(), "shows": self.shows}


DECOMPOSED = ModelOptions(decompose=True)

BUILTIN_MODELS = (
    CatalogEntry(
        "torchvision:inception_v3",
        ModelOptions(),
        "padded 3x3 average pools: the legalized pad + sum + divide is a reduction with an "
        "epilogue without any fusion, given to GeneralReduction",
    ),
    CatalogEntry(
        "torchvision:convnext_tiny",
        ModelOptions(),
        "7x7 depthwise convolutions with their bias (window 49), given to GeneralReduction; "
        "the window rule takes them",
    ),
    CatalogEntry(
        "torchvision:mobilenet_v2",
        DECOMPOSED,
        "3x3 depthwise convolutions with BatchNorm and ReLU6 fused in once BatchNorm is decomposed",
    ),
    CatalogEntry(
        "torchvision:efficientnet_b0",
        DECOMPOSED,
        "3x3 and 5x5 depthwise convolutions with BatchNorm and SiLU fused in once BatchNorm "
        "is decomposed",
    ),
    CatalogEntry(
        "torchvision:densenet121",
        ModelOptions(),
        "2x2 average pools, given to Reduction: one block of 4 threads per output",
    ),
    CatalogEntry(
        "torchvision:resnet50",
        ModelOptions(),
        "control: expected to have no kernel with the pattern, and every kernel the same rule "
        "under both lists",
    ),
    CatalogEntry(
        "timm:legacy_xception",
        DECOMPOSED,
        "the issue's own fusion: padded 3x3 MaxPools fused with the residual Add once "
        "BatchNorm is decomposed",
    ),
    CatalogEntry(
        "timm:nasnetalarge",
        ModelOptions(),
        "average pools fused with Adds, under GeneralReduction and under Reduction, and "
        "depthwise convolutions under Reduction",
    ),
)
