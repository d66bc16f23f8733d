"""TVM's names for a PrimFunc's GPU kernels in the CUDA source and a profile: `<function>_kernel`,
then `_kernel_1`, `_kernel_2`, ... for each further loop nest the TIR pipeline launches apart."""

from __future__ import annotations

import re

_SUFFIX = re.compile(r"_kernel(_\d+)?$")


def device_kernel(function: str) -> str:
    """The name of `function`'s first (or only) kernel."""
    return f"{function}_kernel"


def function_of(kernel: str) -> str:
    """The PrimFunc a kernel of TVM's came from (a name without the suffix is returned as it is)."""
    return _SUFFIX.sub("", kernel)
