"""The window rule as one file in dlight's layout, made from the project's own modules.

`WindowReduction` (baselines/rules.py) uses the schedule template (template.py) and the
concatenation loads (branch_loads.py); TVM takes one file that needs nothing but TVM. Rather
than keep a second copy, `rule_source` copies in every top-level definition the rule reaches,
found by walking the modules' syntax trees, each module's in its own order, and writes the
imports they need in dlight's form (relative within `tvm.s_tir.dlight`). The project's tests run
that file against the installed TVM, so what ships is what the project measures.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from dataclasses import dataclass, field

ROOT = ("baselines.rules", "WindowReduction")
PROJECT = "baselines"  # modules under it are copied in; any other import is kept as an import
DLIGHT = "tvm.s_tir.dlight"
LINE_LIMIT = 100  # TVM's black configuration

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
DOCSTRING = '''"""A reduction over a small constant window (pooling) followed by elementwise work.

One thread computes each output (two rows of outputs where windows overlap), reducing its window
in registers, unrolled, and applying the elementwise chain in place. GeneralReduction would
spread each window over a block of threads and synchronize them for a few elements.
"""
'''


@dataclass
class _Module:
    """One project module: its top-level definitions and what its names are bound to."""

    name: str
    lines: list[str]
    definitions: dict[str, ast.stmt] = field(default_factory=dict)
    project_names: dict[str, tuple[str, str]] = field(default_factory=dict)  # -> (module, name)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # -> (module, name)
    future: bool = False


def _parse(name: str) -> _Module:
    source = inspect.getsource(importlib.import_module(name))
    module = _Module(name, source.splitlines())
    package = name.rpartition(".")[0]
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname or alias.name.split(".")[0] == PROJECT:
                    raise ValueError(f"{name}: only 'import <not {PROJECT}>' is copied")
                module.imports[alias.name.split(".")[0]] = (alias.name, None)
        elif isinstance(stmt, ast.ImportFrom):
            origin = stmt.module or ""
            if stmt.level:
                origin = ".".join(
                    package.split(".")[: len(package.split(".")) - stmt.level + 1]
                    + ([origin] if origin else [])
                )
            for alias in stmt.names:
                if alias.asname not in (None, alias.name):
                    raise ValueError(f"{name}: 'import ... as' is not copied: {alias.asname}")
                if origin == "__future__":
                    module.future = True
                elif origin.split(".")[0] == PROJECT:
                    module.project_names[alias.name] = (origin, alias.name)
                else:
                    module.imports[alias.name] = (origin, alias.name)
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            module.definitions[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    module.definitions[target.id] = stmt
    return module


def _reached(root: tuple[str, str]) -> tuple[dict[str, _Module], set, set]:
    """The modules involved, the (module, name) definitions `root` reaches, and the imports
    (module, name or None) those definitions use."""
    modules, definitions, imports = {}, set(), set()
    pending = [root]
    while pending:
        module_name, name = pending.pop()
        if (module_name, name) in definitions:
            continue
        if module_name not in modules:
            modules[module_name] = _parse(module_name)
        module = modules[module_name]
        if name not in module.definitions:
            raise ValueError(f"{module_name} defines no {name}")
        definitions.add((module_name, name))
        used = {
            node.id for node in ast.walk(module.definitions[name]) if isinstance(node, ast.Name)
        }
        for word in used:
            if word in module.definitions:
                pending.append((module_name, word))
            elif word in module.project_names:
                pending.append(module.project_names[word])
            elif word in module.imports:
                imports.add(module.imports[word])
    return modules, definitions, imports


def _check_unique(definitions: set, imports: set) -> None:
    """One file has one namespace: no two definitions, or a definition and an import, share a
    name."""
    seen = {(name or module).split(".")[0]: "an import" for module, name in imports}
    for module_name, name in sorted(definitions):
        if name in seen:
            raise ValueError(f"{name} is defined in both {seen[name]} and {module_name}")
        seen[name] = module_name


def _module_order(modules: dict[str, _Module]) -> list[str]:
    """Modules after those that import them: the rule first, then what it uses, as a reader
    goes (definitions are only looked up when called; running the file checks that)."""
    order = []

    def visit(name):
        if name in order:
            return
        for dependency in sorted({m for m, _ in modules[name].project_names.values()}):
            if dependency in modules:
                visit(dependency)
        order.append(name)

    for name in sorted(modules):
        visit(name)
    return order[::-1]


def _segment(module: _Module, stmt: ast.stmt) -> str:
    """The statement's text with its decorators and the comment lines right above it."""
    start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])]) - 1
    while start > 0 and module.lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return "\n".join(module.lines[start : stmt.end_lineno])


def _dlight_relative(origin: str) -> str:
    """`tvm.s_tir.dlight.gpu.base` as `.base`, `tvm.s_tir.dlight.analysis` as `..analysis`."""
    if origin.startswith(f"{DLIGHT}.gpu."):
        return "." + origin[len(f"{DLIGHT}.gpu.") :]
    if origin.startswith(f"{DLIGHT}."):
        return ".." + origin[len(f"{DLIGHT}.") :]
    return origin


def _import_lines(imports: set, future: bool) -> str:
    plain = sorted(module for module, name in imports if name is None)
    grouped = {}
    for module, name in imports:
        if name is not None:
            grouped.setdefault(_dlight_relative(module), set()).add(name)
    relative = sorted((m for m in grouped if m.startswith(".")), key=lambda m: (-m.count("."), m))
    blocks = [["from __future__ import annotations"]] if future else []
    for standard in (True, False):  # the standard library, then TVM, as isort groups them
        blocks.append(
            [f"import {m}" for m in plain if _standard(m) == standard]
            + [
                _from_line(m, grouped[m])
                for m in sorted(grouped)
                if not m.startswith(".") and _standard(m) == standard
            ]
        )
    blocks.append([_from_line(m, grouped[m]) for m in relative])
    return "\n\n".join("\n".join(block) for block in blocks if block)


def _standard(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


def _from_line(module: str, names: set) -> str:
    names = sorted(names, key=lambda n: (not n.isupper(), n))
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= LINE_LIMIT:
        return line
    return f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"


def rule_source() -> str:
    """`python/tvm/s_tir/dlight/gpu/window_reduction.py`: the rule, needing only TVM."""
    modules, definitions, imports = _reached(ROOT)
    _check_unique(definitions, imports)
    parts = []
    for name in _module_order(modules):
        module = modules[name]
        chosen = [stmt for word, stmt in module.definitions.items() if (name, word) in definitions]
        for stmt in sorted(set(chosen), key=lambda s: s.lineno):
            parts.append(_segment(module, stmt))
    future = any(module.future for module in modules.values())
    return (
        ASF_HEADER
        + DOCSTRING
        + "\n"
        + _import_lines(imports, future)
        + "\n\n\n"
        + "\n\n\n".join(parts)
        + "\n"
    )
