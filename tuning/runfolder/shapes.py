"""The shape of each file of a run folder, checked as it is read.

A file that is valid JSON of the wrong shape (a list where a record goes, a key missing, text
where a number goes) is said in one line naming the file, as a garbled one is, instead of a
traceback far from it. A shape holds what the commands read without a default; a key marked
`?` may be absent (older runs lack it) and is checked for its type where present. Other keys
are left alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from baselines.case import Case, CaseError


class Each:
    """An object whose every value has `shape` (its keys are names: arms, figures, kernels)."""

    def __init__(self, shape):
        self.shape = shape


NUMBER = "number"  # an int or a float (not true or false)
NUMBER_OR_NONE = (NUMBER, None)
_WHAT = {
    dict: "an object",
    list: "a list",
    str: "text",
    int: "an integer",
    bool: "true or false",
    NUMBER: "a number",
    None: "null",
}
_FOUND = [(kind, _WHAT[kind]) for kind in (dict, list, str, bool, NUMBER, None)]

PROTOCOL = {
    "repeat": int,
    "number?": int,
    "trials?": int,
    "min_repeat_ms?": NUMBER,
    "warmup_s?": NUMBER,
    "blocks?": (int, None),
    "checks?": int,
    "warmup_calls?": int,
    "queued_calls?": int,
}
RUN = {
    "format?": int,
    "identity": {"case": dict, "target": str, "device": str},
    "case": Each((int, bool)),
    "target_spec": {"kind": str, "arch?": str},
    "protocol": PROTOCOL,
    "tuners": [str],
    "budget": int,
    "options": dict,
    "arms": [{"name": str, "peer?": bool, "whole_graph?": bool}],
    "arm_names?": [str],
    "command?": str,
    "wall_s?": NUMBER,
    "phase_wall_s?": Each(NUMBER),
    "tuner_failures?": Each(str),
    "peers_added?": [str],
    "peers_not_measured?": dict,
}
TRIAL = {
    "trial": int,
    "checks": Each({"correct": bool, "max_abs_err?": NUMBER_OR_NONE}),
    "design?": {"blocks": int},
    "block_orders?": [[str]],
    "block_samples_us?": Each(Each([[NUMBER]])),
    "samples_us?": Each([NUMBER]),
    "queued_gpu_us?": Each([NUMBER]),
    "kernels?": Each([{"name": str}]),
    "cuda_graph_launches?": dict,
}
TUNER_RUN = {
    "trials": int,
    "valid": int,
    "failed_by_reason": Each(int),
    "wall_s?": NUMBER,
    "best_kernel_us?": NUMBER_OR_NONE,
    "best_trial?": (int, None),
    "timer?": (str, None),
    "default_kernel_us?": NUMBER_OR_NONE,
    "fixed_kernel_us?": NUMBER_OR_NONE,
    "serial_kernel_us?": NUMBER_OR_NONE,
    "exhaustive_best_kernel_us?": NUMBER_OR_NONE,
    "exhaustive_points?": int,
}
SUMMARY = {**TUNER_RUN, "source?": str, "runs?": Each(TUNER_RUN)}
MEASUREMENT = {"status": str, "kernel_us?": NUMBER_OR_NONE}
# A real network's run (`tune model`, tuning/models/plan.py): run.json of kind "model".
MODEL_RUN = {
    "format?": int,
    "kind": str,
    "identity": {"model": {"spec": str, "options": dict}, "target": str, "device": str},
    "settings": {
        "model": {"spec": str, "options": dict},
        "target_spec": {"kind": str, "arch?": str},
        "protocol": PROTOCOL,
        "rule_lists": [str],
        "peers": [str],
        "tune_top": int,
        "budget": int,
        "analyze_only": bool,
        "arch": str,
    },
    "shows?": (str, None),
    "command?": str,
    "wall_s?": NUMBER,
    "phase_wall_s?": Each(NUMBER),
    "arms?": [{"name": str, "peer?": bool}],
    "tuned?": dict,
}
LAUNCH = ({"grid": int, "block": int}, None)
ANALYSIS = {
    "target": dict,
    "criterion": str,
    "kernels": [
        {
            "name": str,
            "window": (int, None),
            "outputs": (int, None),
            "calls": int,
            "rules": Each((str, None)),
            "launches": Each(LAUNCH),
            "cross_thread": Each(bool),
            "pattern": bool,
        }
    ],
}
KERNEL_TIMES = {"kernels": Each(Each(MEASUREMENT))}
MODEL = {"spec": str, "options": dict, "inputs": [{"shape": [int], "dtype": str}]}


def file_problem(path: Path, data) -> str | None:
    """What is wrong with the data of the run folder's file at `path`, if anything."""
    shape = shape_of(path)
    return None if shape is None else mismatch(data, shape)


