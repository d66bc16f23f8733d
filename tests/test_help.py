"""Every subcommand's --help shows its examples unreflowed; no shown text names a project
issue. In process: a `tune` process takes seconds to start."""

import ast

import pytest
from conftest import ROOT, issue_numbers

from pool_fusion_tuning.tuning.cli.main import main

# Per subcommand, an example command and its explanation's line, as written.
EXAMPLES = {
    (): (
        "    tune report DIR [--comment]       re-render a run's report (no GPU needed); --comment",
        "                                      prints comment.md, the run for the issue thread",
    ),
    ("model",): (
        "    tune model my_net.py:build --analyze         for CUDA without a GPU: rules, launches,",
        "                                                 the idle-lane pattern; nothing runs",
    ),
    ("models",): (
        "    tune models --analyze                for CUDA without a GPU: rules, launches and the",
        "                                         idle-lane pattern per kernel; nothing runs",
    ),
    ("sweep",): (
        "    tune sweep --cases issue,window3-stride1 --out DIR",
        "                                      a subset; the same command resumes",
    ),
    ("worker",): (
        "    tune worker --storage postgresql://user@host/db --study fused-pool --budget 100",
        "                                      100 trials of the study `tune --workers` created",
    ),
    ("upstream",): (
        "    tune upstream --out DIR --run RUN --models MODELS",
        "                                    under DIR: the patch, its files and PR.md with the",
    ),
    ("report",): (
        "    tune report DIR --comment   print a study run's comment.md, for the issue thread",
    ),
}
# The folders whose code holds the text the tool shows.
SHIPPED = ("tuning", "reports", "baselines")


def _help(capsys, words: tuple[str, ...]) -> str:
    """What `tune WORDS --help` prints, with exit status 0."""
    code: int | str | None
    try:
        code = main([*words, "--help"])
    except SystemExit as stop:  # argparse's --help
        code = stop.code
    out = capsys.readouterr().out
    assert code == 0, out
    return out


@pytest.mark.parametrize("words", sorted(EXAMPLES), ids=lambda w: " ".join(("tune", *w)))
def test_help_shows_the_examples_as_written(capsys, words):
    text = _help(capsys, words)
    assert "\n".join(EXAMPLES[words]) + "\n" in text, text
    assert not issue_numbers(text), issue_numbers(text)


def test_no_string_the_tool_shows_names_an_issue_of_the_project():
    """No string of the shipped code names a project issue (a comment may)."""
    found = []
    for folder in SHIPPED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found += [f"{where}: {hit!r}" for hit in issue_numbers(node.value, bare=False)]
    assert not found, "\n".join(found)
