"""Where the patch goes in apache/tvm: the tree it is made against and the files it touches.

The base is the Python tree of the 0.27.0.post1 release, the TVM the project installs and tests
against: its wheel was built from apache/tvm `7b5acb32b` (`tvm/_version.py`), newer than any main
this project could fetch (the newest, 5d4dc87, predates the release's API: `tvm.sym`,
`BufferRegion.source`, `s_tir.SBlock`), so the rule ships in the base's API. CI has no network, so
the two files the patch edits are stored here as the release ships them (`tvm_base/`, xz), and the
tests check they are the installed TVM's, byte for byte.
"""

from __future__ import annotations

import importlib
import lzma
from pathlib import Path

import tvm

# The base: the commit its wheel names (abbreviated, as `tvm/_version.py` records it).
BASE_COMMIT = "7b5acb32b"
BASE_RELEASE = "0.27.0.post1"
BASE = f"the apache/tvm {BASE_RELEASE} release (commit `{BASE_COMMIT}`)"

RULE = "python/tvm/s_tir/dlight/gpu/window_reduction.py"
GPU_INIT = "python/tvm/s_tir/dlight/gpu/__init__.py"
CUDA_PIPELINE = "python/tvm/relax/backend/cuda/pipeline.py"
TEST = "tests/python/s_tir/dlight/test_gpu_window_reduction.py"
DOCS = "docs/deep_dive/tensor_ir/tutorials/dlight_gpu_scheduling.py"
# Relax's tests of the default pipelines: where the graph through the CUDA one goes.
PIPELINE_TEST = "tests/python/relax/test_pipeline.py"
# The files the patch edits, and their copies in the base (it adds the others). The wheel holds no
# docs or tests: dlight's tutorial and relax's pipeline tests are the nearest tree's, 5d4dc87's,
# which `--check` applies the patch to.
STORED = {
    CUDA_PIPELINE: Path(__file__).parent / "tvm_base" / "cuda_pipeline.py.txt.xz",
    GPU_INIT: Path(__file__).parent / "tvm_base" / "dlight_gpu_init.py.txt.xz",
    DOCS: Path(__file__).parent / "tvm_base" / "dlight_gpu_scheduling.py.txt.xz",
    PIPELINE_TEST: Path(__file__).parent / "tvm_base" / "relax_test_pipeline.py.txt.xz",
}
EDITED = tuple(STORED)
# The edited files the installed TVM ships (the others are not in its wheel).
IN_WHEEL = (CUDA_PIPELINE, GPU_INIT)


def base_text(path: str) -> str:
    """A file the patch edits, as the base has it."""
    return lzma.decompress(STORED[path].read_bytes()).decode()


def installed_commit() -> str:
    """The commit the installed TVM was built from, as its `_version.py` records it."""
    try:  # a wheel's; a TVM built from source may have none
        version = importlib.import_module("tvm._version")
    except ImportError:
        return ""
    return str(getattr(version, "__commit_id__", "")).removeprefix("g")


def installed_text(path: str) -> str:
    """A TVM file as the installed package ships it (`python/tvm/...` in TVM's tree)."""
    return (Path(tvm.__file__).parent / Path(path).relative_to("python/tvm")).read_text()
