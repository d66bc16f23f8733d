"""Hostile input to `tune upstream`, `sweep` and `models`: user files and code, storages,
children, damaged runs; one line (exit 2), nothing of the user's changed."""

import json
import os
from pathlib import Path

import pytest
from conftest import one_line, read_json

from pool_fusion_tuning.runfolder.checker import problem
from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.upstream.committed import committed
from pool_fusion_tuning.tuning.upstream.figure_records import FIGURE_RECORDS

AUTHOR = ["--author", "A <a@example.org>"]
OPTIONS = {"report.json": "--run", "sweep.json": "--sweep", "models.json": "--models"}
OPTIONS["window_bench.json"] = "--bench"


def _upstream(tmp_path: Path, option: str, given: Path) -> int:
    return main(["upstream", "--out", str(tmp_path / "out"), *AUTHOR, option, str(given)])


@pytest.mark.parametrize("name", sorted(FIGURE_RECORDS))
def test_the_committed_figure_files_have_the_type_read(name):
    assert problem(committed(OPTIONS[name])[0], FIGURE_RECORDS[name]) is None


# Crafted figure files: (file, content) -> what the one line says.
CRAFTED = [
    ("report.json", '{"arms": {"on": {"kernel_us": NaN}}}', "NaN is not a number"),
    ("report.json", '{"arms": {"on": {"kernel_us": 1e999}}}', "not a finite number"),
    ("report.json", '{"arms": {"on": {"kernel_us": -3}}}', "arms.on.kernel_us"),
    ("report.json", '{"arms": []}', "arms should be an object"),
    (
        "report.json",
        '{"arms": {"on": {}, "fixed": {}}, "ratios": {"fixed/on": {"low": 1}}}',
        "ratios",
    ),
    ("report.json", '{"fused_kernel": [5]}', "fused_kernel[0]"),
    ("report.json", "[1, 2]", "should be an object"),
    ("sweep.json", '{"cases": [1]}', "cases[0]"),
    ("sweep.json", '{"cases": [{"fixed_over_on": {"ratio": "x"}}]}', "fixed_over_on"),
    ("models.json", '{"rows": [{"gpu_ms": {"tvm-default": "slow"}}]}', "rows[0].gpu_ms"),
    ("window_bench.json", '{"kernels": [{"kernel": "k"}]}', "kernels[0].where is missing"),
    ("window_bench.json", '{"kernels": [{"kernel": "k", "where": "w", "lists": {}}]}', "lists"),
    ("window_bench.json", '{"kernels": [7]}', "kernels[0]"),
    (
        "window_bench.json",
        '{"kernels": [{"kernel": "k", "where": "w", "lists": {"default": {"rule": "R", '
        '"grid": 1, "block": 1, "correct": true, "median_us": 1.0}}}]}',
        "not all timed",
    ),
    ("models.json", '{"a": 1, "a": 2}', "given twice"),
    ("sweep.json", "\xff", "damaged"),
]


@pytest.mark.parametrize(("name", "content", "says"), CRAFTED)
def test_a_crafted_figure_file_is_one_line_naming_it(tmp_path, capsys, name, content, says):
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1"))
    error = one_line(capsys, _upstream(tmp_path, OPTIONS[name], path), str(path), says)
    assert error.startswith("tune: error:")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder"])
@pytest.mark.parametrize("where", ["report.json", "environment.json"])
def test_a_figure_folder_s_special_files_are_never_read(tmp_path, capsys, kind, where):
    """A FIFO would hang the command, /dev/zero feed it for ever: neither is opened to be read."""
    run = tmp_path / "run"
    run.mkdir()
    report, _, _ = committed("--run")
    (run / "report.json").write_text(json.dumps(report))
    (run / "environment.json").write_text('{"date": "2026-01-02T00:00:00"}')
    special = run / where
    special.unlink()
    if kind == "fifo":
        os.mkfifo(special)
    elif kind == "zero":
        special.symlink_to("/dev/zero")
    else:
        special.mkdir()
    code = _upstream(tmp_path, "--run", run)
    if where == "report.json":
        one_line(capsys, code, str(special), "not a regular file")
    else:  # environment.json passed over: the report's own environment gives the rule's hash
        assert code == 0, capsys.readouterr().err
        pr = (tmp_path / "out" / "PR.md").read_text()
        assert f"(`{run}`)" in pr and "date not recorded" in pr and "nan" not in pr.lower()


