"""Run folders and storages as a hostile but realistic user leaves them: planted links, crafted
options, damaged files and storages, passwords in URLs. Each gives one line (exit 2) and
leaves what it names as it was, or is repaired by a resume."""

import json
import os
import shutil
import sqlite3

import pytest
from conftest import SMALL, tune

from baselines.arms import ARMS
from baselines.case import Case
from baselines.pipeline import lower, make_target
from tuning.cli.main import main
from tuning.runfolder.store import RunError, folder_writer, write_text
from tuning.tuners.optuna.samplers import make_sampler
from tuning.tuners.optuna.study import open_study


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run with a tuner: every kind of file a run folder holds."""
    out = tmp_path_factory.mktemp("untrusted") / "run"
    tune("--budget", "3", "--tuners", "optuna", "--out", str(out), *SMALL, check_exit=0)
    return out


@pytest.fixture
def copy(finished, tmp_path):
    target = tmp_path / "run"
    shutil.copytree(finished, target, ignore=shutil.ignore_patterns("tune.lock"))
    return target


def _one_line(capsys, code: int, *parts: str) -> str:
    """`main`'s outcome: exit code 2 and one line on stderr that holds every part."""
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert all(part in lines[0] for part in parts), lines[0]
    return lines[0]


def test_a_link_planted_in_a_run_folder_is_refused_and_its_target_left(copy, tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (copy / "report.md").unlink()
    (copy / "report.md").symlink_to(victim)
    _one_line(capsys, main(["report", str(copy)]), "report.md is a symbolic link")
    assert victim.read_text() == "precious"


def test_outputs_replace_a_planted_link_instead_of_following_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "report.md").symlink_to(victim)
    write_text(tmp_path / "report.md", "the report")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "report.md").is_symlink()
    assert (tmp_path / "report.md").read_text() == "the report"


def test_ir_dumps_replace_a_planted_link_instead_of_following_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    dumps = tmp_path / "ir"
    dumps.mkdir()
    (dumps / "06_FuseTIR.py").symlink_to(victim)
    lower(
        Case(channels=2, height=12, width=12), ARMS["on"], make_target("llvm"), folder_writer(dumps)
    )
    assert victim.read_text() == "precious" and not (dumps / "06_FuseTIR.py").is_symlink()
    assert "def main" in (dumps / "06_FuseTIR.py").read_text()


def test_a_stored_storage_outside_the_run_folder_needs_the_command_line(copy, tmp_path, capsys):
    victim = tmp_path / "victim.db"
    victim.write_bytes(b"mine")
    meta = json.loads((copy / "run.json").read_text())
    meta["options"]["storage"] = f"sqlite:///{victim}"
    (copy / "run.json").write_text(json.dumps(meta))
    _one_line(capsys, main(["--resume", str(copy)]), "outside the run folder", "--storage URL")
    assert victim.read_bytes() == b"mine"


DAMAGE = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2]),
    "garbled": lambda path: path.write_bytes(b"\x00\xff{garbage"),
    "missing": lambda path: path.unlink(),
}


@pytest.mark.parametrize(
    "name, damage",
    [
        ("run.json", "truncated"),
        ("run.json", "garbled"),
        ("run.json", "missing"),
        ("environment.json", "garbled"),
        ("environment.json", "missing"),
        ("trials/trial_0.json", "truncated"),
        ("trials/trial_0.json", "missing"),
        ("tuners/optuna/summary.json", "garbled"),
        ("tuners/optuna/summary.json", "missing"),
        ("tuners/optuna/trials.json", "truncated"),
    ],
)
def test_a_damaged_or_missing_file_is_named_in_one_line(copy, capsys, name, damage):
    DAMAGE[damage](copy / name)
    line = _one_line(capsys, main(["report", str(copy)]), name.split("/")[-1])
    assert ("run.json" in line and "--out" in line) or f"tune --resume {copy}" in line


def _set(path, change) -> None:
    """Rewrite a JSON file of the run as valid JSON of another shape."""
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


WRONG_SHAPES = {
    "run.json a list": ("run.json", lambda meta: [meta]),
    "run.json repeat as text": (
        "run.json",
        lambda meta: {**meta, "protocol": {**meta["protocol"], "repeat": "5"}},
    ),
    "run.json a Case value out of range": (
        "run.json",
        lambda meta: {**meta, "case": {**meta["case"], "channels": -1}},
    ),
    "trial without checks": (
        "trials/trial_0.json",
        lambda trial: {k: v for k, v in trial.items() if k != "checks"},
    ),
    "summary with text for a time": (
        "tuners/optuna/summary.json",
        lambda summary: {**summary, "best_kernel_us": "fast"},
    ),
    "rows an object": ("tuners/optuna/trials.json", lambda rows: {"rows": rows}),
    "environment a list": ("environment.json", lambda environment: [environment]),
}


