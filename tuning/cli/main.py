"""`tune`: build and time the four arms of apache/tvm#20401 and the candidate fix, tune the
fused kernel, report.

    tune --budget 500                 the whole study: the issue's four arms, `fixed` (on CUDA
                                      with PyTorch also captured, and PyTorch's peers); Optuna
                                      and MetaSchedule measure 500 candidates each (on CUDA
                                      Optuna also 125 of the whole graph's one kernel)
    tune --budget 0                   the arms only
    tune --resume DIR                 finish an interrupted run without re-measuring
    tune report DIR [--comment]       re-render a run's report (no GPU needed); --comment
                                      prints comment.md, the run for the issue thread
    tune worker --storage URL ...     join a shared Optuna study as one more worker
    tune sweep --budget 40            the candidate rule (`fixed`) and the whole graph as one
                                      kernel (`one-kernel`) across a set of Cases
    tune upstream --out DIR           the candidate rule as a pull request to apache/tvm: the
                                      patch, its files and PR.md (--run, --sweep, --models,
                                      --bench)
    tune model SPEC                   a real network (torchvision:NAME, timm:NAME,
                                      FILE.py:FUNCTION): its kernels with the idle-lane
                                      pattern, per kernel and end to end, against PyTorch
    tune models                       the built-in list of networks, one run per model
    tune models --zoo torchvision --analyze
                                      a census of every model of a library (census.md)
    tune --rpc-tracker HOST:PORT --rpc-key KEY
                                      measure MetaSchedule's candidates on RPC servers
                                      (`tune model --tune-top` takes them too)
    tune --version                    this toolkit's version and TVM's
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

from pool_fusion_tuning.baselines.models.fence import UserCodeInterrupt
from pool_fusion_tuning.baselines.user_error import UserError
from pool_fusion_tuning.runfolder.lock import release_all
from pool_fusion_tuning.runfolder.redact import redact
from pool_fusion_tuning.runfolder.store import Run, read_text
from pool_fusion_tuning.tuning.base.children import import_tvm
from pool_fusion_tuning.tuning.base.errors import (
    EXIT_TUNING_FAILED,
    EXIT_USAGE,
    TuningFailed,
    UsageError,
)
from pool_fusion_tuning.tuning.base.progress import DETAILS_LOG, Progress, details_to
from pool_fusion_tuning.tuning.scratch import own_tmpdir

from .commands import command
from .fault_lines import fault_line
from .text import shown

# A run's wall time counts from here: the setup before its phases (TVM's import included) too.
PROCESS_STARTED = time.monotonic()

# Each subcommand's module is imported when it runs: `tune report` renders a run folder on a
# machine without TVM, so nothing it needs may import TVM.


REPORT_USAGE = """usage: tune report DIR [--comment]

Render a run folder's reports again from its stored data (no GPU, no TVM needed): a study run,
a tune model run or a tune models folder.

    tune report DIR             DIR/report.md again (a study run, a model run), or DIR/models.md
                                and each model's report.md (a tune models folder)
    tune report DIR --comment   print a study run's comment.md, for the issue thread"""


def _report(argv: list[str]) -> int:
    """A study run (`--comment`: print its comment for the issue thread), a model run
    (`tune model`) or a folder of model runs (`tune models`)."""
    from .text import check_text

    if argv[:1] in (["-h"], ["--help"]):
        print(REPORT_USAGE)
        return 0
    comment = "--comment" in argv
    folders = [arg for arg in argv if arg != "--comment"]
    if len(folders) != 1 or folders[0].startswith("--"):
        raise UsageError("tune report takes one run folder: tune report DIR [--comment]")
    check_text("tune report DIR", folders[0], "the folder of a run")
    folder = Path(folders[0])
    if not comment and (folder / "models.json").is_file():
        from pool_fusion_tuning.reports.models_report import rerender_models

        print(rerender_models(folder))
        return 0
    run = Run.open(folder)
    run.lock()
    if run.is_model:
        if comment:
            raise UsageError(f"{folder} is a model run: --comment is for a study run")
        from pool_fusion_tuning.reports.model_report import render_model_run

        render_model_run(run)
        print(run.path / "report.md")
        return 0
    from pool_fusion_tuning.reports.render import COMMENT, render_run

    render_run(run)
    if comment:  # the comment itself, ready to paste into the issue thread
        print(read_text(run.path / COMMENT), end="")
    else:
        print(run.path / "report.md")
    return 0


def _interrupted(argv: list[str], run: Run | None) -> str:
    """The one line Ctrl-C (or SIGTERM) prints: where the run is and how to finish it."""
    if argv[:1] == ["worker"]:
        return "tune worker: interrupted; the trials it measured are kept in the study"
    if argv[:1] == ["report"]:
        return "tune report: interrupted; the run's measurements are as they were"
    if argv[:1] in (["sweep"], ["model"], ["models"]):
        return (
            "tune: interrupted; everything measured so far is kept. Finish with the same "
            f"tune {argv[0]} command"
        )
    if run is None:
        return "tune: interrupted before the run folder was written; nothing was measured"
    return (
        f"tune: interrupted; everything measured so far is kept in {run.path}. Finish "
        f"with: tune --resume {shlex.quote(str(run.path))}"
    )


