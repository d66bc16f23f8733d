"""`tune`'s printed answer: at most 25 plain lines, comment.md's figures, commands pasteable;
CPU verdicts within the noise band, GPU ones unchanged."""

import json
import lzma
import re
import tarfile

import pytest
from conftest import ROOT
from test_report import CPU_FIGURES, TRIALS, _write_run

from pool_fusion_tuning.reports.comment import answer
from pool_fusion_tuning.reports.console import LINES, console_answer
from pool_fusion_tuning.reports.report_data import summarize_run
from pool_fusion_tuning.reports.stats.cpu_noise import BAND, CPU_NOTE, within_cpu_noise
from pool_fusion_tuning.runfolder.store import Run


@pytest.fixture(scope="module")
def committed_report(tmp_path_factory):
    """The committed H200 study (reports/h200/run.tar.xz), summarized as `tune` does."""
    out = tmp_path_factory.mktemp("h200")
    with tarfile.open(ROOT / "reports" / "h200" / "run.tar.xz") as stored:
        stored.extractall(out)
    return summarize_run(Run(out / "run"))


def _figures(comment_row: str) -> list[str]:
    """A comment.md table row's cells, the arm's name without its code span."""
    return [cell.strip().strip("`") for cell in comment_row.strip("|").split("|")]


def _check_console(report: dict, path="runs/x/report.md") -> list[str]:
    """At most LINES lines, no markdown, and comment.md's table with the same figures."""
    text = console_answer(report, path)
    lines = text.splitlines()
    assert len(lines) <= LINES, text
    assert "\\" not in text and "`" not in text and "|" not in text and "&lt;" not in text, text
    comment, _, rows, left_out = answer(report)
    table_rows = [line for line in comment.splitlines() if line.startswith("| `")]
    assert len(table_rows) == len(rows) >= 3
    for row in table_rows:  # each comment row's figures, in order, on one console line
        cells = _figures(row)
        line = next(x for x in lines if x.split("  ")[0] == cells[0])
        assert re.split(r"\s{2,}", line) == cells, (line, cells)
    assert lines[-1] == f"report: {path} (for the issue thread: comment.md beside it)"
    return lines


def test_the_answer_is_comment_md_s_table_in_plain_text(committed_report):
    lines = _check_console(committed_report)
    assert lines[0].startswith("On NVIDIA H200 sm_90, TVM 0.27.0.post1, 2026-12-02, 265 s.")
    assert "smoke test" not in " ".join(lines)  # a GPU run is no smoke test
    header = next(line for line in lines if line.startswith("arm "))
    assert re.split(r"\s{2,}", header) == [
        "arm",
        "end to end, us",
        "GPU time, us",
        "fused kernel, us",
        "/ ON (95% CI)",
    ]


def test_a_suggested_command_is_printed_as_it_is_pasted(committed_report):
    """Without PyTorch the command reads as typed; verdicts that do not fit say where they are."""
    reason = "PyTorch is not installed; pip install -e '.[torch]'"
    report = {**committed_report, "peers_not_measured": {"torch-eager": reason}}
    text = console_answer(report, "r.md")
    if "More verdicts are in comment.md." not in text:
        assert reason in text
    lines = _check_console({**report, "arms": dict(list(report["arms"].items())[:5])})
    assert any("pip install -e '.[torch]'" in line for line in lines), lines


def test_a_cpu_run_says_it_is_a_smoke_test_and_tells_apart_only_beyond_the_band(tmp_path):
    # on slower than off by half the band, serial than on by three
    off = CPU_FIGURES["off"]
    slower = (1 + BAND) / 2
    figures = {
        **CPU_FIGURES,
        "on": tuple(t * slower for t in off),
        "serial": tuple(t * slower * BAND**3 for t in off),
    }
    report = summarize_run(
        _write_run(tmp_path / "run", "llvm", figures, list(figures), host_bound=set(figures))
    )
    lines = _check_console(report)
    assert " ".join(lines).startswith(CPU_NOTE)
    assert any(line.startswith("- The candidate rule fixed") for line in lines)  # kept first
    near, far = report["ratios"]["on/off"], report["ratios"]["serial/on"]
    assert 1 < near["low"] and near["high"] < BAND, near  # apart within the run, not beyond it
    assert not near["distinguishable"] and near["noise_band"] == BAND
    assert far["low"] > BAND and far["distinguishable"]
    text = " ".join(" ".join(lines).split())
    assert re.search(
        r"on/off = [\d.]+ \(95% CI [\d.–]+\), cannot be told apart \(within the CPU", text
    )
    assert "`on` is faster" not in text


def test_the_band_leaves_gpu_verdicts_alone(committed_report):
    assert not any("noise_band" in r for r in committed_report["ratios"].values())
    assert committed_report["ratios"]["fixed/on"]["distinguishable"]


def test_the_band_is_applied_to_the_whole_interval():
    base = {"ratio": 1.0, "confidence": 0.95, "per_trial": [1.0] * TRIALS}
    for low, high, apart in [
        (BAND * 1.01, BAND * 1.2, True),
        (1 / BAND / 1.2, 1 / BAND / 1.01, True),
        (1.01, BAND * 1.2, False),  # apart within the run, but the band holds its low end
        (0.5 / BAND, 1.02, False),
        (None, None, False),
    ]:
        assert within_cpu_noise({**base, "low": low, "high": high})["distinguishable"] is apart


def test_two_cpu_runs_of_one_study_give_no_opposite_verdicts():
    """On BAND's two runs every verdict of one is the other's; BAND covers their largest shift."""
    runs = json.loads(
        lzma.decompress((ROOT / "tests" / "fixtures" / "cpu_two_runs.json.xz").read_bytes())
    )["runs"]

    def said(ratio: list) -> int:  # 1: the top arm slower, -1: faster, 0: cannot be told apart
        found = within_cpu_noise(dict(zip(("ratio", "low", "high"), ratio)))
        return 0 if not found["distinguishable"] else (1 if ratio[1] > 1 else -1)

    first, second = (run["ratios"] for run in runs)
    pairs = [(figure, pair) for figure in first for pair in first[figure]]
    assert len(pairs) == 36
    shifts = [first[f][p][0] / second[f][p][0] for f, p in pairs]
    assert max(max(s, 1 / s) for s in shifts) <= BAND
    assert [said(first[f][p]) for f, p in pairs] == [said(second[f][p]) for f, p in pairs]


def test_a_name_from_the_run_folder_sends_no_control_character_to_the_terminal(committed_report):
    arms = {
        f"{name}\x1b[2J" if name == "off" else name: a
        for name, a in committed_report["arms"].items()
    }
    text = console_answer({**committed_report, "arms": arms}, "r.md")
    assert "\x1b" not in text and "off [2J" in text


def test_a_suggested_command_is_never_split_across_lines():
    from pool_fusion_tuning.reports.console import _wrap

    for words in range(10, 30):  # the command at every place of a line
        text = "said " * words + "(PyTorch is not installed; pip install -e '.[torch]'); more"
        assert any("pip install -e '.[torch]'" in line for line in _wrap(text)), words
