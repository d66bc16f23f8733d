"""What `tune model SPEC` is asked for: the model and its options, checked before anything heavy
is imported, so that a typo costs no PyTorch start-up.

    torchvision:NAME      a torchvision model, random weights (`weights=None`)
    timm:NAME             a timm model, random weights (`pretrained=False`)
    FILE.py:FUNCTION      FUNCTION() in FILE.py returns (torch.nn.Module, example inputs)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .model_errors import ModelError

HUBS = ("torchvision", "timm")
FILE = "file"
# numpy has no bfloat16, and the inputs and the check go through numpy.
DTYPES = ("float32", "float16")
SPEC_FORMS = "torchvision:NAME, timm:NAME or FILE.py:FUNCTION"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed SPEC: `source` is a hub or "file"; `name` the model's or the function's."""

    source: str
    name: str
    path: str | None = None

    @property
    def text(self) -> str:
        return f"{self.path}:{self.name}" if self.source == FILE else f"{self.source}:{self.name}"

    def to_dict(self) -> dict:
        return {**asdict(self), "spec": self.text}


@dataclass(frozen=True)
class ModelOptions:
    """How the model is instantiated and imported.

    batch      the input's batch size; None: 1 (a FILE spec's own inputs fix it)
    size       the input's height and width; None: the model's own (a FILE spec's fix it)
    dtype      of the weights and floating inputs, in PyTorch and in TVM alike
    decompose  run `DecomposeOpsForInference` after the import, as
               `relax.get_pipeline("static_shape_tuning")` does first: inference BatchNorm
               becomes elementwise arithmetic, which FuseOps then fuses into the convolution
               that produces it (LayerNorm is left as it is)
    """

    batch: int | None = None
    size: int | None = None
    dtype: str = "float32"
    decompose: bool = False

    def __post_init__(self):
        for field in ("batch", "size"):
            value = getattr(self, field)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ModelError(f"model option {field} must be a positive integer, got {value!r}")
        if self.dtype not in DTYPES:
            raise ModelError(f"model option dtype must be one of {', '.join(DTYPES)}")

    def to_dict(self) -> dict:
        return asdict(self)


def parse_spec(text: str) -> ModelSpec:
    """`text` as a ModelSpec; a ModelError naming the accepted forms if it is none of them."""
    source, colon, name = text.partition(":")
    if colon and source in HUBS:
        if not name:
            raise ModelError(f"model spec {text!r} names no model: {source}:NAME")
        return ModelSpec(source, name)
    path, colon, function = text.rpartition(":")
    if not colon or not path.endswith(".py"):
        raise ModelError(f"model spec {text!r} is not one of {SPEC_FORMS}")
    if not function.isidentifier():
        raise ModelError(f"model spec {text!r}: {function!r} is not a Python function name")
    return ModelSpec(FILE, function, path)
