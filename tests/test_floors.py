"""The house's floors (docs/contributing.md): no import circle, function-level
imports included; no arrow up; `baselines/` imports nothing of `tuning/`, `reports/` nothing of
it but `runfolder/`. Read off the source with `ast`, so a late import cannot hide."""

import ast
from pathlib import Path

from conftest import ROOT

# tuning's floors from the top; the top-level modules (study.py, sweep.py, plan.py...) are "top"
FLOORS = (
    "tuning.cli",
    "top",
    "tuning.tuners",
    "tuning.upstream",
    "tuning.candidates",
    "tuning.measure",
    "tuning.base",
    "tuning.runfolder",
)
PACKAGES = ("tuning", "baselines", "reports")


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            if "tvm_tests" in path.parts:  # TVM's own test, rendered for the upstream patch
                continue
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module's imports of the project's modules, wherever in the file they are."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + [base]).strip(".")
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def _floor(module: str) -> int | None:
    for index, floor in enumerate(FLOORS):
        if module == floor or module.startswith(floor + "."):
            return index
    return FLOORS.index("top") if module.startswith("tuning.") else None


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


def test_baselines_and_reports_stay_below_tuning():
    graph = _imports()
    assert [
        (m, t) for m in graph if m.startswith("baselines") for t in graph[m] if "tuning" in t
    ] == []
    reports = [
        (m, t)
        for m in graph
        if m.startswith("reports")
        for t in graph[m]
        if t.startswith("tuning") and not t.startswith("tuning.runfolder")
    ]
    assert reports == []


def test_the_checker_finds_a_circle_through_a_late_import(tmp_path):
    """The checks can fail: a circle closed by an import inside a function is found."""
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "__init__.py").write_text("")
    (tmp_path / "reports" / "a.py").write_text("from .b import x\n")
    (tmp_path / "reports" / "b.py").write_text("def x():\n    from reports import a\n")
    assert _circles(_imports(tmp_path)) == [["reports.a", "reports.b"]]
