"""The PyTorch side of a spec: the module in eval mode and its example inputs.

Weights are random (no download) and drawn after `torch.manual_seed(WEIGHT_SEED)`, so every process
loading a spec gets the same model. torch, torchvision and timm are imported here, when a spec needs
them.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from .fence import user_code
from .model_errors import MissingPackage, ModelError, UnknownModel, first_line
from .model_spec import FILE, ModelOptions, ModelSpec

if TYPE_CHECKING:
    import torch

WEIGHT_SEED = 0
INPUT_SEED = 0
# A hub model's input size when its own is not known (torchvision's default crop).
DEFAULT_SIZE = 224
CLOSE_MATCHES = 5
# The largest Python file of a model imported (a file of weights in source is a mistake).
LARGEST_SOURCE = 16 * 2**20


@dataclass
class LoadedModel:
    """`module` in eval mode, with `inputs` a tuple of example tensors it is exported with."""

    spec: ModelSpec
    options: ModelOptions
    module: torch.nn.Module
    inputs: tuple

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        """Inputs for a check or a timing: floating ones drawn from N(0, 1) by `seed`; others
        (indices, masks) the example's, as no draw is known valid for them."""
        rng = np.random.default_rng(seed)
        return [
            rng.standard_normal(x.shape).astype(str(x.dtype).removeprefix("torch."))
            if x.is_floating_point()
            else x.numpy()
            for x in self.inputs
        ]


def require(package: str, needed_by: str) -> ModuleType:
    """Import `package`, or a MissingPackage saying what needs it and how to install it."""
    try:
        return importlib.import_module(package)
    except ImportError:
        raise MissingPackage(f"{needed_by} needs {package}: pip install {package}") from None
    except Exception as error:  # any failure at import time: the package is unusable here
        # A torchvision built for another torch fails at import with a RuntimeError
        # ("operator torchvision::nms does not exist"): PyPI's torchvision on a CPU torch.
        raise MissingPackage(
            f"{needed_by} needs {package}, which is installed but cannot be imported "
            f"({first_line(error)}); install the {package} built for this torch"
        ) from None


def load_model(spec: ModelSpec, options: ModelOptions) -> LoadedModel:
    """The spec's module with seeded random weights, in `options.dtype` and eval mode, and its
    example inputs: a hub model's one image batch from N(0, 1), a FILE spec's own."""
    torch = require("torch", spec.text)
    dtype = getattr(torch, options.dtype)
    torch.manual_seed(WEIGHT_SEED)
    if spec.source == FILE:
        module, inputs = _from_file(spec, options)
    else:
        module, channels, size = _from_hub(spec)
        size = options.size or size
        generator = torch.Generator().manual_seed(INPUT_SEED)
        shape = (options.batch or 1, channels, size, size)
        inputs = (torch.randn(shape, generator=generator),)
    inputs = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
    return LoadedModel(spec, options, module.to(dtype).eval(), inputs)


def _from_hub(spec: ModelSpec):
    """(module, input channels, the model's own input size) of a torchvision or timm model."""
    hub = require(spec.source, spec.text)
    if spec.source == "torchvision":
        names = hub.models.list_models()
        _check_name(spec, names)
        model = hub.models.get_model(spec.name, weights=None)
        return model, 3, _torchvision_size(hub, spec, model)
    _check_name(spec, hub.list_models())
    module = hub.create_model(spec.name, pretrained=False)
    channels, height, _ = module.pretrained_cfg.get("input_size", (3, DEFAULT_SIZE, DEFAULT_SIZE))
    return module, channels, height


def _check_name(spec: ModelSpec, names: list[str]) -> None:
    if spec.name in names:
        return
    close = difflib.get_close_matches(spec.name, names, n=CLOSE_MATCHES)
    hint = f"; close matches: {', '.join(close)}" if close else ""
    raise UnknownModel(f"{spec.source} has no model {spec.name!r}{hint}")


def _torchvision_size(torchvision, spec: ModelSpec, model=None) -> int:
    """The size a vision transformer was built for (its `image_size`: vit_h_14 takes 224 without
    weights), else the crop size of the default weights' transforms (299 for inception_v3), read
    without loading anything; DEFAULT_SIZE for detection and optical-flow weights, which have
    none."""
    built_for = getattr(model, "image_size", None)
    if isinstance(built_for, int):
        return built_for
    transforms = torchvision.models.get_model_weights(spec.name).DEFAULT.transforms
    crop = getattr(transforms, "keywords", {}).get("crop_size", DEFAULT_SIZE)
    return crop[0] if isinstance(crop, (tuple, list)) else crop


def import_file(path: Path, asked: str, running: str) -> ModuleType:
    """A user's FILE.py imported as a module; `asked` names what asked for it in a ModelError,
    `running` in the error of its own code (`fence.user_code`)."""
    if not path.is_file():  # a FIFO or a device is no file either: never opened
        raise ModelError(f"{asked}: no file {path}")
    if path.stat().st_size > LARGEST_SOURCE:
        raise ModelError(
            f"{asked}: {path} holds {path.stat().st_size:,} bytes, more than the "
            f"{LARGEST_SOURCE:,} of a model's Python file; give the file that builds the model"
        )
    loader = importlib.util.spec_from_file_location(f"tune_model_{path.stem}", path)
    if loader is None or loader.loader is None:
        raise ModelError(f"{asked}: {path} is not a Python file")
    user = importlib.util.module_from_spec(loader)
    with user_code(running, path):
        # Registered by its name, as an import would: torch.compile looks the module up there.
        sys.modules[loader.name] = user
        try:
            loader.loader.exec_module(user)
        except BaseException:
            sys.modules.pop(loader.name, None)
            raise
    return user


def _from_file(spec: ModelSpec, options: ModelOptions):
    """FUNCTION() of FILE.py: (module, example inputs as a tuple of tensors)."""
    import torch

    fixed = [field for field in ("batch", "size") if getattr(options, field) is not None]
    if fixed:
        raise ModelError(
            f"{spec.text} makes its own example inputs; drop the {' and '.join(fixed)} option"
        )
    path = Path(spec.path or "")
    user = import_file(path, f"model spec {spec.text!r}", f"{spec.path} (imported for {spec.text})")
    function = getattr(user, spec.name, None)
    if not callable(function):
        raise ModelError(f"{spec.path} has no function {spec.name}")
    with user_code(spec.text, path):
        result = function()
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ModelError(f"{spec.text} must return (torch.nn.Module, example inputs)")
    module, inputs = result
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else inputs
    tensors = isinstance(inputs, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in inputs)
    if not isinstance(module, torch.nn.Module) or not tensors or not inputs:
        raise ModelError(
            f"{spec.text} must return a torch.nn.Module and a tensor or a sequence of tensors"
        )
    return module, tuple(inputs)
