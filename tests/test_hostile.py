"""Hostile inputs: paths a report follows, secrets in storage URLs, text pasted into GitHub;
one line (exit 2) or text shown as is, no traceback, no file written outside the folder."""

import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, TUNE, one_line, python_path, read_json

from pool_fusion_tuning.reports.escape import WORD_JOINER, code, fenced, md
from pool_fusion_tuning.runfolder.redact import (
    redact,
    remember_secret,
    with_password,
    without_password,
)
from pool_fusion_tuning.tuning.cli.main import main

MODELS = ROOT / "reports" / "h200" / "models" / "models.tar.xz"
# What a careless or hostile name, spec, error or environment string may hold.
HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "```\n# a heading",
    "</details>\n\n# out of the fold",
    "thanks @octocat and @apache/tvm-committers",
    "a | b | c",
    "one\nline\r\nmore",
    "[click](https://example.org) ![x](y)",
    "*bold* _it_ ~~gone~~",
    "\u202eevil.exe",
]
SECRET = "S3CRET-pw-4242"


def inert(text: str) -> bool:
    """Whether `text` (a fragment made by the escaping) can start no markup on GitHub."""
    unescaped_pipe = re.search(r"(?<!\\)\|", text)
    return (
        "<" not in text
        and "\n" not in text
        and "\u202e" not in text
        and re.search(r"@[A-Za-z0-9]", text) is None
        and "```" not in text
        and unescaped_pipe is None
        and re.search(r"(?<!\\)\[", text) is None
    )


def inert_span(text: str) -> bool:
    """Whether `text` is one code span nothing in it can close, or else `inert` text."""
    return re.fullmatch(r"`[^`|\n\r\u202e]+`", text) is not None or inert(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_outside_text_is_shown_as_text_never_as_markup(text):
    assert inert(md(text)) and inert_span(code(text)), (md(text), code(text))
    block = fenced(["key: " + text, "more: ````"])
    assert not any(line.startswith(block[0][:3]) for line in block[1:-1])
    assert len(block[0]) > 4 and block[-1] == block[0]


def test_ordinary_names_read_as_they_always_did():
    for name in ("inception_v3", "ms-default", "torchvision:resnet18", "fixed+capture"):
        assert md(name) == name and code(name) == f"`{name}`"
    assert md("@octocat") == f"@{WORD_JOINER}octocat"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://tuner:{SECRET}@db.example.org/runs",
        f"postgresql://tuner@db.example.org/runs?password={SECRET}",
        f"postgresql://db.example.org/runs?sslmode=require&PASSWORD={SECRET}",
        f"postgresql://tuner@db.example.org/runs?passfile=/home/u/{SECRET}&sslmode=require",
        f"postgresql+psycopg2://tuner@db.example.org/runs;password={SECRET}",
    ],
)
def test_a_storage_url_is_redacted_in_every_form(url):
    assert SECRET not in redact(f"tune --storage {url} --out x")
    assert SECRET not in without_password(url)
    assert "db.example.org/runs" in without_password(url)


def test_a_password_from_the_environment_is_hidden_wherever_it_appears(monkeypatch):
    monkeypatch.setenv("PGPASSWORD", SECRET)
    assert redact(f"connection failed: password {SECRET} refused") == (
        "connection failed: password *** refused"
    )
    remember_secret("typed-4242-pw")
    assert "typed-4242-pw" not in md("could not log in with typed-4242-pw")


def test_a_password_typed_as_a_query_parameter_goes_back_as_one():
    bare = without_password(f"postgresql://db.example.org/runs?password={SECRET}")
    assert with_password(bare, SECRET) == f"postgresql://db.example.org/runs?password={SECRET}"


@pytest.mark.parametrize(
    "storage",
    [
        f"postgresql://tuner@127.0.0.1:9/db?password={SECRET}",
        f"postgresql://tuner@127.0.0.1:9/db?sslmode=disable&passfile=/tmp/{SECRET}",
    ],
)
def test_a_query_password_reaches_no_message_when_the_server_is_away(tmp_path, capsys, storage):
    from conftest import SMALL

    out = tmp_path / "run"
    argv = ["--budget", "2", "--tuners", "optuna", "--out", str(out), *SMALL]
    code_ = main([*argv, "--storage", storage])
    captured = capsys.readouterr()
    assert code_ == 2 and "cannot open the Optuna storage" in captured.err
    assert SECRET not in captured.err + captured.out and "Traceback" not in captured.err
    assert not out.exists()


# ---- a tune models folder whose models.json names paths ----


