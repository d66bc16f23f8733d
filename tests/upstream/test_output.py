"""`tune upstream --out DIR` into a folder it does not own: planted links replaced, other text
kept without --force, the rest refused in one line."""

import os
import signal

import pytest

from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.upstream.bundle import PR
from pool_fusion_tuning.tuning.upstream.patch import PATCH
from pool_fusion_tuning.tuning.upstream.tvm_tree import CUDA_PIPELINE, RULE

AUTHOR = ["--author", "Ada Lovelace <ada@example.org>"]


def _upstream(out, *extra) -> int:
    return main(["upstream", "--out", str(out), *AUTHOR, *extra])


def _one_line(capsys) -> str:
    error = capsys.readouterr().err
    assert error.startswith("tune: error:") and error.count("\n") == 1, error
    return error


@pytest.fixture
def victim(tmp_path):
    """A file outside --out that a planted link points at."""
    path = tmp_path / "elsewhere" / "victim.py"
    path.parent.mkdir()
    path.write_text("precious\n")
    return path


@pytest.mark.parametrize("name", [RULE, CUDA_PIPELINE, PATCH, PR])
def test_a_link_planted_at_an_output_is_replaced_and_its_target_untouched(tmp_path, victim, name):
    out = tmp_path / "out"
    (out / name).parent.mkdir(parents=True)
    (out / name).symlink_to(victim)
    assert _upstream(out) == 0
    assert not (out / name).is_symlink() and (out / name).read_text() != "precious\n"
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_link_at_a_folder_is_refused_and_left(tmp_path, capsys, force):
    """A symbolic link on the patch's path is neither written through nor replaced."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (elsewhere / "tvm" / "relax").mkdir(parents=True)
    out.mkdir()
    (out / "python").symlink_to(elsewhere)  # python/tvm/... would land in `elsewhere`
    assert _upstream(out, *force) == 2
    assert "is a symbolic link" in _one_line(capsys)
    assert (out / "python").is_symlink() and sorted(p.name for p in out.iterdir()) == ["python"]
    assert [p.name for p in elsewhere.rglob("*")] == ["tvm", "relax"]  # nothing written there


def test_an_edited_file_is_not_overwritten_without_force(tmp_path, capsys):
    out = tmp_path / "checkout"
    assert _upstream(out) == 0
    edited = (out / CUDA_PIPELINE).read_text() + "# my own change\n"
    (out / CUDA_PIPELINE).write_text(edited)
    (out / PR).unlink()
    capsys.readouterr()
    assert _upstream(out) == 2
    error = _one_line(capsys)
    assert str(out / CUDA_PIPELINE) in error and "--force" in error
    assert (out / CUDA_PIPELINE).read_text() == edited  # kept
    assert not (out / PR).exists()  # and nothing else written
    assert _upstream(out, "--force") == 0
    assert "# my own change" not in (out / CUDA_PIPELINE).read_text() and (out / PR).is_file()


def test_several_edited_files_are_counted_in_the_one_line(tmp_path, capsys):
    out = tmp_path / "checkout"
    assert _upstream(out) == 0
    for name in (PR, PATCH, RULE):
        (out / name).write_text("mine\n")
    capsys.readouterr()
    assert _upstream(out) == 2
    assert "(and 2 more)" in _one_line(capsys)


def _no_hang(seconds: int):
    def alarm(signum, frame):
        raise TimeoutError("tune upstream opened a FIFO")

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)


def test_a_special_file_at_an_output_is_refused_without_opening_it(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / PR)
    _no_hang(120)
    try:
        assert _upstream(out) == 2
    finally:
        signal.alarm(0)
    error = _one_line(capsys)
    assert str(out / PR) in error and "not a regular file" in error
    assert sorted(p.name for p in out.iterdir()) == [PR]


def test_a_file_where_a_folder_goes_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "python").write_text("mine\n")
    assert _upstream(out) == 2
    assert "is not a folder" in _one_line(capsys)
    assert (out / "python").read_text() == "mine\n"
    assert sorted(p.name for p in out.iterdir()) == ["python"]