def run_problem(meta: dict) -> str | None:
    """What is wrong with a run file's data, if anything (its whole shape, and its Case; a
    model run's own shape)."""
    if meta.get("kind") == "model":
        return mismatch(meta, MODEL_RUN)
    found = mismatch(meta, RUN)
    if found:
        return found
    try:
        Case.from_fields(meta["case"])
    except CaseError as error:
        return f"case: {error}"
    return None


def shape_of(path: Path) -> object | None:
    """The shape of the run folder's file at `path`; None for a file it does not know."""
    path = Path(path)
    in_tuner = path.parent.parent.name == "tuners"
    if path.name == "run.json":
        return dict  # the whole shape is checked where a run is opened (`Run.open`)
    if path.name == "environment.json":
        return dict
    if path.name == "kernels.json":
        return Each(MEASUREMENT)
    if path.name == "analysis.json":
        return ANALYSIS
    if path.name == "kernel_times.json":
        return KERNEL_TIMES
    if path.name == "model.json":
        return MODEL
    if path.parent.name == "trials" and re.fullmatch(r"trial_\d+\.json", path.name):
        return TRIAL
    if in_tuner and path.name == "summary.json":
        return SUMMARY
    if in_tuner and path.name == "trials.json":
        return [MEASUREMENT]
    if in_tuner and path.name.endswith("_kernel.json"):
        return MEASUREMENT
    return None


def mismatch(value, shape, where: str = "") -> str | None:
    """Where `value` departs from `shape`, in words; None where it has the shape."""
    if isinstance(shape, tuple):  # any one of these
        options = [mismatch(value, option, where) for option in shape]
        return None if None in options else _wrong(value, shape, where)
    if isinstance(shape, list):
        if not isinstance(value, list):
            return _wrong(value, list, where)
        return _first(mismatch(item, shape[0], f"{where}[{i}]") for i, item in enumerate(value))
    if isinstance(shape, Each):
        if not isinstance(value, dict):
            return _wrong(value, dict, where)
        return _first(
            mismatch(item, shape.shape, _key(where, name)) for name, item in value.items()
        )
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return _wrong(value, dict, where)
        for key, inner in shape.items():
            name = key.rstrip("?")
            if name not in value:
                if key.endswith("?"):
                    continue
                return f"{_key(where, name)} is missing"
            found = mismatch(value[name], inner, _key(where, name))
            if found:
                return found
        return None
    return None if _is(value, shape) else _wrong(value, shape, where)


def _is(value, kind) -> bool:
    if kind is None:
        return value is None
    if kind is NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _wrong(value, shape, where: str) -> str:
    kinds = shape if isinstance(shape, tuple) else (shape,)
    wanted = " or ".join(_WHAT.get(kind, "an object") for kind in kinds)
    found = next(words for kind, words in _FOUND if _is(value, kind))
    return f"{where or 'the file'} should be {wanted}, not {found}"


def _key(where: str, name) -> str:
    return f"{where}.{name}" if where else str(name)


def _first(found):
    return next((item for item in found if item), None)