@pytest.fixture(scope="module")
def models_folder(tmp_path_factory):
    """The committed H200 models folder, cut to one model (inception_v3)."""
    root = tmp_path_factory.mktemp("models")
    with tarfile.open(MODELS) as archive:
        archive.extractall(root)
    out = root / "models"
    stored = read_json(out / "models.json")
    for name in stored["models"][1:]:
        shutil.rmtree(out / name)
    kept = stored["models"][0]
    stored.update(models=[kept], settings={kept: stored["settings"][kept]}, rows=[])
    (out / "models.json").write_text(json.dumps(stored))
    return out


@pytest.fixture
def models_copy(models_folder, tmp_path):
    target = tmp_path / "models"
    shutil.copytree(models_folder, target)
    return target


def _set_models(folder, value) -> None:
    stored = read_json(folder / "models.json")
    if value is _MISSING:
        del stored["models"]
    else:
        stored["models"] = value
    (folder / "models.json").write_text(json.dumps(stored))


_MISSING = object()


def _victim(tmp_path):
    """A model folder outside the models folder, as a report would write it."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "report.md").write_text("precious")
    return victim


@pytest.mark.parametrize("form", ["relative", "absolute", "nested"])
def test_a_models_list_naming_a_path_is_refused_and_nothing_is_written_there(
    models_copy, tmp_path, capsys, form
):
    victim = _victim(tmp_path)
    inside = models_copy / "inception_v3"
    shutil.copytree(inside, victim, dirs_exist_ok=True)
    (victim / "report.md").write_text("precious")
    name = {"relative": "../victim", "absolute": str(victim), "nested": "inception_v3/../.."}[form]
    _set_models(models_copy, [name])
    one_line(capsys, main(["report", str(models_copy)]), "models.json is damaged", "plain name")
    # the victim holds the run's files and its own report.md, nothing the report would write
    assert sorted(p.name for p in victim.iterdir()) == sorted(
        {p.name for p in inside.iterdir()} | {"report.md"}
    )
    assert (victim / "report.md").read_text() == "precious"


def test_a_model_folder_that_is_a_link_is_refused_and_its_target_left(
    models_copy, tmp_path, capsys
):
    victim = tmp_path / "victim"
    shutil.move(models_copy / "inception_v3", victim)
    (victim / "report.md").write_text("precious")
    (models_copy / "inception_v3").symlink_to(victim)
    one_line(capsys, main(["report", str(models_copy)]), "is a symbolic link")
    assert (victim / "report.md").read_text() == "precious"
    assert not (victim / "tune.lock").exists()


@pytest.mark.parametrize(
    "value, says",
    [
        (5, "models should be a list, not a number"),
        (None, "models should be a list, not null"),
        (_MISSING, "models is missing"),
        ([5], "models[0] should be text, not a number"),
        ([None], "models[0] should be text, not null"),
        ([""], "not a plain name"),
        (["a\nb"], "not a plain name"),
    ],
)
def test_a_models_list_of_the_wrong_shape_is_one_line(models_copy, capsys, value, says):
    _set_models(models_copy, value)
    one_line(capsys, main(["report", str(models_copy)]), "models.json is damaged", says)


def test_hostile_text_in_a_model_run_is_shown_as_text_in_its_reports(models_copy):
    """A crafted model spec, `shows` line and command reach report.md and models.md as text."""
    folder = models_copy / "inception_v3"
    spec = "<img src=x onerror=alert(1)>|@octocat\n```"
    for name in ("model.json",):
        data = read_json(folder / name)
        data["spec"] = spec
        (folder / name).write_text(json.dumps(data))
    meta = read_json(folder / "run.json")
    meta.update(shows="</details> @apache/tvm-committers", command=f"tune x ?password={SECRET}")
    (folder / "run.json").write_text(json.dumps(meta))
    assert main(["report", str(models_copy)]) == 0
    for path in (folder / "report.md", models_copy / "models.md"):
        text = path.read_text()
        assert "<img" not in text and "</details>" not in text, path
        assert re.search(r"@(octocat|apache)", text) is None and SECRET not in text, path
    assert SECRET not in (folder / "report.json").read_text()


# ---- user code (FILE.py:FUNCTION) that misbehaves ----

USER_FILES = {
    "exits": ("import sys\ndef build():\n    sys.exit(3)\n", "called sys.exit(3)"),
    "os_exit": ("import os\nos._exit(0)\ndef build():\n    pass\n", "called os._exit(0)"),
    "raises": (
        "def helper():\n    raise ValueError('my own mistake')\ndef build():\n    helper()\n",
        "raised ValueError: my own mistake",
    ),
    "syntax": ("def build(:\n    pass\n", "raised SyntaxError"),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", USER_FILES)
@pytest.mark.parametrize("verbose", [False, True], ids=["plain", "verbose"])
def test_user_code_that_exits_or_raises_is_one_line(tmp_path, monkeypatch, capsys, name, verbose):
    import sys

    text, says = USER_FILES[name]
    (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    path = list(sys.path)
    out = tmp_path / "out"
    argv = ["model", f"{tmp_path / name}.py:build", "--analyze", "--out", str(out)]
    code_ = main([*argv, *(["--verbose"] if verbose else [])])
    err = capsys.readouterr().err
    assert code_ == 2 and says in err.splitlines()[0], err
    assert not out.exists() and sys.path == path and Path.cwd() == tmp_path
    if not verbose:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    elif name in ("raises", "syntax"):  # the user's frames, not tune's
        assert f"{name}.py" in err and "baselines/models" not in err and "tuning/" not in err


@pytest.mark.torch
def test_user_code_that_floods_changes_folder_and_imports_beside_it_runs(tmp_path, capfd):
    """Its folder is importable, its printing silent, its chdir moves no relative --out."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "helper.py").write_text("SIZE = 8\n")
    (user / "model.py").write_text(
        "import os\nimport torch\nfrom helper import SIZE\nprint('x' * 1_000_000)\n"
        "os.chdir('/')\n"
        "def build():\n    print('y' * 100_000)\n"
        "    return torch.nn.Conv2d(2, 2, 3), torch.randn(1, 2, SIZE, SIZE)\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [*TUNE, "model", f"{user / 'model.py'}:build", "--analyze", "--out", "rel"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": python_path(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "xxxx" not in done.stdout + done.stderr and "yyyy" not in done.stdout + done.stderr
    assert (work / "rel" / "report.md").is_file()


@pytest.mark.torch
@pytest.mark.parametrize(
    "body, options",
    [
        ("torch.linalg.inv(torch.sort(x, dim=-1).values)", []),  # an input kind TVM refuses
        (
            "torch.nn.functional.conv2d(x, torch.ones(2, 2, 3, 3), torch.ones(2))",
            ["--dtype", "float16"],
        ),
    ],
    ids=["token", "float16-bias"],
)
def test_a_model_tvm_refuses_leaves_the_user_s_folder_as_it_was(tmp_path, capsys, body, options):
    (tmp_path / "m.py").write_text(
        "import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = torch.nn.Conv2d(2, 2, 3)\n"
        "    def forward(self, x):\n"
        f"        return {body}\n"
        "def build():\n    return M(), torch.randn(1, 2, 6, 6)\n"
    )
    mine = tmp_path / "mine"
    mine.mkdir()
    argv = ["model", f"{tmp_path / 'm.py'}:build", "--analyze", "--out", str(mine), *options]
    code_ = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code_ == 2 and re.match(r"tune: error: (TVM|torch.export) cannot", err[-1]), err
    assert "Traceback" not in "\n".join(err)
    assert mine.is_dir() and list(mine.iterdir()) == []


@pytest.mark.parametrize("arch", ["junk", "sm_1", "90"])
def test_an_arch_that_is_not_one_is_one_line(tmp_path, capsys, arch):
    argv = [
        "model",
        "torchvision:resnet18",
        "--analyze",
        "--arch",
        arch,
        "--out",
        str(tmp_path / "o"),
    ]
    one_line(capsys, main(argv), f"--arch {arch!r} is not a CUDA arch")


def test_a_resume_of_a_model_run_says_how_to_finish_it(models_copy, capsys):
    one_line(capsys, main(["--resume", str(models_copy / "inception_v3")]), "is a model run")


@pytest.mark.parametrize("content", ["{}", "[]", '"x"'])
def test_a_foreign_models_json_under_tune_models_is_one_line(tmp_path, capsys, content):
    (tmp_path / "models.json").write_text(content)
    argv = ["models", "--models", "torchvision:resnet18", "--analyze", "--out", str(tmp_path)]
    one_line(capsys, main(argv), "models.json is damaged")
    assert (tmp_path / "models.json").read_text() == content


def test_two_files_with_one_function_name_are_two_models(tmp_path):
    from pool_fusion_tuning.tuning.models.model_series import (
        folder_names,
        model_plans,
        select_models,
    )

    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "net.py").write_text("def build():\n    pass\n")
    (tmp_path / "u.py").write_text("def build():\n    pass\n")
    given = [f"{tmp_path / f}:build" for f in ("a/net.py", "u.py", "b/net.py")]
    names = folder_names(select_models(",".join(given)))
    assert names == ["net-build-1", "u-build", "net-build-3"]
    with pytest.raises(Exception, match="names one model twice"):
        model_plans(select_models(f"{given[1]},{given[1]}"), {}, "tune models")


def test_tune_report_help_is_its_usage(capsys):
    assert main(["report", "--help"]) == 0 and "usage: tune report DIR" in capsys.readouterr().out


# ---- comment.md and report.md's paragraph ----


def test_the_comment_states_each_verdict_on_the_figure_the_console_does(tmp_path):
    """Each verdict of comment.md is word for word report.md's; the comment is within limit."""
    from pool_fusion_tuning.reports.comment import LIMIT, render_comment
    from pool_fusion_tuning.reports.markdown import headline
    from pool_fusion_tuning.reports.report_data import summarize_run
    from pool_fusion_tuning.runfolder.store import Run

    with tarfile.open(ROOT / "reports" / "h200" / "run.tar.xz") as stored:
        stored.extractall(tmp_path)
    report = summarize_run(Run(next(p for p in tmp_path.iterdir() if p.is_dir())))
    comment, console = render_comment(report), headline(report)
    verdict = re.compile(r"\S+/\S+ = [0-9.]+ \(95% CI [0-9.]+–[0-9.]+\)")
    found = [
        v for line in comment.splitlines() if line.startswith("- ") for v in verdict.findall(line)
    ]
    assert len(found) >= 4 and [v for v in found if v not in console] == []
    assert len(comment.encode()) <= LIMIT


@pytest.mark.parametrize("unwritable", ["home", "cache"])
def test_a_home_that_cannot_hold_matplotlib_s_config_prints_no_traceback(tmp_path, unwritable):
    """HOME or the cache unwritable: matplotlib's folder is tune's temporary one, quiet at exit."""
    with tarfile.open(ROOT / "reports" / "h200" / "run.tar.xz") as stored:
        stored.extractall(tmp_path)
    home = tmp_path / "home"
    home.write_text("not a folder")
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": python_path(ROOT)}
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "MPLCONFIGDIR"):
        env.pop(name, None)
    if unwritable == "cache":  # the config folder writable, HOME's cache not
        (tmp_path / "config").mkdir()
        env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    done = subprocess.run(
        [*TUNE, "report", str(tmp_path / "run")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    assert (tmp_path / "run" / "arms.png").is_file() or not _has_matplotlib()


def _has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


# ---- SIGTERM at several moments of a study ----


def _phase_walls(out) -> dict:
    try:
        return read_json(out / "run.json").get("phase_wall_s", {})
    except (OSError, ValueError):
        return {}


def _written_since(path, since: float) -> bool:
    try:
        return path.stat().st_mtime > since
    except OSError:
        return False


# (the phase, and a file this process wrote once there; an older file would signal too early)
MOMENTS = [
    ("setting up", lambda out, since: _written_since(out / "run.json", since)),
    ("tuning", lambda out, since: _written_since(out / "tuners" / "optuna" / "study.db", since)),
    (
        "timing the arms",
        lambda out, since: (
            _written_since(out / "run.json", since) and "tuning" in _phase_walls(out)
        ),
    ),
]


def test_sigterm_at_any_moment_of_a_study_ends_130_and_the_run_resumes(tmp_path):
    """SIGTERM in setup, tuning and timing, resumed each time: exit 130 with one line; the
    last resume finishes."""
    import signal
    import time

    from conftest import SMALL

    out = tmp_path / "run"
    first = ["--budget", "6", "--tuners", "optuna", "--out", str(out), *SMALL]
    for number, (doing, reached) in enumerate(MOMENTS):
        argv = first if number == 0 else ["--resume", str(out)]
        log = tmp_path / f"stderr{number}"
        with log.open("w") as stderr:
            since = time.time()
            process = subprocess.Popen([*TUNE, *argv], cwd=ROOT, stderr=stderr)
            deadline = time.monotonic() + 300
            while (
                not reached(out, since) and process.poll() is None and time.monotonic() < deadline
            ):
                time.sleep(0.1)
            assert process.poll() is None, f"ended before {doing}: {log.read_text()[-2000:]}"
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
        said = log.read_text()
        assert process.returncode == 130, (doing, process.returncode, said[-2000:])
        assert said.strip().splitlines()[-1].startswith("tune: interrupted"), (doing, said)
        assert "Traceback" not in said and "terminate called" not in said, (doing, said)
    done = subprocess.run([*TUNE, "--resume", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / "report.md").is_file()


# ---- partials ----


def test_a_huge_sparse_trial_file_is_refused_without_being_read(tmp_path):
    from pool_fusion_tuning.runfolder.files import LARGEST_READ
    from pool_fusion_tuning.runfolder.store import RunError, read_json

    path = tmp_path / "trials" / "trial_0.json"
    path.parent.mkdir()
    with path.open("wb") as handle:  # sparse: no disk used, 3 GB to a reader
        handle.truncate(3 * 2**30)
    with pytest.raises(RunError, match="more than any file of a run") as caught:
        read_json(path)
    assert "\n" not in str(caught.value) and 3 * 2**30 > LARGEST_READ


def test_a_full_disk_is_said_in_the_words_of_the_error_that_found_it():
    import errno

    from pool_fusion_tuning.tuning.cli.fault_lines import fault_line

    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as full:
            raise RuntimeError('"""') from full
    except RuntimeError as error:
        line = fault_line(error, "tune --resume X")
    assert line is not None and line.startswith("the disk is full (No space left on device)")


def test_a_right_to_left_override_in_out_is_refused(capsys):
    one_line(capsys, main(["--out", "runs/x\u202egpj.md", "--target", "llvm"]), "--out")


def test_a_deleted_working_directory_is_one_line(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code_ = (
        "import os, sys\nos.chdir(sys.argv[1])\nos.rmdir(sys.argv[1])\n"
        "from pool_fusion_tuning.tuning.cli.main import main\n"
        "sys.argv = ['tune', 'report', 'x']\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [TUNE[0], "-c", code_, str(gone)],
        env={**os.environ, "PYTHONPATH": python_path(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "working directory no longer exists" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_stored_budget_count_is_text_not_a_format(tmp_path):
    from pool_fusion_tuning.reports.tuners_md import budget_text

    report = {
        "budget": 4,
        "workers": 2,
        "tuners": {
            "optuna": {"budget_counts": "{0} {workers.__class__} <b>@octocat</b>", "trials": 4}
        },
    }
    text = " ".join(budget_text(report))
    assert "<b>" not in text and "@octocat" not in text and "{0}" in text


@pytest.mark.parametrize("name", ["../x", "/etc", "a/b", "..", ".", "", 5, None, "a\\b", "x\u202e"])
def test_a_name_from_a_run_file_is_one_plain_name_inside_its_folder(tmp_path, name):
    """One rule for every name a report or resume reads from a run file."""
    from pool_fusion_tuning.runfolder.names import member
    from pool_fusion_tuning.runfolder.store import RunError

    with pytest.raises(RunError, match="not a plain name"):
        member(tmp_path, name, tmp_path / "run.json")
    (tmp_path / "elsewhere").symlink_to("/")
    with pytest.raises(RunError, match="symbolic link"):
        member(tmp_path, "elsewhere", tmp_path / "run.json")
    assert member(tmp_path, "inception_v3", tmp_path / "run.json") == tmp_path / "inception_v3"


def test_pr_md_sections_show_a_stored_file_s_text_as_text(tmp_path):
    """Text from a user's report.json, sweep.json and models.json reaches PR.md as text."""
    from pool_fusion_tuning.tuning.upstream.evidence import study_section, sweep_section
    from pool_fusion_tuning.tuning.upstream.models_section import models_section

    bad = "<img src=x onerror=alert(1)> @octocat | ``` </details>"
    arm = {"median_us": 1.0, "q1_us": 1.0, "q3_us": 1.0, "kernel_us": 1.0}
    study = {
        "arms": {"on": arm, "fixed": arm},
        "command": bad,
        "device": bad,
        "trials": bad,
        "environment": {"gpu": bad, "tvm": bad, "date": bad},
        "fused_kernel": [{"arm": "on", "grid": bad, "block": 1}],
    }
    sweep = {"cases": [{"case": bad}], "command": bad, "device": bad, "fixed_slower_than_on": [bad]}
    models = {"device": bad, "rows": [{"label": bad, "model": bad, "kernels": bad}]}
    for lines in (
        study_section(study, tmp_path / "r", bad),
        sweep_section(sweep, tmp_path / "s", bad),
        models_section(models, tmp_path / "m", bad),
    ):
        text = re.sub(r"`[^`\n]+`", "", "\n".join(lines))
        assert "<img" not in text and "</details>" not in text and "@octocat" not in text, text
        rows = [line for line in lines if line.startswith("|")]
        assert len({line.count("|") - line.count("\\|") for line in rows}) <= 1, rows
