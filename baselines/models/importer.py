"""A loaded model as a Relax module: `torch.export.export`, then Relax's PyTorch importer.

Weights become constants of the module (`keep_params_as_input=False`), so `main` takes the
model's inputs and nothing else: the backend's pipeline compiles it as it is (FoldConstant folds
what depends on weights alone, such as a decomposed BatchNorm's scale), and the VM is called
with the inputs PyTorch is called with, which makes the check a plain comparison. A one-output
model returns a tensor, not a one-element tuple, as the study's graphs do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax

from .load import WEIGHT_SEED, LoadedModel, load_model
from .model_errors import NotExportable, UnsupportedOperator, first_line
from .model_spec import ModelOptions, parse_spec

# How TVM 0.27's importer says it lacks conversions: "Unsupported function types ['op', ...]".
_UNSUPPORTED = re.compile(r"Unsupported function types \[(.*)\]")


@dataclass
class ImportedModel:
    """The model twice: as PyTorch runs it (`loaded`) and as Relax holds it (`mod`)."""

    loaded: LoadedModel
    mod: tvm.IRModule

    def input_signature(self) -> list[tuple[tuple[int, ...], str]]:
        """(shape, dtype) of each input of `main`, in order."""
        return [(tuple(x.shape), str(x.dtype).removeprefix("torch.")) for x in self.loaded.inputs]

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        """Inputs for a check (`LoadedModel.random_inputs`)."""
        return self.loaded.random_inputs(seed)

    def to_dict(self) -> dict:
        return {
            **self.loaded.spec.to_dict(),
            "options": self.loaded.options.to_dict(),
            "inputs": [{"shape": list(s), "dtype": d} for s, d in self.input_signature()],
            "parameters": sum(p.numel() for p in self.loaded.module.parameters()),
            "weights": f"random (torch.manual_seed({WEIGHT_SEED})), nothing downloaded",
        }


def prepare_model(text: str, options: ModelOptions) -> ImportedModel:
    """SPEC text to an imported model: parse, load, export, import (and decompose)."""
    return import_model(load_model(parse_spec(text), options))


def import_model(loaded: LoadedModel) -> ImportedModel:
    """The loaded model as Relax: `torch.export`, then Relax's importer (with
    DecomposeOpsForInference where the options ask). A model the exporter or the importer cannot
    take raises one line that says which and why (`NotExportable`, `UnsupportedOperator`), not
    their tracebacks."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    try:
        exported = torch.export.export(loaded.module, loaded.inputs)
    except Exception as error:  # the exporter's many error types all mean "cannot export"
        raise NotExportable(
            f"torch.export cannot export {loaded.spec.text}: {first_line(error)}"
        ) from None
    try:
        mod = from_exported_program(exported, unwrap_unit_return_tuple=True)
    except AssertionError as error:  # how the importer reports operators it lacks
        match = _UNSUPPORTED.search(str(error))
        if match is None:
            raise
        operators = match.group(1).replace("'", "")
        raise UnsupportedOperator(
            f"Relax's PyTorch importer cannot convert {loaded.spec.text}: no conversion for "
            f"{operators}"
        ) from None
    if loaded.options.decompose:
        mod = tvm.transform.Sequential(
            [relax.transform.DecomposeOpsForInference(), relax.transform.CanonicalizeBindings()]
        )(mod)
    return ImportedModel(loaded, mod)
