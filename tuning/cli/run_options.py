"""The options that define what a run measures: their defaults, as the run stores them, and what a
resume may change.

A run is finished as it was started: on `--resume`, an option that defines what the run
measures (its budget, tuners, arms, protocol, sampler, seed, workers) may be given again only
with the value the run has; another value is refused, never silently ignored.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pool_fusion_tuning.runfolder.records import RunMeta
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.measure.protocol import Protocol

AUTO = "auto"

# The options that define what a run measures, with their defaults (None in the parser, so
# that a resume can tell an option given from one left out).
# Arms: the four and the candidate fix; on CUDA also the whole graph as one kernel, and
# with PyTorch both captured whole and PyTorch's peers (choices.default_arms); the tuners likewise
# (registry.default_tuners). None here: they depend on the target.
RUN_DEFAULTS = {
    "budget": 500,
    "arms": None,
    "tuners": None,
    "trials": Protocol.trials,
    "blocks": AUTO,
    "number": Protocol.number,
    "repeat": Protocol.repeat,
    "min_repeat_ms": Protocol.min_repeat_ms,
    "warmup_s": Protocol.warmup_s,
    "sampler": "tpe",
    "seed": 0,
    "workers": 1,
    "exhaustive": False,
}
PROTOCOL_FIELDS = ("trials", "blocks", "number", "repeat", "min_repeat_ms", "warmup_s")
# The options whose flag is not their name: the protocol calls its timing processes trials, and
# `--trials` read as tuning trials (as Optuna's and tvmc's do), so the flag is --processes.
_FLAGS = {"trials": "--processes"}


def protocol_of(args, base: Protocol) -> Protocol:
    """`base` with the timing options given (--blocks auto: None)."""
    given = {name: getattr(args, name) for name in PROTOCOL_FIELDS}
    given["blocks"] = None if args.blocks == AUTO else args.blocks
    return dataclasses.replace(base, **given)


def flag(name: str) -> str:
    """The flag a user types for the option argparse names `name`."""
    return _FLAGS.get(name, f"--{name.replace('_', '-')}")


def with_defaults(args) -> None:
    """A new run: the options left out take their defaults."""
    for name, default in RUN_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def stored_options(meta: RunMeta) -> dict:
    """The run-defining options as the run was started with them."""
    options = meta["options"]
    added = meta.get("peers_added", [])  # peers a +capture arm brought, not given
    stored = {
        "budget": meta["budget"],
        "tuners": meta["tuners"],
        "arms": [name for name in meta.get("arm_names", []) if name not in added],
        **{name: meta["protocol"].get(name) for name in PROTOCOL_FIELDS},
    }
    stored["blocks"] = AUTO if stored["blocks"] is None else stored["blocks"]
    for name in ("sampler", "seed", "workers", "exhaustive"):
        stored[name] = options.get(name, RUN_DEFAULTS[name])
    return stored


def refuse_changes(given: dict, meta: RunMeta, folder: Path) -> None:
    """`given`: the run-defining options given with --resume, parsed (lists for --arms and
    --tuners). Each must be the run's own value."""
    stored = stored_options(meta)
    for name, value in given.items():
        if value is not None and value != stored[name]:
            typed = flag(name)
            raise UsageError(
                f"{typed} {_show(value)} differs from the run's ({_show(stored[name])})"
                f"; a resume finishes {folder} as it was started: leave {typed} "
                "out, or start a new run with --out"
            )


def _show(value) -> str:
    if isinstance(value, list):
        return ",".join(value) or "none"
    return str(value)
