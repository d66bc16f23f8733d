"""A pytest plugin that registers the patch's TVM files in place of the installed TVM's modules,
as the patched tree would import them, so that TVM's tests run against the patch:

    TVM_OVERLAY=DIR python -m pytest -p pool_fusion_tuning.tuning.upstream.overlay TESTS

DIR holds the files under TVM's paths (`python/tvm/...`), as `tune upstream --out DIR` or
`--check` (check.py) writes them. The added rule module is registered first, then the edited
`dlight.gpu` package (its other submodules stay the installed ones) and the CUDA pipeline, each
also in place of the names its package imported from it.
"""

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from pool_fusion_tuning.tuning.upstream.tvm_tree import CUDA_PIPELINE, GPU_INIT, RULE


def module_name(path: str) -> str:
    """`python/tvm/a/b/__init__.py` -> `tvm.a.b`, `python/tvm/a/c.py` -> `tvm.a.c`."""
    parts = path.removeprefix("python/").removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def register(out: Path) -> None:
    """Load the patch's three modules from `out` in place of the installed ones."""
    for path in (RULE, GPU_INIT, CUDA_PIPELINE):
        name = module_name(path)
        parent, _, leaf = name.rpartition(".")
        installed = sys.modules.get(name) or (
            importlib.import_module(name) if path != RULE else None
        )
        search = list(installed.__path__) if installed and path.endswith("__init__.py") else None
        spec = importlib.util.spec_from_file_location(
            name, out / path, submodule_search_locations=search
        )
        if spec is None or spec.loader is None:
            raise RuntimeError(f"cannot load {out / path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        package = importlib.import_module(parent)
        setattr(package, leaf, module)
        if installed is not None:
            _rebind(package, installed, module)


def _rebind(package, installed, module) -> None:
    """The names `package` imported from the `installed` module (`tvm.relax.backend.cuda` takes
    `get_default_pipeline` from its `pipeline`, and `relax.get_default_pipeline` calls it there)
    bound to `module`'s, as the patched tree's package would import them."""
    for name, value in list(vars(package).items()):
        if not name.startswith("__") and hasattr(module, name):
            if getattr(installed, name, None) is value:
                setattr(package, name, getattr(module, name))


register(Path(os.environ["TVM_OVERLAY"]))