@pytest.mark.parametrize("name, change", WRONG_SHAPES.values(), ids=WRONG_SHAPES)
def test_a_file_of_the_wrong_shape_is_named_in_one_line(copy, capsys, name, change):
    _set(copy / name, change)
    line = _one_line(capsys, main(["report", str(copy)]), f"{copy / name} is damaged (")
    assert ("run.json" in line and "--out" in line) or f"tune --resume {copy}" in line


@pytest.mark.parametrize(
    "name, change, says",
    [
        (
            "run.json",
            lambda meta: {**meta, "tuners": "optuna"},
            "tuners should be a list, not text",
        ),
        ("kernels.json", lambda kernels: list(kernels), "the file should be an object, not a list"),
    ],
)
def test_a_resume_names_a_file_of_the_wrong_shape_in_one_line(copy, name, change, says):
    _set(copy / name, change)
    done = tune("--resume", str(copy), check_exit=2)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(f"tune: error: {copy / name} is damaged ({says}); "), line


def test_a_resume_rebuilds_what_the_storages_and_the_machine_give(copy):
    (copy / "environment.json").unlink()
    DAMAGE["garbled"](copy / "tuners" / "optuna" / "summary.json")
    tune("--resume", str(copy), check_exit=0)
    assert json.loads((copy / "environment.json").read_text())["tvm"]
    assert json.loads((copy / "tuners" / "optuna" / "summary.json").read_text())["trials"] == 3


def _open(url):
    return open_study(url, "fused-pool", make_sampler("tpe", 0), {"case": "x"})


def test_a_garbled_journal_is_refused_and_left_as_it_is(tmp_path):
    journal = tmp_path / "study.journal"
    _open(f"journal://{journal}").ask()
    damaged = journal.read_bytes() + b"{not json\n" + journal.read_bytes()
    journal.write_bytes(damaged)
    with pytest.raises(RunError, match=r"line \d+ is not a journal entry\); it was left as it is"):
        _open(f"journal://{journal}")
    assert journal.read_bytes() == damaged


def test_a_sqlite_study_damaged_in_its_data_pages_is_one_line(tmp_path):
    path = tmp_path / "study.db"
    study = _open(f"sqlite:///{path}")
    for value in range(40):
        study.tell(study.ask(), value)
    page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as handle:  # the header (page 1) intact, every other page hit
        for number in range(1, path.stat().st_size // page):
            handle.seek(number * page + 64)
            handle.write(b"\xde\xad\xbe\xef" * 64)
    damaged = path.read_bytes()
    with pytest.raises(RunError) as caught:
        _open(f"sqlite:///{path}")
    assert "is damaged" in str(caught.value) and "\n" not in str(caught.value)
    assert path.read_bytes() == damaged


def test_a_password_never_reaches_a_file_or_a_message_when_the_server_is_away(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        [
            "--budget",
            "2",
            "--tuners",
            "optuna",
            "--out",
            str(out),
            *SMALL,
            "--storage",
            "postgresql://tuner:S3CRET-pw@127.0.0.1:9/db",
        ]
    )
    captured = capsys.readouterr()
    assert code == 2 and "cannot open the Optuna storage" in captured.err
    assert "S3CRET" not in captured.err + captured.out
    assert not out.exists()  # the storage is tried before the run folder is made


@pytest.mark.skipif(
    not os.environ.get("POOL_TUNING_PG_URL"),
    reason="no PostgreSQL server (set POOL_TUNING_PG_URL; .ci/run starts one)",
)
def test_a_password_in_the_storage_url_is_in_no_file_the_run_writes(tmp_path):
    """The CI server trusts local connections, so any password is accepted: it is used, and
    searched for in every file of the run folder and in everything printed."""
    from tuning.redact import with_password, without_password

    secret = "S3CRET-pw-4242"
    server = without_password(os.environ["POOL_TUNING_PG_URL"])
    out = tmp_path / "run"
    first = tune(
        "--budget",
        "4",
        "--tuners",
        "optuna",
        "--workers",
        "2",
        "--out",
        str(out),
        *SMALL,
        "--storage",
        with_password(server, secret),
        check_exit=0,
    )
    env = {**os.environ, "PG_SECRET": secret}
    import subprocess

    from conftest import ROOT, TUNE

    again = subprocess.run(
        [*TUNE, "--resume", str(out), "--storage", server, "--storage-password-env", "PG_SECRET"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    printed = first.stdout + first.stderr + again.stdout + again.stderr
    assert secret not in printed
    assert [p for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()] == []
    assert ":***@" in (out / "report.md").read_text()


def test_a_run_file_of_another_format_is_refused_in_one_line(copy, capsys):
    meta = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**meta, "format": 99}))
    _one_line(capsys, main(["--resume", str(copy)]), "format 99", "reads format 1")
