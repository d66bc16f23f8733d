"""`tune upstream --out DIR`: the candidate rule as a pull request to apache/tvm: the patch,
the files it adds or changes as TVM lays them out, and PR.md, the description, with the figures
of the run folders given (tuning/upstream/ makes them). `tune upstream --check TVM_TREE`: the
patch applied and tested in a scratch clone of a TVM checkout (tuning/upstream/check.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pool_fusion_tuning.tuning.upstream.author import patch_author
from pool_fusion_tuning.tuning.upstream.bundle import PR, upstream_files
from pool_fusion_tuning.tuning.upstream.check import check
from pool_fusion_tuning.tuning.upstream.evidence import gather_figures
from pool_fusion_tuning.tuning.upstream.output import write_outputs
from pool_fusion_tuning.tuning.upstream.patch import PATCH
from pool_fusion_tuning.tuning.upstream.tvm_tree import BASE

from .options import Parser


def _path(text: str) -> Path:
    """A path given on the command line: an empty or blank one (an unset variable) is refused,
    not read as the current folder."""
    if not text.strip() or "\n" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a path")
    return Path(text)


def main(argv: list[str]) -> int:
    """`tune upstream`: the candidate rule as a pull request to apache/tvm: a git format-patch
    file against the TVM release the project runs (0.27.0.post1), the files it adds or changes
    as TVM lays them out, and PR.md, its description with the figures of the folders given; or
    the patch tested on a TVM checkout.

        tune upstream --out DIR --run RUN --models MODELS
                                        under DIR: the patch, its files and PR.md with the
                                        figures of a `tune` run and a `tune models` folder
                                        (an edited file is kept unless --force)
        tune upstream --check TVM_TREE  the patch applied in a scratch clone of a TVM checkout
                                        and TVM's tests run without and with it; exit status 1
                                        where a test changed or a name is missing
                                        (the tree's own test code runs, with your rights)
    """
    parser = Parser(prog="tune upstream", description=main.__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--out", type=_path, metavar="DIR", help="folder to write")
    action.add_argument(
        "--check",
        type=_path,
        metavar="TVM_TREE",
        help="apply the patch in a scratch clone of this TVM checkout, look up the names the "
        "rule uses there, and run TVM's dlight and CUDA relax tests without and with it; "
        "prints the report, exit status 1 where a test changed or a name is missing. The "
        "tree's own test code (its conftest.py files and tests) runs, with your rights; "
        "its uncommitted and untracked files are left out",
    )
    for option, made_by in (
        ("--run", "a `tune` run folder (its report.json)"),
        ("--sweep", "a `tune sweep` folder (its sweep.json)"),
        ("--models", "a `tune models` folder (its models.json)"),
        (
            "--bench",
            "a `python3 -m pool_fusion_tuning.baselines.window_bench` folder "
            "(its window_bench.json)",
        ),
    ):
        parser.add_argument(option, type=_path, metavar="FOLDER", help=f"figures from {made_by}")
    parser.add_argument(
        "--author", help='"Name <email>" of the patch (default: git\'s user.name and user.email)'
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite files under DIR that hold other text"
    )
    args = parser.parse_args(argv)
    if args.check is not None:
        report, holds = check(args.check)
        print(report, end="")
        return 0 if holds else 1
    author = patch_author(args.author)
    figures = gather_figures(args.run, args.sweep, args.models, args.bench)
    fates = write_outputs(args.out, upstream_files(author, figures), args.force)
    unchanged = sum(fate == "unchanged" for fate in fates.values())
    patch = args.out / PATCH
    print(
        f"{patch}\n  the patch: in a TVM checkout of {BASE.replace('`', '')}, "
        f"git am --keep-non-patch {patch}\n{args.out / PR}\n  the pull request's "
        "description"
        f"\n  {len(fates) - unchanged} files written, {unchanged} unchanged, under {args.out}"
    )
    return 0
