"""How a value is checked against a shape (`mismatch`), the words for what it should be and
what it is; the shapes of the run folder's files are `shapes.py`'s.

A shape is a type (`str`, `int`, `NUMBER`, `None`, `dict` for any object), a `Within` range, a
one-item list (a list of that), an `Each` (an object whose every value has that shape), a dict
of keys (a key marked `?` may be absent), or a tuple of shapes (any one of them).
"""

from __future__ import annotations


class Each:
    """An object whose every value has `shape` (its keys are names: arms, figures, kernels)."""

    def __init__(self, shape):
        self.shape = shape


class Within:
    """A number of `kind` (int or NUMBER) between `low` and `high`, inclusive."""

    def __init__(self, kind, low: float, high: float):
        self.kind, self.low, self.high = kind, low, high


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


def mismatch(value, shape, where: str = "") -> str | None:
    """Where `value` departs from `shape`, in words; None where it has the shape."""
    if isinstance(shape, tuple):  # any one of these: the first whose type the value has
        fitting = next((option for option in shape if _fits(value, option)), _NO_FIT)
        if fitting is _NO_FIT:
            return _wrong(value, shape, where)
        return mismatch(value, fitting, where)
    if isinstance(shape, Within):
        if not _is(value, shape.kind):
            return _wrong(value, shape.kind, where)
        if not shape.low <= value <= shape.high:
            return (
                f"{where or 'the value'} should be between {_plain(shape.low)} and "
                f"{_plain(shape.high)}, not {value!r}"
            )
        return None
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


_NO_FIT = object()


def _plain(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _fits(value, shape) -> bool:
    """Whether `value` has the type `shape` asks for (not yet its contents or range)."""
    if isinstance(shape, Within):
        return _is(value, shape.kind)
    if isinstance(shape, list):
        return isinstance(value, list)
    if isinstance(shape, (dict, Each)):
        return isinstance(value, dict)
    return _is(value, shape)


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
    wanted = " or ".join(_words(kind) for kind in kinds)
    found = next(words for kind, words in _FOUND if _is(value, kind))
    return f"{where or 'the file'} should be {wanted}, not {found}"


def _words(shape) -> str:
    """What a value of `shape` is, in words."""
    if isinstance(shape, Within):
        return _WHAT[shape.kind]
    if isinstance(shape, list):
        return _WHAT[list]
    if isinstance(shape, (dict, Each)):
        return _WHAT[dict]
    return _WHAT[shape]


def _key(where: str, name) -> str:
    return f"{where}.{name}" if where else str(name)


def _first(found):
    return next((item for item in found if item), None)
