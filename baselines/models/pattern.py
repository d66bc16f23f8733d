"""The idle-lane pattern (the default schedule apache/tvm#20401 reports, in any kernel), stated
once: the sentence a report prints and the test that flags a kernel, side by side so that they
cannot drift apart. The test reads plain figures, which
`analysis.py` reads off the TIR.
"""

from __future__ import annotations

from pool_fusion_tuning.baselines.pipeline import CUDA_LIMITS
from pool_fusion_tuning.baselines.rules import MAX_WINDOW

WARP = CUDA_LIMITS["thread_warp_size"]
# The rule list whose schedule has the pattern: the backend's own.
PATTERN_LIST = "default"

CRITERION = (
    "A kernel has the idle-lane pattern when (1) each of its reductions reduces a constant number "
    f"of elements into each output, at most {MAX_WINDOW} (the candidate rule's window limit), "
    "and (2) the default rule list schedules it as a cross-thread reduction with one thread "
    "block per output (a reduction loop bound to threadIdx, as many blocks as outputs) whose "
    f"warps ({WARP} lanes each) hold more lanes than the window has elements, so most lanes of "
    "every block have no element to reduce. Both default schedules the issue names are flagged: "
    "GeneralReduction's one block of 256 threads per output (4 of 256 lanes busy on a 2x2 "
    "window) and Reduction's one block of 4 threads per output of a 2x2 average pool (4 of a "
    "warp's 32 lanes)."
)


def warp_lanes(threads: int) -> int:
    """Lanes a block of `threads` occupies: whole warps."""
    return -(-threads // WARP) * WARP


def has_pattern(
    window: int | None, outputs: int | None, cross_thread: bool, grid: int, block: int
) -> bool:
    """CRITERION for one kernel under the default list: `window` elements reduced into each of
    `outputs` values (None: no reduction, or not a constant one), reduced across threads or not,
    launched as `grid` blocks of `block` threads."""
    return (
        window is not None
        and window <= MAX_WINDOW
        and cross_thread
        and grid == outputs
        and warp_lanes(block) > window
    )
