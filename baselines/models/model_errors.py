"""What can go wrong between a model spec and a Relax module, each as a one-line error.

The command line prints every one as one line with exit code 2, as it does a `CaseError`; the
subclasses let a caller (and the tests) tell the causes apart.
"""

from __future__ import annotations

from pool_fusion_tuning.baselines.user_error import UserError


class ModelError(UserError):
    """A spec, option or model that cannot be run; the message says which and why."""


class MissingPackage(ModelError):
    """PyTorch, torchvision or timm is absent, or present but cannot be imported."""


class UnknownModel(ModelError):
    """No model of that name in torchvision or timm; the message lists close matches."""


class NotExportable(ModelError):
    """`torch.export` refused the module; the message holds the exporter's first line."""


class UnsupportedOperator(ModelError):
    """The exported graph holds an operator Relax's PyTorch importer has no conversion for."""


def first_line(error: BaseException) -> str:
    """The first non-blank line of `error`'s message (its type's name if there is none): what a
    one-line error quotes of a library's exception."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
