"""Cases the machine can hold, refused up front with their size and the limit.

TVM indexes tensors with int32, so a tensor of more than 2**31 - 1 elements overflows its
indices; and the trial process holds every arm's tensors at once, so a Case that needs more
memory than the machine has would be killed (or swap for hours) after minutes of building.
"""

from __future__ import annotations

import math

from baselines.case import Case, CaseError

INT32_MAX = 2**31 - 1
FLOAT_BYTES = 4
# Share of the available memory a run may plan to use (the rest: TVM, Python, the builders).
MEMORY_SHARE = 0.6
GB = 1e9


def graph_bytes(case: Case) -> int:
    """Peak bytes of the graph's float32 tensors: one branch's leaves, every branch's output
    and their concatenation alive at once, then the pool and its tail."""
    inputs = math.prod(case.input_shape)
    prelude = inputs * (2 * case.branches**2 + case.branches) if case.prelude else 0
    pooled = math.prod(case.pool_shape) * (1 + case.tail)
    return FLOAT_BYTES * (inputs + prelude + pooled)


def check_case_fits(case: Case, arms: int = 4, available: int | None = None) -> None:
    """Raise CaseError naming the size and the limit where the Case cannot run here."""
    largest = max((case.pool_input_shape, case.input_shape), key=math.prod)
    elements = math.prod(largest)
    if elements > INT32_MAX:
        raise CaseError(
            f"the Case's largest tensor {list(largest)} has {elements:,} elements; "
            f"TVM indexes with int32, at most {INT32_MAX:,}: make channels, height "
            "or width smaller"
        )
    if available is None:
        import psutil

        available = psutil.virtual_memory().available
    need = graph_bytes(case) * (arms + 1)  # each arm's tensors and the NumPy reference's
    if need > MEMORY_SHARE * available:
        raise CaseError(
            f"the Case needs about {need / GB:.1f} GB ({arms} arms and the reference"
            f", {graph_bytes(case) / GB:.1f} GB each) and this machine has "
            f"{available / GB:.1f} GB available (at most {MEMORY_SHARE:.0%} of it "
            "is used): make channels, height or width smaller"
        )


# Operators of the prelude (adds and concatenations) beyond which building the graph takes
# long enough to say so: the default Case has 15.
MANY_OPERATORS = 200


def slow_case_note(case: Case) -> str | None:
    """A line saying that this Case will take long to build, or None."""
    operators = case.branches**2 + 2 * case.branches if case.prelude else 0
    if operators <= MANY_OPERATORS:
        return None
    return (
        f"tune: note: this Case's prelude has {operators:,} operators (the default Case's "
        "has 15): building each arm takes much longer; --verbose prints each step"
    )
