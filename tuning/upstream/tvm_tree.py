"""Where the patch goes in apache/tvm: the commit it is made against and the files it touches.

CI has no network, so the two TVM files the patch edits are stored here as the base commit has
them (`tvm_base/`, taken with `git show BASE_COMMIT:PATH` from github.com/apache/tvm main):
the patch is made against them, and the tests check that it applies to them and to the
installed TVM's copies.
"""

from __future__ import annotations

from pathlib import Path

import tvm

BASE_COMMIT = "5d4dc8721307cf9677becacf0395c19be130e206"
BASE_DATE = "2026-08-22"
BASE_SUBJECT = "[Web] Avoid copies when uploading WASM memory to WebGPU (#20165)"

RULE = "python/tvm/s_tir/dlight/gpu/window_reduction.py"
GPU_INIT = "python/tvm/s_tir/dlight/gpu/__init__.py"
CUDA_PIPELINE = "python/tvm/relax/backend/cuda/pipeline.py"
TEST = "tests/python/s_tir/dlight/test_gpu_window_reduction.py"
# The files the patch edits, and their copies at BASE_COMMIT (the others it adds).
STORED = {
    CUDA_PIPELINE: Path(__file__).parent / "tvm_base" / "cuda_pipeline.py.txt",
    GPU_INIT: Path(__file__).parent / "tvm_base" / "dlight_gpu_init.py.txt",
}
EDITED = tuple(STORED)


def base_text(path: str) -> str:
    """A file the patch edits, as BASE_COMMIT has it."""
    return STORED[path].read_text()


def installed_text(path: str) -> str:
    """A TVM file as the installed package ships it (`python/tvm/...` in TVM's tree)."""
    return (Path(tvm.__file__).parent / Path(path).relative_to("python/tvm")).read_text()
