"""A library's models as specs: what `tune models --zoo` takes a census of, one model run each.

    torchvision   `torchvision.models.list_models(module=torchvision.models)`: the
                  classification models (one image batch in, logits out). Detection,
                  segmentation, video and optical-flow models take lists, clips or pairs, or
                  return dicts, which loading and checking do not handle; quantized ones need
                  a quantized backend.
    timm          `timm.list_models()`: every architecture (all image classification)
    FILE.py       the file's own `list_models()`: names of its functions, each returning
                  (module, example inputs) as for a FILE.py:FUNCTION spec (a user's own zoo)

The filters are comma-separated model-name globs (`fnmatch`): `--only resnet*,vit_*`, `--skip
vit_h_14`. Nothing here imports torch or TVM; a library is imported when its zoo is listed.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from .model_errors import ModelError
from .model_spec import HUBS

LIBRARIES = (*HUBS, "FILE.py")


@dataclass(frozen=True)
class Zoo:
    """A zoo listed: its `source` (a library, or a FILE.py's path), how it was listed, the
    library's version, and its models' names in the library's order."""

    source: str
    listed_by: str
    version: str | None
    names: tuple[str, ...]

    def spec(self, name: str) -> str:
        return f"{self.source}:{name}"

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "listed_by": self.listed_by,
            "version": self.version,
            "listed": len(self.names),
        }


def list_zoo(source: str) -> Zoo:
    """The zoo `source` names (torchvision, timm or FILE.py), listed; a ModelError (one line)
    for another name, a library that cannot be imported, or a file without `list_models()`."""
    from .fence import user_code
    from .load import import_file, require

    asked = f"--zoo {source}"
    if source == "torchvision":
        torchvision = require("torchvision", asked)
        names = torchvision.models.list_models(module=torchvision.models)
        by = "torchvision.models.list_models(module=torchvision.models)"
        return Zoo(source, by, torchvision.__version__, tuple(names))
    if source == "timm":
        timm = require("timm", asked)
        return Zoo(source, "timm.list_models()", timm.__version__, tuple(timm.list_models()))
    if not source.endswith(".py"):
        raise ModelError(f"{asked}: not a zoo; give one of {', '.join(LIBRARIES)}")
    user = import_file(Path(source), asked, f"{source} (imported for {asked})")
    lister = getattr(user, "list_models", None)
    if not callable(lister):
        raise ModelError(f"{asked}: {source} has no function list_models()")
    with user_code(f"{source}: list_models()", Path(source)):
        names = lister()
    if not isinstance(names, (list, tuple)) or not all(
        isinstance(n, str) and n.isidentifier() and callable(getattr(user, n, None)) for n in names
    ):
        raise ModelError(f"{asked}: list_models() must return names of functions of {source}")
    if not names:
        raise ModelError(f"{asked}: list_models() of {source} returned no name; list a model")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ModelError(
            f"{asked}: list_models() of {source} returns {', '.join(twice[:5])} more than once; "
            "list each model once"
        )
    return Zoo(source, f"{Path(source).name}: list_models()", None, tuple(names))


def globs(text: str | None) -> list[str]:
    """Comma-separated globs, blanks left out."""
    return [glob.strip() for glob in (text or "").split(",") if glob.strip()]


def pick(names: list[str], only: list[str], skip: list[str]) -> list[str]:
    """The names matching a glob of `only` (all, without any) and none of `skip`, in order; a
    glob matching nothing is refused in one line (a typo would silently pick nothing)."""
    for option, patterns in (("--only", only), ("--skip", skip)):
        for glob in patterns:
            if not any(fnmatch.fnmatchcase(name, glob) for name in names):
                raise ModelError(f"{option} {glob!r} matches no model")
    chosen = [
        name
        for name in names
        if (not only or any(fnmatch.fnmatchcase(name, g) for g in only))
        and not any(fnmatch.fnmatchcase(name, g) for g in skip)
    ]
    if not chosen:
        raise ModelError("--only and --skip leave no model")
    return chosen
