"""The shape parameters of the graph under study (apache/tvm#20401's CASE)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from .user_error import UserError


class CaseError(UserError):
    """A Case that cannot describe a graph; the message says which field and why."""


@dataclass(frozen=True)
class Case:
    """One graph of the issue's shape: optional Add/Concat prelude, MaxPool, a chain of Adds.

    The defaults are the issue's graph: input [1,16,64,64], nine Add branches concatenated in two
    levels to [1,144,64,64], a 2x2 stride-2 MaxPool, two Adds, both Add outputs returned.
    """

    channels: int = 16
    height: int = 64
    width: int = 64
    window: int = 2
    stride: int = 2
    branches: int = 3
    prelude: bool = True
    tail: int = 2
    shared_output: bool = True

    def __post_init__(self):
        for name in ("channels", "height", "width", "window", "stride", "branches", "tail"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise CaseError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("prelude", "shared_output"):
            if not isinstance(getattr(self, name), bool):
                raise CaseError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.window > min(self.height, self.width):
            raise CaseError(
                f"window {self.window} is larger than the input ({self.height}x{self.width})"
            )

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return (1, self.channels, self.height, self.width)

    @property
    def pool_channels(self) -> int:
        return self.channels * (self.branches**2 if self.prelude else 1)

    @property
    def pool_input_shape(self) -> tuple[int, int, int, int]:
        return (1, self.pool_channels, self.height, self.width)

    @property
    def pool_shape(self) -> tuple[int, int, int, int]:
        out_h = (self.height - self.window) // self.stride + 1
        out_w = (self.width - self.window) // self.stride + 1
        return (1, self.pool_channels, out_h, out_w)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Case":
        return cls(**data)

    @classmethod
    def from_fields(cls, fields: dict) -> "Case":
        """A Case from user-given fields (a table of a Cases file); unknown keys are refused."""
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = [key for key in fields if key not in known]
        if unknown:
            raise CaseError(f"unknown case key {unknown[0]!r}; known keys: {', '.join(known)}")
        return cls(**fields)

    def replace(self, **changes) -> "Case":
        return dataclasses.replace(self, **changes)


# An integer as a user types one: ASCII digits, an optional minus. Python's int() also takes
# other digits (Arabic-Indic "٣"), underscores ("1_0") and spaces, which no user means as a count.
_INTEGER = re.compile(r"-?[0-9]+")


def plain_integer(text: str) -> int | None:
    """The integer `text` spells in ASCII digits (an optional minus), else None (also where
    it has more digits than Python converts)."""
    if not _INTEGER.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:  # over sys.get_int_max_str_digits()
        return None


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_case(assignments: list[str] | None) -> Case:
    """Build a Case from `key=value` strings, as given to `--case`."""
    fields = {f.name: f for f in dataclasses.fields(Case)}
    changes: dict[str, Any] = {}  # each a bool or an int, as its field's default
    for item in assignments or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep:
            raise CaseError(f"--case takes key=value, got {item!r}")
        if key not in fields:
            raise CaseError(f"unknown case key {key!r}; known keys: {', '.join(fields)}")
        default = fields[key].default
        text = text.strip().lower()
        if isinstance(default, bool):
            if text not in _TRUE | _FALSE:
                raise CaseError(f"{key} must be true or false, got {text!r}")
            changes[key] = text in _TRUE
        elif (number := plain_integer(text)) is not None:
            changes[key] = number
        else:
            raise CaseError(f"{key} must be an integer (digits 0-9), got {text!r}")
    return Case(**changes)
