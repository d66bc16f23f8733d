"""The options of `tune`: the parser, the ranges its numbers must fall in, and what a resume may
change. All is checked before anything is measured; bad input is one line, exit code 2.

Numbers are ASCII digits (`--blocks ٣` is refused) in the ranges the stored run is checked against
too (`runfolder/ranges.py`). A text option naming something is never empty or blank (`--resume ""`
from an unset `$DIR` must not start a new study), and no option holds a control character (a newline
in `--out` would split every message naming the folder).

What a resume may change is `run_options.py`'s.
"""

from __future__ import annotations

import argparse
import re
import sys

from pool_fusion_tuning.baselines.arms import ARMS, DEFAULT_ARMS
from pool_fusion_tuning.baselines.case import plain_integer
from pool_fusion_tuning.baselines.peers import PEERS, PeerRole, peers_for
from pool_fusion_tuning.runfolder.ranges import RANGES, out_of_range
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.limits import BUILDER_BYTES, GB, MEMORY_SHARE, WORKER_BASE_BYTES
from pool_fusion_tuning.tuning.measure.protocol import Protocol
from pool_fusion_tuning.tuning.tuners.optuna.samplers import SAMPLERS
from pool_fusion_tuning.tuning.tuners.registry import TUNERS, default_tuners, tuners_for
from pool_fusion_tuning.tuning.tuners.spec import Role

from .commands import Parser, add_version
from .run_options import AUTO, flag
from .text import check_text

# --blocks auto (the protocol's None): whole cycles of the balanced order.


def integer(text: str) -> int:
    """An integer option (argparse `type`): ASCII digits only, as a Case value."""
    value = plain_integer(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"takes an integer in digits 0-9, got {text!r}")
    return value


_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def number(text: str) -> float:
    """A number option (argparse `type`): ASCII digits, a point, an exponent; float() would also
    take other digits, "inf" and "nan"."""
    if not _DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(f"takes a number in digits 0-9, got {text!r}")
    return float(text)


def _blocks(text: str) -> int | str:
    if text == AUTO:
        return AUTO
    value = plain_integer(text)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(
            f"takes auto or an integer >= 1 in digits 0-9, got {text!r}"
        )
    return value


# Options that name something, by argparse name: what to name where one is given empty or blank.
NAMING = {
    "out": "a folder",
    "resume": "the folder of a run",
    "cases_file": "a file of Cases",
    "cases": "one or more Cases",
    "storage": "a storage URL",
    "storage_password_env": "an environment variable",
    "study": "a study",
    "arms": "one or more arms",
    "rpc_tracker": "a tracker as HOST:PORT",
    "rpc_key": "the servers' key",
    "target": "a target",
    "spec": "a model",
    "models": "one or more models",
    "rules": "one or more rule lists",
    "arch": "a CUDA arch",
}
DEFAULT_ARM_NAMES = (*(arm.name for arm in DEFAULT_ARMS), "fixed")
# The project's best answer, the whole graph as one kernel, is a GPU arm (on llvm it is a CPU
# loop nest that says nothing about the issue).
CUDA_ARM_NAMES = ("one-kernel",)
# With PyTorch: both candidates captured whole, and their like-for-like peers
# (`PeerRole.CUDA_DEFAULT`).
CUDA_TORCH_TVM_ARM_NAMES = ("fixed+capture", "one-kernel", "one-kernel+capture")


