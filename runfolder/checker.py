"""A JSON value checked against a record type (`records.py`) by reading the type itself, and the
record type of each file of a run folder.

Valid JSON of the wrong shape (a list for a record, a missing key, text for a number, a number out
of range) is said in one line naming the key, which the reader puts after the file's name. The
checker follows a TypedDict's keys (NotRequired ones may be absent; unknown ones are left alone),
`dict[str, X]`, `list[X]`, unions, `Literal`, `Annotated[..., Within(low, high)]`, and `float`,
`int`, `str`, `bool`, None and `Any`.
"""

from __future__ import annotations

import functools
import math
import re
import types
from pathlib import Path
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from pool_fusion_tuning.baselines.case import Case, CaseError

from . import model_records as m
from . import records as r
from . import report_records

_WHAT: dict[object, str] = {
    dict: "an object",
    list: "a list",
    str: "text",
    int: "an integer",
    bool: "true or false",
    float: "a number",
    None: "null",
}
_FOUND = [(kind, _WHAT[kind]) for kind in (dict, list, str, bool, float, None)]


def problem(value: object, kind: Any, where: str = "") -> str | None:
    """Where `value` departs from the type `kind`, in words; None where it is one."""
    kind, within = _unwrap(kind)
    if kind is Any:
        return None
    if _is_union(kind):
        options = get_args(kind)
        fitting = [option for option in options if _fits(value, option)]
        if not fitting:
            return _wrong(value, options, where)
        said = [problem(value, option, where) for option in fitting]
        return None if None in said else said[0]
    if get_origin(kind) is Literal:
        if value in get_args(kind) and type(value) in {type(a) for a in get_args(kind)}:
            return None
        wanted = " or ".join(repr(a) for a in get_args(kind))
        return f"{where or 'the value'} should be {wanted}, not {value!r}"
    if is_typeddict(kind):
        if not isinstance(value, dict):
            return _wrong(value, (kind,), where)
        for name, (inner, required) in _keys(kind).items():
            if name not in value:
                if not required:
                    continue
                return f"{_key(where, name)} is missing"
            found = problem(value[name], inner, _key(where, name))
            if found:
                return found
        return None
    origin = get_origin(kind) or kind
    if origin is list:
        if not isinstance(value, list):
            return _wrong(value, (list,), where)
        inner = (get_args(kind) or (Any,))[0]
        return _first(problem(item, inner, f"{where}[{i}]") for i, item in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            return _wrong(value, (dict,), where)
        inner = (get_args(kind) or (Any, Any))[1]
        return _first(problem(item, inner, _key(where, name)) for name, item in value.items())
    if not _is(value, kind):
        return _wrong(value, (kind,), where)
    if within is None and kind is float and not math.isfinite(value):  # type: ignore[arg-type]
        return f"{where or 'the value'} should be a finite number, not {value!r}"
    if within is not None and not within.holds(value):  # type: ignore[arg-type]
        return (
            f"{where or 'the value'} should be between {_plain(within.low)} and "
            f"{_plain(within.high)}, not {value!r}"
        )
    return None


@functools.cache
def _keys(record: type) -> dict[str, tuple[Any, bool]]:
    """A TypedDict's keys in order, each with its type and whether required (from the
    annotations: `__required_keys__` is wrong for string annotations)."""
    found = {}
    for name, hint in get_type_hints(record, include_extras=True).items():
        required = get_origin(hint) is not NotRequired
        if get_origin(hint) in (NotRequired, Required):
            hint = get_args(hint)[0]
        found[name] = (hint, required)
    return found


def _unwrap(kind: Any) -> tuple[Any, r.Within | None]:
    """The type inside an Annotated one, with its range if it has one."""
    if get_origin(kind) is Annotated:
        within = next((a for a in kind.__metadata__ if isinstance(a, r.Within)), None)
        return kind.__origin__, within
    if kind is type(None):
        return None, None
    return kind, None


def _is_union(kind: Any) -> bool:
    return get_origin(kind) in (Union, types.UnionType)


def _fits(value: object, kind: Any) -> bool:
    """Whether `value` has the type `kind` asks for (not yet its contents or range)."""
    kind, _ = _unwrap(kind)
    if kind is Any:
        return True
    if _is_union(kind):
        return any(_fits(value, option) for option in get_args(kind))
    if get_origin(kind) is Literal:
        return any(_is(value, type(a)) for a in get_args(kind))
    if is_typeddict(kind):
        return isinstance(value, dict)
    return _is(value, get_origin(kind) or kind)


def _is(value: object, kind: Any) -> bool:
    if kind is None:
        return value is None
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _wrong(value: object, kinds: tuple, where: str) -> str:
    wanted = " or ".join(_words(kind) for kind in kinds)
    found = next((words for kind, words in _FOUND if _is(value, kind)), type(value).__name__)
    return f"{where or 'the file'} should be {wanted}, not {found}"


def _words(kind: Any) -> str:
    """What a value of the type `kind` is, in words."""
    kind, _ = _unwrap(kind)
    if is_typeddict(kind):
        return _WHAT[dict]
    if _is_union(kind):
        return " or ".join(_words(option) for option in get_args(kind))
    if get_origin(kind) is Literal:
        return " or ".join(repr(a) for a in get_args(kind))
    return _WHAT[get_origin(kind) or kind]


def _plain(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _key(where: str, name: object) -> str:
    return f"{where}.{name}" if where else str(name)


def _first(found: Any) -> str | None:
    return next((item for item in found if item), None)


# ---- the run folder's files ----

# By file name; a tuner's files by their name inside tuners/NAME/.
_BY_NAME: dict[str, Any] = {
    "run.json": dict[str, Any],  # the whole type is checked where a run is opened (`Run.open`)
    "environment.json": dict[str, Any],
    "sweep.json": r.Sweep,
    "report.json": report_records.Report,
    "kernels.json": r.KernelMeasurements,
    "analysis.json": m.Analysis,
    "kernel_times.json": m.KernelTimes,
    "cublas_gemms.json": m.CublasGemms,
    "model.json": m.ModelFile,
    "models.json": m.Models,
    "census.json": m.Census,
}
_IN_TUNER: dict[str, Any] = {
    "summary.json": r.TunerSummary,
    "trials.json": r.TunerTrials,
    "exhaustive.json": r.ExhaustiveTimes,
    "result.json": m.TunedKernel,
}


def record_type(path: Path, data: object = None) -> Any:
    """The record type of the run folder's file at `path` (a model run's report by its kind,
    given its `data`); None for an unknown file."""
    path = Path(path)
    if path.name == "report.json" and isinstance(data, dict) and data.get("kind") == "model":
        return m.ModelReport
    if path.name in _BY_NAME:
        return _BY_NAME[path.name]
    if path.parent.name == "trials" and re.fullmatch(r"trial_\d+\.json", path.name):
        return r.Trial
    if path.parent.parent.name == "tuners":
        if path.name.endswith("_kernel.json"):
            return r.Measurement
        return _IN_TUNER.get(path.name)
    return None


def file_problem(path: Path, data: object) -> str | None:
    """What is wrong with the data of the run folder's file at `path`, if anything."""
    kind = record_type(path, data)
    return None if kind is None else problem(data, kind)


def run_problem(meta: dict[str, Any]) -> str | None:
    """What is wrong with a run file's data, if anything (its whole type, and its Case; a
    model run's own type)."""
    if meta.get("kind") == m.MODEL_KIND:
        return problem(meta, m.ModelRunMeta)
    found = problem(meta, r.RunMeta)
    if found:
        return found
    try:
        Case.from_fields(meta["case"])
    except CaseError as error:
        return f"case: {error}"
    return None
