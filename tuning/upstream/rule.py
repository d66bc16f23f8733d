"""The rule as TVM would ship it: baselines/window_reduction.py with the ASF header and its
dlight imports made relative as dlight's own rules write them, nothing else changed.

The base the patch is made against is the Python tree of the TVM the project installs and
measures with (tvm_tree.py), so the file TVM gets is the module the project's arms, tests and
`--check` run: one source, no re-spelling. Every run that measures it records the hash of that
source (baselines.rules.rule_hash), so that PR.md cites only figures of the shipped rule.
"""

from __future__ import annotations

from pathlib import Path

from pool_fusion_tuning.baselines import window_reduction

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


def source_text() -> str:
    """The project's rule module, as measured."""
    return Path(window_reduction.__file__).read_text()


def relative_import(line: str) -> str | None:
    """`line` as a relative import if it imports from dlight, else None."""
    for absolute, relative in RELATIVE:
        if line.startswith(absolute):
            if "(" in line:
                raise ValueError(f"one import per line is made relative, not {line.strip()!r}")
            return relative + line[len(absolute) :]
    return None


def rule_source() -> str:
    """The rule file for TVM's tree: dlight's imports moved, made relative, into their own
    section after the other imports (ruff's isort order: `..` before `.`)."""
    lines = source_text().splitlines(keepends=True)
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
