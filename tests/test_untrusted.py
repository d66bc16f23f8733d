"""Hostile run folders and storages: planted links, crafted options, damaged files, passwords
in URLs; one line (exit 2), what it names left as it was, or repaired by a resume."""

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import SMALL, one_line, plant, read_json, tune, within

from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.pipeline import lower, make_target
from pool_fusion_tuning.runfolder.store import RunError, folder_writer, write_text
from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.tuners.optuna.optuna_study import open_study
from pool_fusion_tuning.tuning.tuners.optuna.samplers import make_sampler


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


def test_a_link_planted_in_a_run_folder_is_refused_and_its_target_left(copy, tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (copy / "report.md").unlink()
    (copy / "report.md").symlink_to(victim)
    one_line(capsys, main(["report", str(copy)]), "report.md is a symbolic link")
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
    meta = read_json(copy / "run.json")
    meta["options"]["storage"] = f"sqlite:///{victim}"
    (copy / "run.json").write_text(json.dumps(meta))
    one_line(capsys, main(["--resume", str(copy)]), "outside the run folder", "--storage URL")
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
    line = one_line(capsys, main(["report", str(copy)]), name.split("/")[-1])
    assert ("run.json" in line and "--out" in line) or f"tune --resume {copy}" in line


def _set(path, change) -> None:
    """Rewrite a JSON file of the run as valid JSON of another shape."""
    path.write_text(json.dumps(change(read_json(path))))


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
    line = one_line(capsys, main(["report", str(copy)]), f"{copy / name} is damaged (")
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


@pytest.mark.slow
def test_a_resume_rebuilds_what_the_storages_and_the_machine_give(copy):
    (copy / "environment.json").unlink()
    DAMAGE["garbled"](copy / "tuners" / "optuna" / "summary.json")
    tune("--resume", str(copy), check_exit=0)
    assert read_json(copy / "environment.json")["tvm"]
    assert read_json(copy / "tuners" / "optuna" / "summary.json")["trials"] == 3


def test_a_finished_run_resumed_keeps_every_time_it_spent(copy, capsys):
    """A resume that measures nothing keeps the summary's totals."""
    summary = copy / "tuners" / "optuna" / "summary.json"
    before = read_json(summary)["time_spent"]
    assert main(["--resume", str(copy)]) == 0
    after = read_json(summary)["time_spent"]
    assert before and set(after) >= set(before), (before, after)
    assert all(after[name] >= spent for name, spent in before.items())


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


@pytest.mark.slow
@pytest.mark.postgres
def test_a_password_in_the_storage_url_is_in_no_file_the_run_writes(tmp_path):
    """The CI server takes any password: none is found in the run folder or the output."""
    from pool_fusion_tuning.runfolder.redact import with_password, without_password

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
    again = tune(
        *("--resume", str(out), "--storage", server, "--storage-password-env", "PG_SECRET"),
        env={"PG_SECRET": secret},
        check_exit=0,
    )
    printed = first.stdout + first.stderr + again.stdout + again.stderr
    assert secret not in printed
    assert [p for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()] == []
    assert ":***@" in (out / "report.md").read_text()


def test_a_run_file_of_another_format_is_refused_in_one_line(copy, capsys):
    meta = read_json(copy / "run.json")
    (copy / "run.json").write_text(json.dumps({**meta, "format": 99}))
    one_line(capsys, main(["--resume", str(copy)]), "format 99", "reads format 1")


# Round 3: special files, links written through, values out of range, deep nesting.

# The files `tune report` reads.
READ_FILES = [
    "run.json",
    "environment.json",
    "trials/trial_0.json",
    "tuners/optuna/summary.json",
    "tuners/optuna/trials.json",
]


@pytest.mark.parametrize("kind", ["fifo", "socket", "folder"])
@pytest.mark.parametrize("name", READ_FILES)
def test_a_special_file_where_a_run_file_is_read_is_named_in_one_line(copy, capsys, name, kind):
    plant(copy / name, kind)
    with within(30):
        code = main(["report", str(copy)])
    line = one_line(capsys, code, str(copy / name))
    assert {"fifo": "a FIFO", "socket": "a socket", "folder": "a folder"}[kind] in line


@pytest.mark.parametrize("kind", ["fifo", "socket", "folder", "character device"])
def test_the_reader_opens_nothing_but_a_regular_file_and_never_blocks(tmp_path, kind):
    """Every read is `store.read_bytes`, a non-blocking open (a FIFO would block for ever)."""
    from pool_fusion_tuning.runfolder.store import NotRegular, read_bytes, read_json

    path = Path("/dev/zero") if kind == "character device" else tmp_path / "kernels.json"
    if kind != "character device":
        plant(path, kind)
    with within(10):
        with pytest.raises(NotRegular, match=f"{path} is a"):
            read_bytes(path)
        with pytest.raises(RunError, match="not a regular file"):
            read_json(path)


def test_the_kernel_cache_of_a_resume_never_blocks_on_a_fifo(tmp_path):
    """The tuner thread that hung opening a FIFO at kernels.json (Ctrl-C could not stop it)."""
    from pool_fusion_tuning.tuning.candidates.kernel_cache import KernelCache

    plant(tmp_path / "kernels.json", "fifo")
    with within(10), pytest.raises(RunError, match="kernels.json is a FIFO, not a regular file"):
        KernelCache(tmp_path / "kernels.json")


@pytest.mark.parametrize("name", ["kernels.json", "run.json", "environment.json"])
def test_a_resume_names_a_fifo_in_the_run_in_one_line(copy, name):
    plant(copy / name, "fifo")
    done = tune("--resume", str(copy), check_exit=2, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == (
        f"tune: error: {copy / name} is a FIFO; a run folder holds only its own files: remove it"
    )


@pytest.mark.parametrize("kind", ["hard link", "symbolic link", "fifo"])
def test_the_lock_is_never_taken_through_a_link_nor_truncated(copy, tmp_path, capsys, kind):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n" * 100)
    plant(copy / "tune.lock", kind, victim)
    with within(30):
        code = main(["report", str(copy)])
    one_line(capsys, code, str(copy / "tune.lock"))
    assert victim.read_text() == "precious\n" * 100


def test_a_lock_file_is_written_over_its_first_line_only(tmp_path):
    from pool_fusion_tuning.runfolder.lock import LOCK_FILE, hold, release

    before = "0" * 30 + "\nleft as it was\n"
    (tmp_path / LOCK_FILE).write_text(before)
    hold(tmp_path)
    try:
        text = (tmp_path / LOCK_FILE).read_text()
        assert text.splitlines()[0] == str(os.getpid()) and len(text) == len(before)
        assert text.endswith("\nleft as it was\n")
    finally:
        release(tmp_path)


@pytest.mark.parametrize("kind", ["hard link", "fifo"])
@pytest.mark.parametrize("name", ["details.log", "tuners/optuna/study.db"])
def test_a_file_appended_in_place_is_never_written_through_a_link(copy, tmp_path, name, kind):
    """Neither details.log nor the study is written through a hard link or a FIFO."""
    victim = tmp_path / "victim.db"
    victim.write_bytes((copy / name).read_bytes())
    kept = victim.read_bytes()
    plant(copy / name, kind, victim)
    done = tune("--resume", str(copy), check_exit=2, timeout=300)
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(f"tune: error: {copy / name} ") and "Traceback" not in done.stderr
    assert victim.read_bytes() == kept


@pytest.mark.parametrize("kind", ["hard link", "symbolic link", "fifo"])
def test_metaschedule_s_log_and_database_are_checked_before_they_are_opened(tmp_path, kind):
    from pool_fusion_tuning.tuning.tuners.metaschedule.database import FILES, open_database
    from pool_fusion_tuning.tuning.tuners.metaschedule.tune import logs_to

    victim = tmp_path / "victim.json"
    victim.write_text("{}\n")
    folder = tmp_path / "ms-default"
    for name in (FILES[0], "tuning.log"):
        plant(folder / name, kind, victim)
    with within(30):
        with pytest.raises(RunError, match=f"{FILES[0]} (is a|has 3 hard links)"):
            open_database(folder, print)
        with pytest.raises(RunError, match="tuning.log (is a|has 3 hard links)"):
            with logs_to(folder / "tuning.log"):
                pass
    assert victim.read_text() == "{}\n"


@pytest.mark.parametrize("scheme", ["journal://", "sqlite:///"])
def test_an_optuna_storage_that_is_a_fifo_is_refused_before_optuna_opens_it(tmp_path, scheme):
    plant(tmp_path / "study", "fifo")
    with within(30), pytest.raises(RunError, match="is a FIFO, not a regular file"):
        _open(f"{scheme}{tmp_path / 'study'}")


def _sample_at(path, value: str) -> None:
    """Put `value` (JSON text, e.g. NaN) first among the first arm's samples of a trial."""
    text = path.read_text()
    start = text.index("[", text.index('"off"', text.index('"block_samples_us"')))
    inner = text.index("[", start + 1)
    path.write_text(text[: inner + 1] + value + ", " + text[inner + 1 :])


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400", "1e308", "-1"])
def test_non_finite_or_impossible_samples_are_damage_found_before_anything_is_written(
    copy, capsys, value
):
    before = {name: (copy / name).read_bytes() for name in ("report.md", "report.json")}
    _sample_at(copy / "trials" / "trial_0.json", value)
    line = one_line(capsys, main(["report", str(copy)]), "trial_0.json is damaged (")
    assert "delete it, then tune --resume" in line
    assert {name: (copy / name).read_bytes() for name in before} == before


@pytest.mark.parametrize(
    "name, field",
    [
        ("tuners/optuna/summary.json", "best_kernel_us"),
        ("tuners/optuna/default_kernel.json", "kernel_us"),
        ("kernels.json", None),
    ],
)
@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e308"])
def test_non_finite_or_impossible_kernel_times_are_damage(copy, name, field, value):
    from pool_fusion_tuning.runfolder.store import read_json

    path = copy / name
    data = read_json(path)
    if field is None:  # kernels.json: the first kernel's time
        field = "kernel_us"
        data = data[next(iter(data))]
    data[field] = "@@"
    text = json.dumps(data if name != "kernels.json" else {"k": data}).replace('"@@"', value)
    path.write_text(text)
    with pytest.raises(RunError, match=rf"{name.split('/')[-1]} is damaged \("):
        read_json(path)


@pytest.mark.parametrize("name", ["run.json", "trials/trial_0.json", "tuners/optuna/summary.json"])
def test_nesting_too_deep_for_the_parser_is_said_in_one_line(copy, capsys, name):
    (copy / name).write_text("[" * 200_000)
    one_line(capsys, main(["report", str(copy)]), f"{name.split('/')[-1]} is damaged (nested")


def test_a_key_given_twice_is_damage(copy, capsys):
    text = (copy / "environment.json").read_text()
    (copy / "environment.json").write_text('{"tvm": "0.1",' + text.lstrip()[1:])
    one_line(capsys, main(["report", str(copy)]), "environment.json is damaged (key 'tvm'")


STORED_OUT_OF_RANGE = {
    "trials -1": ("protocol", "trials", -1),
    "repeat -5": ("protocol", "repeat", -5),
    "number 0": ("protocol", "number", 0),
    "blocks 0": ("protocol", "blocks", 0),
    "min_repeat_ms -1": ("protocol", "min_repeat_ms", -1),
    "warmup_s -0.5": ("protocol", "warmup_s", -0.5),
    "checks 0": ("protocol", "checks", 0),
    "budget -3": (None, "budget", -3),
    "seed -1": ("options", "seed", -1),
    "workers 0": ("options", "workers", 0),
    "wall_s -1": (None, "wall_s", -1),
}


def _set_field(copy, where, name, value) -> None:
    meta = read_json(copy / "run.json")
    (meta[where] if where else meta)[name] = value
    (copy / "run.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "where, name, value", STORED_OUT_OF_RANGE.values(), ids=STORED_OUT_OF_RANGE
)
def test_a_stored_value_the_command_line_refuses_is_damage(copy, capsys, where, name, value):
    _set_field(copy, where, name, value)
    line = one_line(capsys, main(["report", str(copy)]), "run.json is damaged (")
    assert f"{name} should be between" in line and f"not {value}" in line


def test_a_resume_of_a_run_with_negative_trials_and_repeat_is_one_line(copy):
    """The issue's case: it used to exit 0 and report every arm wrong."""
    _set_field(copy, "protocol", "trials", -1)
    _set_field(copy, "protocol", "repeat", -5)
    (copy / "trials" / "trial_0.json").unlink()  # unfinished
    done = tune("--resume", str(copy), check_exit=2, timeout=120)
    assert "protocol.repeat should be between 1 and 100000, not -5" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda meta: meta["tuners"].append("autotvm"), "names tuner 'autotvm'"),
        (lambda meta: meta["arm_names"].append("nope"), "names arm 'nope'"),
        (lambda meta: meta["arms"].append({"name": "nope"}), "names arm 'nope'"),
        (lambda meta: meta["options"].update(sampler="bayes"), "names sampler 'bayes'"),
    ],
)
def test_a_name_this_tune_does_not_know_in_run_json_is_one_line_on_resume(
    copy, capsys, change, says
):
    meta = read_json(copy / "run.json")
    change(meta)
    (copy / "run.json").write_text(json.dumps(meta))
    line = one_line(capsys, main(["--resume", str(copy)]), says, "start a new run with --out")
    assert "which this tune does not know" in line