def _user_details(error: Exception, argv: list[str]) -> None:
    """The user's own traceback and output (`baselines.models.fence`), with --verbose."""
    details = getattr(error, "details", "")
    if details and "--verbose" in argv:
        print(redact(details), file=sys.stderr)


def _stop_on_sigterm(signum, frame):
    """`kill PID` stops the run as Ctrl-C does; a second signal while it stops is ignored."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _runs_no_pytorch(argv: list[str]) -> bool:
    """A study, sweep or Optuna worker on `--target llvm` naming no PyTorch arm: TVM is then
    imported without PyTorch, which its FFI would import for nothing (3.5 s of CPU)."""
    first = argv[0] if argv else "-"
    if first not in ("sweep", "worker") and not first.startswith("-"):
        return False
    words = [part for arg in argv for part in arg.split("=", 1)]
    named = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--arms"]
    on_llvm = any(words[i + 1] == "llvm" for i, word in enumerate(words[:-1]) if word == "--target")
    return on_llvm and not any("torch" in arms or "capture" in arms for arms in named)


def main(argv: list[str] | None = None) -> int:
    """`tune ARGS`: the subcommand run with the working folder checked first (libraries fail far
    from the cause when it is gone), SIGTERM taken as Ctrl-C, builders' temporary files and locks
    released however it ends; returns the exit status."""
    command = argv is None  # the `tune` command itself, not a caller in this process
    argv = sys.argv[1:] if argv is None else argv
    try:
        os.getcwd()
    except FileNotFoundError:  # libraries fail far from the cause (oneMKL: a fatal error)
        print(
            "tune: error: the working directory no longer exists; cd to an existing folder",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if command and _runs_no_pytorch(argv):
        import_tvm(without_torch=True)
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    code = 1
    try:
        with own_tmpdir():  # builders' temporary files, removed however the command ends
            code = _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)
        release_all()
    if command and code == 130:
        _end_interrupted(code)
    return code


def _end_interrupted(code: int) -> None:
    """End an interrupted command at once, its line said, files closed and locks released: a
    tuner's thread may still be inside TVM, and interpreter finalization around it crashed
    (segmentation fault, `terminate called without an active exception`) after the user was told
    the run was kept."""
    if threading.active_count() == 1:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _main(argv: list[str]) -> int:
    run = None
    try:
        name = command(argv)  # None: the study, `tune [options]`
        if name == "report":
            return _report(argv[1:])
        if name == "worker":
            from .worker import worker_main

            return worker_main(argv[1:])
        if name == "sweep":
            from .sweep import sweep_main

            return sweep_main(argv[1:])
        if name == "model":
            from .model import model_main

            return model_main(argv[1:])
        if name == "models":
            from .models import models_main

            return models_main(argv[1:])
        if name == "upstream":
            from .upstream import main as upstream

            return upstream(argv[1:])
        from pool_fusion_tuning.tuning.study import run_study

        from .options import check_options
        from .options import parser as run_parser
        from .run import resume_run, start_run

        args = run_parser(__doc__).parse_args(argv)
        check_options(args)
        progress = Progress(verbose=args.verbose)
        run = resume_run(args) if args.resume else start_run(args, argv)
        print(f"run folder: {run.path}", file=sys.stderr)
        with details_to(run.path / DETAILS_LOG, progress):
            report = run_study(run, progress, PROCESS_STARTED)
    except UserError as error:  # bad input of any kind: one line
        print(f"tune: error: {shown(redact(str(error)))}", file=sys.stderr)
        _user_details(error, argv)
        return EXIT_USAGE
    except TuningFailed as error:
        assert run is not None  # raised by the study, which runs in an open run folder
        print(
            f"tune: {error}; the other arms were measured and reported in {run.path / 'report.md'}",
            file=sys.stderr,
        )
        return EXIT_TUNING_FAILED
    except UserCodeInterrupt as error:  # the user's own code was running: no run to resume
        print(f"tune: error: {shown(redact(error.message))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        newline = "\n" if sys.stderr.isatty() else ""  # after a live progress line
        print(f"{newline}{_interrupted(argv, run)}", file=sys.stderr)
        return 130
    except Exception as error:  # a full disk, a storage gone: one line; a bug: its traceback
        resume = (
            f"tune --resume {shlex.quote(str(run.path))}" if run is not None else "the same command"
        )
        line = fault_line(error, resume)
        if line is None:
            raise
        print(f"tune: error: {shown(line)}", file=sys.stderr)
        return EXIT_USAGE
    from pool_fusion_tuning.reports.console import console_answer

    print(console_answer(report, run.path / "report.md"))
    return 0
