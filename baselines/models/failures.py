"""A schedule rule that raises on a kernel, as a finding: which rule, TVM's one-line message, and
the upstream issue where the message is a known one.

dlight's `ApplyDefaultSchedule` lets a rule's exception end the whole build, so one kernel TVM
cannot schedule (a whole-tensor `mean` under `Reduction`, apache/tvm#20061) stops a network. Here
the failure is recorded and the kernel left to the next rule (`kernels.schedule_kernel`); the report
says such a list cannot build the model as TVM ships it.

No torch, no TVM: the report renders these records without either.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass

# Known messages (a fragment of TVM's first line) -> the upstream issue that reports them.
KNOWN_ISSUES = {
    "Check failed: block_realize == old_block_realize_": "apache/tvm#20061",
}
_POINTERS = re.compile(r"\s*\(0x[0-9a-f]+ vs\. 0x[0-9a-f]+\)")
_MAX_MESSAGE = 300


@dataclass(frozen=True)
class RuleFailure:
    """`rule` raised on the kernel; `message` is TVM's first line, `upstream` its issue (None
    where the message is not a known one); `next_rule` took the kernel after it (None: none)."""

    rule: str
    message: str
    upstream: str | None
    next_rule: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def tvm_message(error: BaseException) -> str:
    """`error`'s first non-blank line with its exception type first, leaving out pointer values
    (which vary by run) and a trailing colon: `InternalError: Check failed: ...`."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = _POINTERS.sub("", lines[0] if lines else "").rstrip(" :")
    kind = type(error).__name__
    return (f"{kind}: {text}" if text else kind)[:_MAX_MESSAGE]


def upstream_issue(message: str) -> str | None:
    """The upstream issue of a known message, or None."""
    return next((issue for known, issue in KNOWN_ISSUES.items() if known in message), None)


def rule_failure(rule: str, error: BaseException) -> RuleFailure:
    message = tvm_message(error)
    return RuleFailure(rule, message, upstream_issue(message))


def failure_text(
    kernel: str,
    rules: str,
    failure: dict,
    name: Callable[[str], str] = lambda n: f"`{n}`",
    text: Callable[[str], str] = str,
) -> str:
    """One line: the list, kernel, rule, TVM's message, issue and next rule; `name` quotes the
    names and `text` the rest (a report passes its markdown escaping)."""
    issue = f"; {text(failure['upstream'])}" if failure.get("upstream") else ""
    taken = (
        f"here {name(rules)} leaves that kernel to its next rule, {text(failure['next_rule'])}"
        if failure.get("next_rule")
        else f"no later rule of {name(rules)} takes it"
    )
    return (
        f"For CUDA, {name(rules)} cannot build the model as TVM ships it: "
        f"{text(failure['rule'])} raises on kernel {name(kernel)} "
        f"({text(failure['message'])}{issue}); {taken}"
    )


def failure_rows(analysis: dict) -> list[dict]:
    """Every (kernel, list) of an analysis.json where a rule raised, in order, as keyword
    arguments of `failure_text`."""
    return [
        {"kernel": kernel["name"], "rules": rules, "failure": failure}
        for kernel in analysis["kernels"]
        for rules, failure in kernel.get("failures", {}).items()
    ]


def failure_lines(analysis: dict) -> list[str]:
    """`failure_text` of every row of `failure_rows`: what the console prints."""
    return [failure_text(**row) for row in failure_rows(analysis)]
