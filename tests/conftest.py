import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

# Extract the committed archives with tarfile's "data" filter where Python has one (not 3.11.2).
if hasattr(tarfile, "data_filter"):
    tarfile.TarFile.extraction_filter = staticmethod(tarfile.data_filter)

ROOT = Path(__file__).resolve().parents[1]
# A user's two-input FILE.py:FUNCTION spec (`two_inputs`), for the model tests.
USER_MODELS = ROOT / "tests" / "fixtures" / "user_models.py"
sys.path.insert(0, str(ROOT))

from tvm import s_tir  # noqa: E402

from pool_fusion_tuning.baselines.case import Case  # noqa: E402
from pool_fusion_tuning.baselines.torch_peer import torch_available  # noqa: E402
from pool_fusion_tuning.baselines.window_reduction import _choose_launch, _inline_window  # noqa: E402
from pool_fusion_tuning.tuning.tuners.space import Space  # noqa: E402

# The issue's graph and two others that change every shape parameter the template depends on.
DEFAULT = Case()
WINDOW3 = Case(
    channels=4, height=20, width=18, window=3, stride=1, prelude=False, tail=1, shared_output=True
)
ODD = Case(
    channels=3, height=23, width=29, window=2, stride=2, branches=2, tail=2, shared_output=False
)
CASES = [DEFAULT, WINDOW3, ODD]
# `tune` options for a quick real run on llvm: one timing process of one block, a small graph.
QUICK = (
    "--target llvm --processes 1 --blocks 1 --number 1 --repeat 1 --min-repeat-ms 0 --warmup-s 0"
)
SMALL = [*QUICK.split(), "--case", "channels=2", "height=12", "width=12", "branches=2"]


def read_json(path: Path):
    return json.loads(path.read_text())


def rule_launch(func, target):
    """(window, launch) the window rule reads off `func` and chooses for `target`."""
    window = _inline_window(s_tir.Schedule(func))
    return window, _choose_launch(window, target)


# Under `pytest -n 2` (--dist loadgroup) the tests sharing a module-scoped fixture are one unit,
# run by one worker in order, so the fixture is built once; a unit holding a `slow` test goes
# first, so that no worker is left with a long test at the end.


def _module_fixtures(item: pytest.Item) -> list[str]:
    """The fixtures built once per module that `item` uses, itself or through another one."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.items() if info else ()
    module = item.nodeid.split("::")[0]
    scoped = (name for name, chain in defs if chain[-1].scope in ("class", "module", "package"))
    return sorted(f"{module}::{name}" for name in scoped)


def _units(items: list[pytest.Item]) -> list[str]:
    """Each item's unit: the connected set of tests sharing module fixtures, or the item alone."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    used = [_module_fixtures(item) for item in items]
    for keys in used:
        for key in keys[1:]:
            parent[root(key)] = root(keys[0])
    return [root(keys[0]) if keys else item.nodeid for item, keys in zip(items, used)]


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups and -m selects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group the tests that share a module's fixture and put the slow units first (above)."""
    units = _units(items)
    slow = {unit for item, unit in zip(items, units) if item.get_closest_marker("slow")}
    for item, unit in zip(items, units):
        if unit != item.nodeid:
            item.add_marker(pytest.mark.xdist_group(unit))
        if unit in slow:
            item.add_marker(pytest.mark.slow)
    order = {id(item): unit not in slow for item, unit in zip(items, units)}
    items.sort(key=lambda item: order[id(item)])  # stable: the rest keep their order


# A test marked with one of these (pyproject.toml) skips, saying what is missing and how to get
# it, where the machine lacks it: the README's `pytest` passes on a fresh machine.
def _has_cuda_gpu() -> bool:
    import tvm

    return bool(tvm.cuda(0).exist)


NEEDS = {
    "torch": (torch_available, "needs PyTorch: pip install -e '.[torch]'"),
    "gpu": (_has_cuda_gpu, "needs a CUDA GPU"),
    "nvcc": (lambda: shutil.which("nvcc") is not None, "needs nvcc (the CUDA toolkit) on PATH"),
    "postgres": (
        lambda: bool(os.environ.get("POOL_TUNING_PG_URL")),
        "needs a PostgreSQL server: set POOL_TUNING_PG_URL (.ci/run starts one)",
    ),
}


@functools.cache
def _has(need: str) -> bool:
    return NEEDS[need][0]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers():
        if mark.name in NEEDS and not _has(mark.name):
            pytest.skip(NEEDS[mark.name][1])


@pytest.fixture(params=CASES, ids=["default", "window3", "odd"])
def case(request):
    return request.param


TUNE = [sys.executable, "-m", "pool_fusion_tuning"]


def python_path(*folders: Path) -> str:
    """PYTHONPATH with `folders` first, then what it holds (the GPU machine's TVM is there)."""
    return os.pathsep.join([*map(str, folders), *filter(None, [os.environ.get("PYTHONPATH")])])


def _with(env: dict | None) -> dict | None:
    """This process's environment with `env` added (None: inherited as it is)."""
    return {**os.environ, **env} if env else None


