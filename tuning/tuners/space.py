"""The search space over the schedule template, per target, with the constraints checked before
any build: an impossible point is pruned with its reason, never built."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from tvm import s_tir

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.template import SERIAL, PoolSchedule, recorded, vector_fits
from pool_fusion_tuning.baselines.window_reduction import _inline_window

# Each knob of the template and its values (a categorical distribution to Optuna), declared only
# here (MetaSchedule's space reads them). A new knob goes last, its value 1 giving the older
# schedules (`template.ADDED_KNOBS`), and a domain keeps its values: Optuna refuses to resume a
# study whose distributions changed.
Domains = dict[str, list]

GPU_DOMAINS: Domains = {
    "threads": [32, 64, 128, 256, 512, 1024],
    "outputs_w": [1, 2, 4, 8],
    "outputs_h": [1, 2, 4],
    "thread_axis": ["inner", "outer"],
    "unroll": [False, True],
    "vector": [False, True],
    "pooled_scope": ["local", "shared"],
    "outputs_flat": [1, 2, 4],
    "outputs_strided": [1, 2, 4, 8],
    "masked_loads": [False, True],
}
# On the CPU the template parallelizes the outer loop; threads, binding and scope do not apply.
CPU_DOMAINS: Domains = {
    "outputs_w": [1, 2, 4, 8],
    "outputs_h": [1, 2, 4],
    "unroll": [False, True],
    "vector": [False, True],
    "outputs_flat": [1, 2, 4],
}
# The tiling knobs, asked of Optuna first (`Space.suggest`), and what they imply: flat or
# block-strided outputs take none along W and H, and block-strided ones take consecutive threads.
# Implied knobs are not asked, so no ask is spent on a point the constraints reject (over half the
# asks of a 500-trial study were, and an ask's time grows with the trials before it).
TILING = ("outputs_flat", "outputs_strided")


def completed(params: dict) -> dict:
    """A point as Optuna recorded it with the knobs its tiling implies added; a full point is
    returned as it is."""
    apart = params.get("outputs_strided", 1) > 1
    implied: dict = {}
    if apart or params.get("outputs_flat", 1) > 1:
        implied.update(outputs_w=1, outputs_h=1)
    if apart:
        implied["thread_axis"] = "inner"
    return {**implied, **params} if implied.keys() - params.keys() else params


# Lanes of a CUDA vector store of floats.
VECTOR_LANES = (2, 4)
# The nearest the template comes to dlight's GeneralReduction: the pooled value in shared memory,
# one output per thread, no unrolling, the smallest blocks (the default is one block per output).
CLOSEST_TO_DEFAULT = PoolSchedule(threads=32, pooled_scope="shared")


def like_inductor(outputs: int) -> list[PoolSchedule]:
    """Inductor's launches of a pointwise kernel of `outputs` elements, as its two configs
    (torch/_inductor/runtime/triton_heuristics.py, `pointwise` and `triton_config`, PyTorch 2.11
    to 2.13): XBLOCK = max(256, min(N // 128, 1024)) elements a block, N rounded up to a power of
    two, on XBLOCK / 256 warps (at least 4); and XBLOCK / 2 on one warp per 64. Triton stores a
    thread's elements as vectors of up to 4 where the count is a multiple of 16, the rest a block
    apart."""
    hint = 1 << max(outputs - 1, 0).bit_length()
    block = max(256, min(hint // 128, 1024))
    points = []
    for elements, per_warp in ((block, 256), (block // 2, 64)):
        elements = min(elements, hint)
        warps = 1 << max(min(max(elements // per_warp, 1), 8) - 1, 0).bit_length()
        threads = 32 * (max(warps, 4) if elements >= 128 else warps)
        each = max(elements // threads, 1)
        lanes = min(each, 4) if outputs % 16 == 0 else 1
        strided = each // lanes
        points.append(
            PoolSchedule(
                threads=threads,
                outputs_flat=lanes,
                outputs_strided=strided,
                unroll=True,
                vector=lanes > 1,
                masked_loads=True,
            )
        )
    return list(dict.fromkeys(points))


@dataclass(frozen=True)
class KernelShape:
    """What the constraints read of the kernel: its outputs' last two extents and count, whether
    its window is read through an in-kernel prologue (no vector loads from one), and the tiles
    along W whose aligned vector loads fit (CUDA)."""

    out_h: int
    out_w: int
    outputs: int
    prologue: bool
    vector_tiles: tuple[int, ...]

    @classmethod
    def of_case(cls, case: Case, whole: bool = False) -> "KernelShape":
        """The Case's fused pool kernel (with `whole`, its one kernel of the whole graph)."""
        _, _, out_h, out_w = case.pool_shape
        tiles = tuple(
            t
            for t in GPU_DOMAINS["outputs_w"]
            if vector_fits(t, case.window, case.stride, case.width, out_w)
        )
        return cls(out_h, out_w, math.prod(case.pool_shape), whole and case.prelude, tiles)

    @classmethod
    def of_function(cls, func) -> "KernelShape":
        """Any kernel the template takes (a real network's), as the window rule reads it: vector
        loads only where the rule's fit, one output per thread along W."""
        window = _inline_window(s_tir.Schedule(func))
        if window is None:
            raise ValueError("the kernel is not a sliding-window reduction the template takes")
        out_h, out_w = ((1, *window.shape)[-2:]) if window.shape else (1, 1)
        tiles = (1,) if window.vector else ()
        return cls(out_h, out_w, math.prod(window.shape), window.inlined_input, tiles)


class Space:
    """`whole`: the space of the whole graph's one kernel (arm `one-kernel`), any prelude inlined
    into the window's loads. `kernel`: the kernel's shape where it is not the Case's
    (`for_function`)."""

    def __init__(
        self,
        case: Case | None,
        target_kind: str,
        max_threads: int | None = None,
        max_shared_bytes: int | None = None,
        whole: bool = False,
        kernel: KernelShape | None = None,
    ):
        """The limits, None where the target has none: see `for_target`."""
        self.case = case
        self.target_kind = target_kind
        self.whole = whole
        self.max_threads = max_threads
        self.max_shared_bytes = max_shared_bytes
        self.domains = GPU_DOMAINS if target_kind == "cuda" else CPU_DOMAINS
        if kernel is None:
            assert case is not None, "a Space needs a Case or a kernel's shape"
            kernel = KernelShape.of_case(case, whole)
        self.kernel = kernel

    @classmethod
    def for_target(cls, case: Case, target, whole: bool = False) -> "Space":
        """The space with the target's limits on threads and shared memory per block (as dlight
        reads them)."""
        return cls(
            case,
            target.kind.name,
            target.attrs.get("max_num_threads"),
            target.attrs.get("max_shared_memory_per_block"),
            whole,
        )

    @classmethod
    def for_function(cls, func, target) -> "Space":
        """The space of any kernel the template takes, with the target's limits."""
        return cls(
            None,
            target.kind.name,
            target.attrs.get("max_num_threads"),
            target.attrs.get("max_shared_memory_per_block"),
            kernel=KernelShape.of_function(func),
        )

    def config(self, params: dict) -> PoolSchedule:
        return PoolSchedule(**params)

    def suggest(self, trial) -> dict:
        """A point asked of Optuna's `trial` (define-by-run): the tiling knobs first, then those
        it leaves free; the full point, in the domains' order."""
        known = completed(
            {
                name: trial.suggest_categorical(name, self.domains[name])
                for name in TILING
                if name in self.domains
            }
        )
        for name in self.domains:  # in order: the sampler's random stream follows it
            if name not in known:
                known[name] = trial.suggest_categorical(name, self.domains[name])
        return {name: known[name] for name in self.domains}

    def params(self, schedule: PoolSchedule) -> dict:
        return {name: getattr(schedule, name) for name in self.domains}

    def seeds(self) -> list[dict]:
        """Known points measured first: the issue's SERIAL, the closest to the default, and
        inductor's launches (`like_inductor`; scalar stores where a vector does not fit)."""
        seeds = [self.params(SERIAL)]
        if self.target_kind == "cuda":
            seeds.append(self.params(CLOSEST_TO_DEFAULT))
            for point in map(self.params, like_inductor(self.kernel.outputs)):
                point = {**point, "vector": False} if self.why_invalid(point) else point
                if self.why_invalid(point) is None and point not in seeds:
                    seeds.append(point)
        return seeds

    def points(self) -> list[dict]:
        """Every point of the space, pruned ones included."""
        names = list(self.domains)
        return [dict(zip(names, values)) for values in itertools.product(*self.domains.values())]

    def valid_points(self) -> list[dict]:
        return [p for p in self.points() if self.why_invalid(p) is None]

    def why_invalid(self, params: dict) -> str | None:
        """None for a point that can be built, else the reason it is pruned."""
        cfg = self.config(params)
        kernel = self.kernel
        if cfg.outputs_flat > 1 and (cfg.outputs_w > 1 or cfg.outputs_h > 1):
            return "outputs along the flattened output and along W or H at once"
        if cfg.outputs_strided > 1 and (cfg.outputs_w > 1 or cfg.outputs_h > 1):
            return "outputs a block apart and along W or H at once"
        if cfg.outputs_strided > 1 and cfg.thread_axis != "inner":
            return "outputs a block apart need consecutive threads on consecutive outputs"
        if cfg.outputs_flat > kernel.outputs:
            return "tile larger than the output"
        if cfg.outputs_strided > 1 and cfg.outputs_strided * cfg.threads * cfg.outputs_flat > (
            kernel.outputs
        ):
            return "tile larger than the output"
        if cfg.outputs_w > kernel.out_w or cfg.outputs_h > kernel.out_h:
            return "tile larger than the output"
        if self.max_threads is not None and cfg.threads > self.max_threads:
            return "too many threads per block"
        if cfg.vector and not self._vector_fits(cfg):
            return "vector width does not fit"
        if cfg.vector and self.target_kind == "cuda" and kernel.prologue and cfg.outputs_flat == 1:
            return "no vector loads from an inlined prologue"
        if (
            self.target_kind == "cuda"
            and cfg.pooled_scope == "shared"
            and (
                self.max_shared_bytes is not None
                and self._shared_bytes(cfg) > self.max_shared_bytes
            )
        ):
            return "shared memory over the limit"
        return None

    def _shared_bytes(self, cfg: PoolSchedule) -> int:
        """Shared memory of the pooled value: a block's tiles with the inner binding; with the
        outer one a block's outputs are strided, so TVM allocates the whole output."""
        if cfg.thread_axis == "outer":
            return 4 * self.kernel.outputs
        tile = cfg.outputs_w * cfg.outputs_h * cfg.outputs_flat * cfg.outputs_strided
        return 4 * cfg.threads * tile

    def _vector_fits(self, cfg: PoolSchedule) -> bool:
        if cfg.outputs_flat > 1:  # vector stores only, of a thread's aligned elements
            lanes = cfg.outputs_flat in VECTOR_LANES or self.target_kind != "cuda"
            return lanes and self.kernel.outputs % cfg.outputs_flat == 0
        if self.target_kind != "cuda":
            return cfg.outputs_w > 1 and self.kernel.out_w % cfg.outputs_w == 0
        return cfg.outputs_w in self.kernel.vector_tiles


def key(params: dict) -> str:
    """A stable name for a point, to find repeats (a point stored before a knob was added keeps
    its key)."""
    params = recorded(params)
    return ",".join(f"{name}={params[name]}" for name in sorted(params))
