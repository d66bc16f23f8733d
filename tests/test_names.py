"""Names that say what they hold, read with `ast`: no module or class name twice, no bare
`markdown()`."""

import ast
from collections import defaultdict
from pathlib import Path

from conftest import ROOT

PACKAGES = ("tuning", "baselines", "reports")
# Names that may repeat: `__init__.py`, each tuner's `tuner.py`, a `tuning/cli/` module named
# for its subcommand beside the module doing the work.
SHARED_NAMES = {"__init__.py", "tuner.py"}
SUBCOMMANDS = Path("tuning/cli")


def _sources(root: Path) -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        if "tvm_tests" not in path.parts
    ]


def repeated_modules(root: Path = ROOT) -> dict[str, list[str]]:
    """File names held by more than one module (the allowed ones aside), with their paths."""
    by_name = defaultdict(list)
    for path in _sources(root):
        relative = path.relative_to(root)
        if path.name not in SHARED_NAMES and relative.parent != SUBCOMMANDS:
            by_name[path.name].append(str(relative))
    return {name: paths for name, paths in by_name.items() if len(paths) > 1}


def repeated_definitions(root: Path = ROOT) -> dict[str, list[str]]:
    """Top-level classes named alike in several modules, and any top-level `markdown`."""
    where = defaultdict(list)
    for path in _sources(root):
        for node in ast.parse(path.read_text()).body:
            is_class = isinstance(node, ast.ClassDef)
            if is_class or isinstance(node, ast.FunctionDef) and node.name == "markdown":
                where[node.name].append(str(path.relative_to(root)))
    return {name: paths for name, paths in where.items() if len(paths) > 1 or name == "markdown"}


def test_no_two_modules_share_a_name():
    assert repeated_modules() == {}


def test_no_class_is_defined_twice_and_no_function_is_named_markdown():
    assert repeated_definitions() == {}


def test_the_checks_can_fail(tmp_path):
    """A second `summary.py`, a second class `Launch` and a `markdown()` are all found."""
    for folder in ("tuning/a", "reports"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "summary.py").write_text("class Launch:\n    pass\n")
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "bench.py").write_text("def markdown(result):\n    return ''\n")
    assert repeated_modules(tmp_path) == {
        "summary.py": ["tuning/a/summary.py", "reports/summary.py"]
    }
    found = repeated_definitions(tmp_path)
    assert found == {
        "Launch": ["tuning/a/summary.py", "reports/summary.py"],
        "markdown": ["baselines/bench.py"],
    }