def cuda_torch_arm_names() -> list[str]:
    """The arms a run on CUDA with PyTorch adds to the default ones."""
    return [*CUDA_TORCH_TVM_ARM_NAMES, *peers_for(PeerRole.CUDA_DEFAULT)]


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parser(description: str) -> Parser:
    """The parser of `tune` (a run, or --resume of one); run-defining options default to None, so
    a resume tells one given from one left out."""
    p = Parser(prog="tune", description=description)
    p.add_argument(
        "--budget",
        type=integer,
        help="candidates each tuner measures, failed ones "
        "included: Optuna's search measures BUDGET, MetaSchedule's two runs (default "
        "space, template space) BUDGET//2 and the rest, optuna-one-kernel about BUDGET//4 "
        "(--tuners says how) (default 500; 0 runs the arms only)",
    )
    p.add_argument(
        "--arms",
        help="comma-separated arms of the end-to-end comparison: "
        f"{', '.join(ARMS)}, or the PyTorch peers {', '.join(PEERS)} (the peers and "
        "the +capture arms need the extra [torch]); the tuners add their own, and a "
        "TVM +capture arm on CUDA brings PyTorch's +capture peers (default "
        f"{','.join(DEFAULT_ARM_NAMES)}; on CUDA also {','.join(CUDA_ARM_NAMES)}, with "
        f"PyTorch {','.join(cuda_torch_arm_names())} and their +capture peers)",
    )
    p.add_argument(
        "--tuners",
        help=f"comma-separated subset of: {', '.join(tuners_for(Role.STUDY))} "
        f"({'; '.join(s.note for s in TUNERS.values() if s.note)}; default "
        f"{','.join(default_tuners('llvm'))}, on CUDA {','.join(default_tuners('cuda'))})",
    )
    p.add_argument(
        "--target", default="auto", help="auto (CUDA if a GPU is visible, else llvm), cuda or llvm"
    )
    p.add_argument(
        "--case",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="change the graph, e.g. --case window=3 stride=1 prelude=false",
    )
    add_processes(
        p,
        None,
        "fresh processes timing the arms end to end, each its own interleaved blocks "
        f"(default {Protocol.trials}); not tuning trials: --budget counts those",
    )
    p.add_argument(
        "--blocks",
        type=_blocks,
        metavar="N|auto",
        help="interleaved timing blocks per timing process (the issue used 40); auto "
        "(default): whole cycles of the balanced order, at least 6",
    )
    p.add_argument("--number", type=integer, help="time_evaluator: calls per repeat")
    p.add_argument("--repeat", type=integer, help="time_evaluator: samples per timing block")
    p.add_argument(
        "--min-repeat-ms",
        type=integer,
        help="time_evaluator: the least time one sample averages over",
    )
    p.add_argument("--warmup-s", type=number, help="timed warm-up per arm before the blocks")
    p.add_argument("--sampler", choices=SAMPLERS, help="Optuna's sampler (default tpe)")
    p.add_argument("--seed", type=integer, help="seed of the tuners' samplers (default 0)")
    p.add_argument(
        "--storage",
        default=None,
        help="Optuna storage URL (default: SQLite, or a journal file where "
        "SQLAlchemy is missing, in the run folder). A password in it is never "
        "stored; a resume takes it from --storage-password-env, PGPASSWORD or "
        "~/.pgpass",
    )
    add_password_env(p)
    p.add_argument(
        "--storage-force",
        action="store_true",
        help="use a --storage SQLite file that holds tables other than Optuna's",
    )
    p.add_argument(
        "--workers",
        type=integer,
        help="Optuna worker processes sharing the study, one GPU each "
        "(CUDA_VISIBLE_DEVICES); the default is one. At most one per core (each worker "
        f"builds on every core) and as many as {MEMORY_SHARE * 100:.0f}%% of the available memory "
        f"holds (a worker takes about {WORKER_BASE_BYTES / GB:.2f} GB and "
        f"{BUILDER_BYTES / GB:.2f} GB per core, measured on llvm); more is refused",
    )
    p.add_argument(
        "--exhaustive",
        action="store_true",
        default=None,
        help="also measure every point of the Optuna space once",
    )
    add_rpc(p)
    p.add_argument(
        "--out",
        default=None,
        help="run folder (default runs/<date>-<target>, or where an earlier run of the day "
        "has it, the first of runs/<date>-<target>-2, -3, ... not taken)",
    )
    p.add_argument("--resume", default=None, metavar="DIR", help="finish this run")
    p.add_argument(
        "--verbose",
        action="store_true",
        help="every step on the console, with TVM's own output (else: a bar and a line per "
        "phase, the rest in the run folder's details.log)",
    )
    add_version(p)
    return p


def add_processes(p: argparse.ArgumentParser, default: int | None, help: str) -> None:
    """--processes N: the fresh processes that time the arms end to end (the protocol's
    `trials`). The old spelling --trials, which Optuna and tvmc use for tuning trials, still
    works, with a note."""
    p.add_argument(
        "--processes", dest="trials", type=integer, default=default, metavar="N", help=help
    )
    p.add_argument(
        "--trials",
        dest="trials",
        type=integer,
        default=default,
        action=_OldSpelling,
        help=argparse.SUPPRESS,
    )


class _OldSpelling(argparse.Action):
    """--trials: taken as --processes, and said once on stderr."""

    said = False

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if not self.said:
            print(
                f"{parser.prog}: --trials is now --processes (the fresh processes that time "
                "the arms, not tuning trials: --budget counts those); --trials will be removed",
                file=sys.stderr,
            )
            self.said = True
        setattr(namespace, self.dest, values)


def add_rpc(p: argparse.ArgumentParser) -> None:
    """--rpc-tracker and --rpc-key, of `tune` and `tune model` (`choices.rpc_options`)."""
    p.add_argument(
        "--rpc-tracker",
        metavar="HOST:PORT",
        help="measure MetaSchedule's candidates on this RPC tracker's servers (with "
        "--rpc-key; Optuna and the end-to-end timing stay here)",
    )
    p.add_argument("--rpc-key", metavar="KEY", help="the servers' key (rpc_server --key)")


def add_password_env(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--storage-password-env",
        default=None,
        metavar="NAME",
        help="take the storage's password from environment variable NAME",
    )


def check_options(args) -> None:
    """Every option given: its text (`check_text`) and its number's range."""
    for name, value in vars(args).items():
        for text in _texts(value):
            check_text(flag(name), text, NAMING.get(name))
    for name, (low, high) in RANGES.items():
        value = getattr(args, name, None)
        if value is None or isinstance(value, str):  # a word (auto, all): its parser's check
            continue
        if out_of_range(value, low, high):
            raise UsageError(f"{flag(name)} must be between {low} and {high}, got {value}")
    name = getattr(args, "storage_password_env", None)
    if name is not None and not _ENV_NAME.fullmatch(name):
        raise UsageError(
            f"--storage-password-env takes the name of an environment variable, got {name!r}"
        )
    if getattr(args, "storage", None) and hasattr(args, "storage_force"):
        from pool_fusion_tuning.tuning.tuners.optuna.storages import storage_problem

        problem = storage_problem(args.storage, args.storage_force)
        if problem:
            raise UsageError(problem)


def _texts(value) -> list[str]:
    """The strings in an option's value (lists of them for nargs, of lists for append)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []
