"""`tune upstream --out DIR`: the candidate rule as a pull request to apache/tvm
(tuning/upstream/patch.py writes it)."""

from __future__ import annotations

from pathlib import Path

import tvm

from tuning.upstream.patch import write_upstream

from .options import Parser


def main(argv: list[str]) -> int:
    parser = Parser(
        prog="tune upstream",
        description="The candidate rule as a pull request to "
        f"apache/tvm {tvm.__version__}: a git format-patch file and the files it "
        "adds or changes, as TVM lays them out.",
    )
    parser.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder for the patch and the files (created if missing)",
    )
    args = parser.parse_args(argv)
    patch = write_upstream(args.out)
    print(
        f"{patch}\n  in a checkout of TVM {tvm.__version__}: git am {patch}; the files "
        f"themselves are under {args.out}"
    )
    return 0