# ---- the user's own code: a zoo's list_models(), a FILE.py:FUNCTION ----

ZOO = "def build():\n    pass\ndef list_models():\n"
LISTERS = {
    "exits": ("    import sys; sys.exit(0)\n", "called sys.exit(0)"),
    "os_exit": ("    import os; os._exit(0)\n", "called os._exit(0)"),
    "raises": ("    raise ValueError('mine')\n", "raised ValueError: mine"),
    "interrupt": ("    raise KeyboardInterrupt\n", "was interrupted (KeyboardInterrupt)"),
    "empty": ("    return []\n", "returned no name"),
    "twice": ("    return ['build', 'build']\n", "returns build more than once"),
}


@pytest.mark.parametrize("name", LISTERS)
def test_a_zoo_s_list_models_that_misbehaves_is_one_line_naming_it(tmp_path, capsys, name):
    body, says = LISTERS[name]
    zoo = tmp_path / f"{name}.py"
    zoo.write_text(ZOO + body)
    out = tmp_path / "out"
    code = main(["models", "--zoo", str(zoo), "--analyze", "--out", str(out)])
    line = one_line(capsys, code, str(zoo), says)
    assert "--only" not in line and "--resume" not in line and not out.exists()


@pytest.mark.torch
def test_a_keyboard_interrupt_from_a_model_function_is_one_line(tmp_path, capsys):
    (tmp_path / "mine.py").write_text("def build():\n    raise KeyboardInterrupt\n")
    spec = f"{tmp_path / 'mine.py'}:build"
    code = main(["model", spec, "--analyze", "--out", str(tmp_path / "out")])
    assert "measured so far" not in one_line(capsys, code, spec, "interrupted")


# ---- Cases files ----


@pytest.mark.parametrize(
    ("suffix", "content", "says"),
    [
        (".json", "{}", "defines no Case"),
        (".toml", "", "defines no Case"),
        (".json", json.dumps({f"c{i}": {"window": 3} for i in range(1001)}), "1,001 Cases"),
        (".json", '{"x": "' + "a" * 2**20 + '"}', "more than the 1,048,576 allowed"),
        (".json", '{"big": {"branches": 2000}}', "4,004,000 operators"),
    ],
)
def test_a_cases_file_that_is_empty_or_too_large_is_one_line(
    tmp_path, capsys, suffix, content, says
):
    path = tmp_path / f"cases{suffix}"
    path.write_text(content)
    out = tmp_path / "out"
    code = main(["sweep", "--cases-file", str(path), "--target", "llvm", "--out", str(out)])
    one_line(capsys, code, says)
    assert not out.exists()