def test_an_arm_no_trial_measured_is_named_by_tune_report_not_reported_wrong(copy, capsys):
    meta = read_json(copy / "run.json")
    meta["arms"].append({"name": "nope"})
    (copy / "run.json").write_text(json.dumps(meta))
    one_line(capsys, main(["report", str(copy)]), "names arm 'nope', which no trial")


def test_a_stored_case_too_large_for_the_machine_is_refused_on_resume(copy, capsys):
    meta = read_json(copy / "run.json")
    case = {**meta["case"], "channels": 100000, "height": 4096, "width": 4096}
    meta["case"] = meta["identity"]["case"] = case
    (copy / "run.json").write_text(json.dumps(meta))
    one_line(capsys, main(["--resume", str(copy)]), "TVM indexes with int32")


def test_hostile_text_and_a_password_in_a_run_file_reach_the_reports_as_text(copy):
    """A crafted run.json and environment.json reach the reports as text, with no password."""
    secret = "S3CRET-pw-4242"
    meta = read_json(copy / "run.json")
    meta["command"] = f"tune --storage 'postgresql://u@h/db?password={secret}' <script>x</script>"
    meta["tuner_failures"] = {"optuna": "</details>\n\n@octocat ```| broken"}
    (copy / "run.json").write_text(json.dumps(meta))
    env = read_json(copy / "environment.json")
    env.update(gpu="<img src=x onerror=alert(1)>", tvm="```\n@apache/tvm-committers")
    (copy / "environment.json").write_text(json.dumps(env))
    assert main(["report", str(copy)]) == 0
    for name in ("report.md", "comment.md"):
        # what a code block holds is shown as text: the rest must hold no markup of its own
        text = re.sub(r"(?ms)^(`{3,})\n.*?^\1$", "", (copy / name).read_text())
        text = re.sub(r"`[^`\n]+`", "", text)  # and what a code span holds
        assert "<img" not in text and "<script" not in text, name
        assert re.search(r"@(octocat|apache)", text) is None, name
        assert text.count("</details>") == (1 if name == "comment.md" else 0), name
    written = [p for p in copy.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert written == [copy / "run.json"]  # the crafted file itself, as it was given
