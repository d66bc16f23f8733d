"""The rule as TVM would ship it: baselines/window_reduction.py with the ASF header, its dlight
imports made relative as dlight's own rules write them, and written for the Python API of the
commit the patch is made against.

The project measures and tests that module against the installed TVM (0.27.0.post1, built from
apache/tvm 7b5acb32b), whose API renamed names the rule uses since the base commit (API_NAMES);
the patch carries the base commit's spelling of each, the rest of the module verbatim, so that
there is one copy of the rule. `installed_api()` says which spelling the installed TVM has, so
that TVM's tests can run the rule against it (check.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import baselines.window_reduction

ASF_HEADER = """\
# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.  See the NOTICE file
# distributed with this work for additional information
# regarding copyright ownership.  The ASF licenses this file
# to you under the Apache License, Version 2.0 (the
# "License"); you may not use this file except in compliance
# with the License.  You may obtain a copy of the License at
#
#   http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an
# "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
# KIND, either express or implied.  See the License for the
# specific language governing permissions and limitations
# under the License.
"""
# The rule lives in tvm.s_tir.dlight.gpu: absolute imports of its neighbours become relative.
RELATIVE = (
    ("from tvm.s_tir.dlight.gpu.", "from ."),
    ("from tvm.s_tir.dlight.", "from .."),
    ("from tvm.s_tir.dlight import ", "from .. import "),
)
# Each line of the rule that the installed TVM's API spells otherwise than the base commit's:
# (the installed spelling, the base's, the dotted name that the base's needs at the base commit).
API_NAMES = (
    (
        "tvm.sym.detect_linear_equation(",
        "tvm.arith.detect_linear_equation(",
        "tvm.arith.detect_linear_equation",
    ),
    ("    return region.source\n", "    return region.buffer\n", "tvm.tirx.BufferRegion.buffer"),
)
APIS = ("installed", "base")


def installed_api() -> str:
    """ "base" where the installed TVM has the base commit's names (`tvm.arith`), else
    "installed" (0.27.0.post1's `tvm.sym`)."""
    return "base" if importlib.util.find_spec("tvm.arith") is not None else "installed"


def source_text() -> str:
    """The project's rule module, as measured."""
    return Path(baselines.window_reduction.__file__).read_text()


def relative_import(line: str) -> str | None:
    """`line` as a relative import if it imports from dlight, else None."""
    for absolute, relative in RELATIVE:
        if line.startswith(absolute):
            if "(" in line:
                raise ValueError(f"one import per line is made relative, not {line.strip()!r}")
            return relative + line[len(absolute) :]
    return None


def for_api(text: str, api: str) -> str:
    """The rule's source in the spelling of `api` ("installed" or "base"); refuses a source in
    which a line of API_NAMES does not occur exactly once."""
    if api not in APIS:
        raise ValueError(f"api is one of {APIS}, not {api!r}")
    for installed, base, _ in API_NAMES:
        if (found := text.count(installed)) != 1:
            raise RuntimeError(f"the rule holds {installed.strip()!r} {found} times, not once")
        text = text.replace(installed, base) if api == "base" else text
    return text


def rule_source(api: str = "base") -> str:
    """The rule file for TVM's tree, in the spelling of `api`: dlight's imports moved, made
    relative, into their own section after the other imports (ruff's isort order: `..` before
    `.`)."""
    lines = for_api(source_text(), api).splitlines(keepends=True)
    moved = [(i, relative_import(line)) for i, line in enumerate(lines)]
    relative = [line for _, line in moved if line is not None]
    if not relative:
        return ASF_HEADER + "".join(lines)
    kept = [line for (_, made), line in zip(moved, lines) if made is None]
    last_import = max(i for i, line in enumerate(kept) if line.startswith(("import ", "from ")))
    relative.sort(key=_furthest_first)
    block = ["\n", *relative]
    return ASF_HEADER + "".join(kept[: last_import + 1] + block + kept[last_import + 1 :])


def _furthest_first(line: str) -> tuple[int, str]:
    module = line.split()[1]
    return -(len(module) - len(module.lstrip("."))), module
