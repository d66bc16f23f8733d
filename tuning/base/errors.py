"""What a command can end with besides success, in a module that imports nothing heavy: the CLI
names these before it knows which subcommand runs, and `tune report` never loads TVM."""

from __future__ import annotations

from pool_fusion_tuning.baselines.user_error import UserError

# Exit codes: bad input (one line), and a run whose tuners all measured nothing valid.
EXIT_USAGE = 2
EXIT_TUNING_FAILED = 1


class UsageError(UserError):
    """Bad input: printed as one line, exit code 2."""


class TrackerError(UserError):
    """An RPC tracker that cannot be used; the message says why and how to start a server."""


class TuningFailed(RuntimeError):
    """A tuner that measured no valid candidate: the run must not pass silently."""


class ProcessDied(RuntimeError):
    """A child process (a trial's) that ended without reporting: killed by a signal or exited,
    as a library aborting on its environment does (TVM_NUM_THREADS=100000). A failure of the
    machine or its environment, not of the input: one line, and the run stays resumable."""


class OutOfScope(TuningFailed):
    """A tuner whose space does not take the kernel (Optuna's template, on a kernel that is not
    a sliding-window reduction): skipped, with this one-line reason, never a crash."""