def tune(*args, check_exit=None, timeout=900, env=None, cwd=ROOT):
    """Run `tune` as a user would (`env` added, in `cwd`); optionally assert its exit code."""
    done = subprocess.run(
        [*TUNE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_with(env),
    )
    if check_exit is not None:
        assert done.returncode == check_exit, done.stderr[-3000:]
    return done


def tune_killed_when(condition, *args, timeout=600, env=None):
    """Start `tune` (`env` added); SIGKILL it and its workers once `condition()` holds."""
    process = subprocess.Popen(
        [*TUNE, *args],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_with(env),
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None and not condition():
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# Children are killed by the kernel when their parent dies; allow for a loaded machine.
GRACE_S = 30


def assert_all_gone(children) -> None:
    """Every psutil process in `children` ends within GRACE_S (else killed, and the test
    fails); a zombie counts as ended."""
    import psutil

    def running(child) -> bool:
        try:
            return child.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + GRACE_S
    while any(running(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [c for c in children if running(c)]
    names = [" ".join(c.cmdline()[:4]) for c in alive]
    for child in alive:
        child.kill()
    assert not alive, names


class InjectingSpace(Space):
    """The real space, the points `faults` names by (outputs_w, outputs_h) given its class."""

    faults: dict = {}

    def config(self, params):
        fault = self.faults.get((params["outputs_w"], params["outputs_h"]))
        return fault(**params) if fault else super().config(params)


def stored_sweep(tmp_path: Path, reported=()) -> tuple[Path, list[str]]:
    """The committed H200 sweep extracted under `tmp_path` and its Cases; the `reported` Cases'
    report.json rendered from their trials (None: every Case's)."""
    import json

    from pool_fusion_tuning.reports.render import render_run
    from pool_fusion_tuning.runfolder.store import Run

    with tarfile.open(ROOT / "reports" / "h200" / "sweep" / "cases.tar.xz") as archive:
        archive.extractall(tmp_path)
    out = tmp_path / "sweep"
    names = json.loads((out / "sweep.json").read_text())["settings"]["cases"]
    for name in names if reported is None else reported:
        render_run(Run(out / name))
    return out, names


# Code run first by `python_without_tvm`: every import of tvm fails, as where TVM is absent.
NO_TVM = """
import sys
class NoTVM:
    def find_spec(self, name, path=None, target=None):
        if name == "tvm" or name.startswith("tvm."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, NoTVM())
"""


def python_without_tvm(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python, from the project's root, where `import tvm` fails."""
    done = subprocess.run(
        [sys.executable, "-c", NO_TVM + code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


class TookTooLong(Exception):
    """A call that should return at once blocked (a FIFO opened for reading, say)."""


@contextlib.contextmanager
def within(seconds: int):
    """Fail, not hang, where the block takes over `seconds` (SIGALRM, main thread)."""

    def expire(signum, frame):
        raise TookTooLong(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def tuners_only(*specs):
    """The tuner registry holding `specs` alone, put back whole and in order afterwards
    (monkeypatch's undo would reverse the order the default tuners follow)."""
    from pool_fusion_tuning.tuning.tuners.registry import TUNERS

    kept = dict(TUNERS)
    TUNERS.clear()
    TUNERS.update({spec.name: spec for spec in specs})
    try:
        yield
    finally:
        TUNERS.clear()
        TUNERS.update(kept)


def plant(path: Path, kind: str, victim: Path | None = None) -> None:
    """Put a FIFO, socket, folder, or hard or symbolic link to `victim` at a run file's path."""
    import shutil
    import socket

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":  # bound from its folder: a socket's path is at most 107 bytes
        here = os.getcwd()
        os.chdir(path.parent)
        try:
            socket.socket(socket.AF_UNIX).bind(path.name)
        finally:
            os.chdir(here)
    elif kind == "folder":
        path.mkdir()
    elif kind in ("hard link", "symbolic link") and victim is not None:
        if kind == "hard link":
            os.link(victim, path)
        else:
            path.symlink_to(victim)
    else:
        raise ValueError(f"{kind} (a link needs its victim)")


def one_line(capsys, code: int, *parts: str) -> str:
    """Assert `main` exits 2 with one stderr line holding every part, no traceback; the line."""
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert all(part in lines[0] for part in parts), lines[0]
    return lines[0]


# A user's text names none of the project's issues ("issue 22") nor an upstream issue by bare
# number ("the #20401 pattern"); apache/tvm#20401 is a citation, not such a name.
_PROJECT_ISSUE = r"\bissue \d+\b|\(issue \d+\)"
_ISSUE_NUMBER = re.compile(rf"{_PROJECT_ISSUE}|(?<![\w/])#\d+", re.IGNORECASE)
_PROJECT_ISSUE_ONLY = re.compile(_PROJECT_ISSUE, re.IGNORECASE)


def issue_numbers(text: str, bare: bool = True) -> list[str]:
    """The issue numbers `text` names, each with its context; `bare=False` skips a bare `#N`
    (a quoted upstream commit subject may hold one)."""
    pattern = _ISSUE_NUMBER if bare else _PROJECT_ISSUE_ONLY
    return [text[max(0, m.start() - 40) : m.end() + 20] for m in pattern.finditer(text)]
