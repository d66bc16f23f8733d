"""The floors (docs/contributing.md), read with `ast`: no import circle, none upward, every
import through the one import root."""

import ast
import importlib.metadata
import re
from pathlib import Path

from conftest import ROOT

ROOT_PACKAGE = "pool_fusion_tuning"
# The packages from the top
PACKAGES = ("tuning", "reports", "runfolder", "baselines")
# An import statement in Python source held in a string (a script a test runs)
BARE_IN_SOURCE = re.compile(r"(?:^|\n)\s*(?:from|import) ([\w.]+)")
# tuning's floors from the top; its top-level modules are "top"
FLOORS = (
    "tuning.cli",
    "top",
    "tuning.tuners",
    "tuning.upstream",
    "tuning.candidates",
    "tuning.measure",
    "tuning.base",
)


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            if "tvm_tests" in path.parts:  # TVM's own test, rendered for the upstream patch
                continue
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(node: ast.AST, package: list[str]) -> list[str]:
    """The absolute names an import statement names; the module's `package` resolves a relative
    import."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        base = ".".join(package[: len(package) - node.level + 1] + [base]).strip(".")
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _walk(root: Path):
    """Each project module's name (as under the root package), file and the names it imports."""
    for name, path in _modules(root).items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            yield name, path, _imported(node, [ROOT_PACKAGE, *package])


def _imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module's imports of the project's modules, wherever in the file they are."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, _, targets in _walk(root):
        for target in targets:
            target = target.removeprefix(ROOT_PACKAGE + ".")
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def _bare_imports(root: Path = ROOT) -> list[str]:
    """Imports of a project package by its bare name (`from tuning.x import y`)."""
    return [
        f"{path.relative_to(root)}: {target}"
        for _, path, targets in _walk(root)
        for target in targets
        if target.split(".")[0] in PACKAGES
    ]


def _floor(module: str) -> int | None:
    for index, floor in enumerate(FLOORS):
        if module == floor or module.startswith(floor + "."):
            return index
    return FLOORS.index("top") if module.startswith("tuning.") else None


def _packages_up(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports of a package above the importer's own (PACKAGES, from the top)."""
    rank = {package: index for index, package in enumerate(PACKAGES)}
    return [
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if rank[target.split(".")[0]] < rank[module.split(".")[0]]
    ]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                found.append(sorted([node, *component]))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_install_claims_one_import_name():
    """What pip put into site-packages: one top-level name, which the command runs from."""
    installed = importlib.metadata.distribution("pool-fusion-tuning")
    assert installed.read_text("top_level.txt").split() == [ROOT_PACKAGE]
    (tune,) = [e for e in installed.entry_points if e.name == "tune"]
    assert tune.value == f"{ROOT_PACKAGE}.tuning.cli.main:main"


def test_no_import_circle():
    assert _circles(_imports()) == []


def test_no_arrow_up_between_the_floors_of_tuning():
    up = [
        (module, target)
        for module, targets in _imports().items()
        for target in targets
        if (low := _floor(module)) is not None
        and (high := _floor(target)) is not None
        and high < low
    ]
    assert up == []


def test_no_arrow_up_between_the_packages():
    """tuning above reports above runfolder above baselines, with no exception."""
    assert _packages_up(_imports()) == []


def _bare_in_tests(root: Path = ROOT) -> list[str]:
    """Bare imports in the tests, and in the scripts they run (Python source in a string)."""
    found = []
    for path in (root / "tests").rglob("*.py"):
        if path.name == Path(__file__).name:  # the crafted bad sources of the checks below
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = _imported(node, ["tests"])
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                targets = BARE_IN_SOURCE.findall(node.value)
            found += [
                f"{path.relative_to(root)}: {t}" for t in targets if t.split(".")[0] in PACKAGES
            ]
    return found


def test_every_import_of_the_project_goes_through_its_one_root():
    assert _bare_imports() == []
    assert _bare_in_tests() == []


def test_the_checker_finds_a_circle_through_a_late_import(tmp_path):
    """The checks can fail: a circle closed by an import inside a function is found."""
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "__init__.py").write_text("")
    (tmp_path / "reports" / "a.py").write_text("from .b import x\n")
    (tmp_path / "reports" / "b.py").write_text(
        "def x():\n    from pool_fusion_tuning.reports import a\n"
    )
    assert _circles(_imports(tmp_path)) == [["reports.a", "reports.b"]]


def test_the_checker_finds_an_arrow_up_and_a_bare_import(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "runfolder" / "store.py").write_text("from ..reports import render\n")
    (tmp_path / "reports" / "render.py").write_text("")
    (tmp_path / "tuning" / "study.py").write_text("from reports.render import markdown\n")
    assert _packages_up(_imports(tmp_path)) == [("runfolder.store", "reports.render")]
    assert _bare_imports(tmp_path) == [
        "tuning/study.py: reports.render",
        "tuning/study.py: reports.render.markdown",
    ]


def test_the_checker_finds_a_bare_import_in_a_script_a_test_runs(tmp_path):
    (tmp_path / "tests").mkdir()
    script = '"import sys\\nfrom tuning.cli.main import main\\n"'
    (tmp_path / "tests" / "test_x.py").write_text(f"SCRIPT = {script}\n")
    assert _bare_in_tests(tmp_path) == ["tests/test_x.py: tuning.cli.main"]
