"""The first word after `tune`: a subcommand's name, the study's options (`tune --budget 500`,
the study being `tune` itself), or --version; and the parser class every subcommand builds on.

The subcommands are argparse subparsers, so that a mistyped one (`tune modle`) is refused with
argparse's "invalid choice ... (choose from ...)" where it would otherwise be read as the
study's stray argument. Each subcommand parses its own options. Nothing here imports TVM:
`tune report` and `tune --version` run where it cannot be imported, and importing it takes
seconds.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import platform
from pathlib import Path
from typing import NoReturn

from pool_fusion_tuning.tuning.base.errors import UsageError

# The subcommands, in the order --help's examples give them; `main` runs each.
COMMANDS = ("report", "worker", "sweep", "upstream", "model", "models")
# The distributions whose versions `tune --version` says: this toolkit and the TVM it runs with.
TOOLKIT = "pool-fusion-tuning"
TVM = "apache-tvm"


class Parser(argparse.ArgumentParser):
    """Every `tune` subcommand's parser: its description (a docstring, its common indentation
    removed) printed as written, so that its examples keep their lines; an error one line."""

    def __init__(self, *, description: str | None = None, **kwargs) -> None:
        super().__init__(
            description=description and inspect.cleandoc(description),
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kwargs,
        )

    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        raise UsageError(f"{message} (see {self.prog} --help)")


def command(argv: list[str]) -> str | None:
    """The subcommand `argv` names, or None for the study (no words, or options first); a word
    that names none is refused (exit 2), and --version is printed here (exit 0)."""
    # -h: the study's help, which lists them all; no abbreviations (`--verb` is --verbose's)
    parser = Parser(prog="tune", add_help=False, allow_abbrev=False)
    add_version(parser)
    names = parser.add_subparsers(dest="command")
    for name in COMMANDS:
        names.add_parser(name, add_help=False)
    return parser.parse_known_args(argv[:1])[0].command


def add_version(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--version",
        action="version",
        version=version(),
        help="print this toolkit's version and the TVM's it runs with, then exit",
    )


def version() -> str:
    """`tune --version`: read from the installed distributions (importing TVM takes seconds);
    where one is not installed, the line says so."""
    toolkit = _installed(TOOLKIT) or (
        f"from {Path(__file__).resolve().parents[2]} ({TOOLKIT} is not installed)"
    )
    tvm = _installed(TVM) or f"unknown ({TVM} is not installed)"
    return f"tune {toolkit}, TVM {tvm}, Python {platform.python_version()}"


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
