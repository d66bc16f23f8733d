"""Whether a TVM source tree has every `tvm.*` name a module uses, read from the tree's files
without importing them (the tree may be of another version than the installed TVM).

The names a module uses are the modules it imports, the names it imports from them, and every
chain of attributes on those (`tirx.IterVar.DataPar`); relative imports are resolved against the
package the module lives in. A name is found where the tree's `python/` has it as a package or
module, a top-level binding of its module (a def, a class, an assignment, an import, a star
import's), or a class attribute (its body's assignments, annotations and defs).
"""

from __future__ import annotations

import ast
from pathlib import Path


def used_names(source: str, package: str) -> list[str]:
    """The dotted `tvm.*` names `source` uses, sorted; `package` is the module's package."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
                    bound.setdefault(alias.name, alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, package)
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{module}.{alias.name}"
    used = {name for name in bound.values() if name.split(".")[0] == "tvm"}
    for node in ast.walk(tree):
        chain = _chain(node)
        if chain and chain[0] in bound:
            used.add(".".join([bound[chain[0]], *chain[1:]]))
    return sorted(n for n in used if n.split(".")[0] == "tvm" and not _prefix_of(n, used))


def _absolute(module: str | None, level: int, package: str) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - level + 1]
    return ".".join([*base, module] if module else base)


def _chain(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"] for a chain of attributes on a name, else None."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    return [node.id, *names] if isinstance(node, ast.Name) and names else None


def _prefix_of(name: str, names: set[str]) -> bool:
    """Whether a longer name in `names` starts with `name.` (checking it checks `name`)."""
    return any(other.startswith(name + ".") for other in names)


def missing_names(names: list[str], python: Path) -> list[str]:
    """The names (dotted, from `tvm`) that the tree whose Python package root is `python`
    (`python/` of a TVM checkout) does not have."""
    return [name for name in names if not _found(name.split("."), python)]


def _module_file(parts: list[str], python: Path) -> Path | None:
    folder = python.joinpath(*parts)
    if (folder / "__init__.py").is_file():
        return folder / "__init__.py"
    single = python.joinpath(*parts[:-1], parts[-1] + ".py")
    return single if single.is_file() else None


def _found(parts: list[str], python: Path) -> bool:
    """Whether the dotted name `parts` exists in the tree."""
    module = parts[:1]
    if _module_file(module, python) is None:
        return False
    for at in range(1, len(parts)):
        if _module_file([*module, parts[at]], python) is not None:
            module = [*module, parts[at]]
            continue
        return _defined(module, parts[at], parts[at + 1 :], python, set())
    return True


def _defined(module: list[str], name: str, rest: list[str], python: Path, seen: set) -> bool:
    """Whether module `module` binds `name` (and `name` has the attributes `rest`)."""
    path = _module_file(module, python)
    if path is None or (tuple(module), name) in seen:
        return False
    seen.add((tuple(module), name))
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module[:-1]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return not rest or (len(rest) == 1 and rest[0] in _class_names(node))
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return not rest
        if isinstance(node, ast.Assign | ast.AnnAssign) and name in _targets(node):
            return not rest
        if isinstance(node, ast.ImportFrom):
            source = _absolute(node.module, node.level, ".".join(package)).split(".")
            for alias in node.names:
                if alias.name == "*" and _defined(source, name, rest, python, seen):
                    return True
                if (alias.asname or alias.name) == name:
                    return _found([*source, alias.name, *rest], python) or _defined(
                        source, alias.name, rest, python, seen
                    )
        if isinstance(node, ast.Import) and any(
            (a.asname or a.name.split(".")[0]) == name for a in node.names
        ):
            return not rest
    return False


def _targets(node: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}


def _class_names(node: ast.ClassDef) -> set[str]:
    names = set()
    for item in node.body:
        if isinstance(item, ast.Assign | ast.AnnAssign):
            names |= _targets(item)
        elif isinstance(item, ast.FunctionDef | ast.ClassDef):
            names.add(item.name)
    return names