def test_a_sweep_s_out_is_checked_before_its_cases_file_is_read(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("the user's")
    os.mkfifo(tmp_path / "cases.json")  # would hang a reader
    argv = ["sweep", "--cases-file", str(tmp_path / "cases.json"), "--out", str(tmp_path / "mine")]
    one_line(capsys, main([*argv, "--target", "llvm"]), "is not a sweep folder")


# ---- storages ----


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://", "sqlite:///x.db?mode=memory"])
def test_a_storage_in_memory_is_refused_for_a_run(tmp_path, capsys, url):
    out = tmp_path / "out"
    code = main(["--target", "llvm", "--budget", "0", "--storage", url, "--out", str(out)])
    one_line(capsys, code, "in memory")
    assert not out.exists()


def test_a_sqlite_file_of_the_user_s_own_is_refused_unless_forced(tmp_path, capsys):
    import sqlite3

    from pool_fusion_tuning.tuning.tuners.optuna.storages import storage_problem

    db = tmp_path / "mine.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    before = db.read_bytes()
    url = f"sqlite:///{db}"
    out = tmp_path / "out"
    code = main(["--target", "llvm", "--budget", "0", "--storage", url, "--out", str(out)])
    one_line(capsys, code, str(db), "not Optuna's (notes)", "--storage-force")
    assert db.read_bytes() == before and not out.exists()
    assert storage_problem(url, force=True) is None
    optuna_db = tmp_path / "study.db"
    with sqlite3.connect(optuna_db) as connection:
        connection.execute("CREATE TABLE studies (study_id INTEGER)")
    assert storage_problem(f"sqlite:///{optuna_db}") is None


# ---- child processes ----


def test_a_child_imports_the_installed_package_not_the_current_folder_s(tmp_path):
    import subprocess

    from pool_fusion_tuning.tuning.base.children import module_command

    (tmp_path / "tuning").mkdir()
    (tmp_path / "tuning" / "__init__.py").write_text("open('planted-ran', 'w')\n")
    done = subprocess.run(
        module_command("pool_fusion_tuning.tuning.base.errors"), cwd=tmp_path, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "planted-ran").exists()


# ---- tune report on damaged folders ----

H200 = Path(__file__).resolve().parents[1] / "reports" / "h200"


def _stored(tmp_path: Path, archive: str, folder: str) -> Path:
    import tarfile

    with tarfile.open(H200 / archive) as stored:
        members = [m for m in stored.getmembers() if m.name.startswith(f"{folder}/")]
        stored.extractall(tmp_path, members=members)
    return tmp_path / folder


def _change(path: Path, keys: list, value) -> None:
    data = read_json(path)
    inner = data
    for key in keys[:-1]:
        inner = inner[key] if key != "*" else next(iter(inner.values()))
    last = keys[-1] if keys[-1] != "*" else next(iter(inner))
    inner[last] = value
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("value", [None, -0.5, "x"])
def test_a_study_s_damaged_importances_are_one_line(tmp_path, capsys, value):
    run = _stored(tmp_path, "run.tar.xz", "run")
    _change(run / "tuners" / "optuna" / "summary.json", ["importances", "*"], value)
    one_line(capsys, main(["report", str(run)]), "summary.json is damaged", "importances.")


@pytest.mark.parametrize("value", [-1, {"x": 1}])
def test_a_model_run_s_damaged_timer_is_one_line_with_the_model_command(tmp_path, capsys, value):
    models = _stored(tmp_path, "models/models.tar.xz", "models/resnet50")
    _change(models / "kernel_times.json", ["kernels", "*", "*", "timer"], value)
    line = one_line(capsys, main(["report", str(models)]), "kernel_times.json is damaged")
    assert "tune --resume" not in line and "the same command (tune models" in line, line


# ---- what an error line echoes ----


def test_an_escape_code_in_a_case_name_reaches_the_terminal_escaped(tmp_path, capsys):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"\x1b[31mred\x1b[0m": {"windw": 3}}))
    code = main(["sweep", "--cases-file", str(path), "--target", "llvm"])
    line = one_line(capsys, code, "\\x1b[31mred")
    assert "\x1b" not in line


def test_a_huge_spec_is_not_echoed_whole(tmp_path, capsys):
    spec = "x" * 100_000 + ".py:build"
    line = one_line(capsys, main(["model", spec, "--analyze", "--out", str(tmp_path / "o")]))
    assert len(line) < 2500 and "characters)" in line, line[:300]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--rules", "default,fixed,fixed"], "rule list 'fixed' is given twice"),
        (["--peers", "torch-eager,torch-eager"], "peer 'torch-eager' is given twice"),
        (["--tune-top", "3", "--budget", "0"], "at least 1, got 0"),
    ],
)
def test_a_model_s_repeated_or_empty_choices_are_one_line(tmp_path, capsys, options, says):
    argv = ["model", "torchvision:resnet18", "--target", "llvm", "--out", str(tmp_path / "o")]
    one_line(capsys, main([*argv, *options]), says)


@pytest.mark.torch
def test_a_model_file_too_large_to_be_one_is_not_imported(tmp_path, capsys):
    path = tmp_path / "huge.py"
    with path.open("wb") as sparse:  # 17 MB that take no disk
        sparse.truncate(17 * 2**20)
    code = main(["model", f"{path}:build", "--analyze", "--out", str(tmp_path / "o")])
    one_line(capsys, code, str(path), "more than the 16,777,216")
