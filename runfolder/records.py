"""One type per file of a run folder: what the measuring side writes and the reporting side reads,
and what `checker.py` checks a file against as it is read (`store.read_record`).

TypedDict rather than dataclasses: a TypedDict is the parsed JSON itself, so reading costs no copy,
writing is `json.dumps`, and keys a newer tune writes ride along untouched. A key older runs lack is
`NotRequired`, so the committed H200 runs load as they are, with no migration or invented default.

A number's range is `Annotated[kind, Within(low, high)]` from `ranges.py`, the table the command
line checks with. `float` is any JSON number, `int` an integer; booleans are neither. Unnamed keys
are left alone. A model's files are in `model_records.py`.
"""

import math
from typing import Annotated, Any, NotRequired, TypedDict

from .ranges import RANGES, STORED_RANGES, TIME_US, WALL_S


class Within:
    """A number between `low` and `high`, inclusive (and finite, as every number read is)."""

    def __init__(self, low: float, high: float):
        self.low, self.high = low, high

    def holds(self, value: float) -> bool:
        return math.isfinite(value) and self.low <= value <= self.high


def option(name: str) -> Within:
    """The range of a run-defining option, as the command line checks it (`ranges.py`)."""
    return Within(*{**RANGES, **STORED_RANGES}[name])


TimeUs = Annotated[float, Within(*TIME_US)]
Seconds = Annotated[float, Within(*WALL_S)]
Count = Annotated[int, Within(0, 2**53)]
Budget = Annotated[int, option("budget")]
Blocks = Annotated[int, option("blocks")]
Share = Annotated[float, Within(0, 1)]


class ProtocolRecord(TypedDict):
    repeat: Annotated[int, option("repeat")]
    number: NotRequired[Annotated[int, option("number")]]
    trials: NotRequired[Annotated[int, option("trials")]]
    min_repeat_ms: NotRequired[Annotated[int, option("min_repeat_ms")]]
    warmup_s: NotRequired[Annotated[float, option("warmup_s")]]
    blocks: NotRequired[Blocks | None]
    checks: NotRequired[Annotated[int, option("checks")]]
    warmup_calls: NotRequired[Annotated[int, option("warmup_calls")]]
    queued_calls: NotRequired[Annotated[int, option("queued_calls")]]


class Identity(TypedDict):
    case: dict[str, Any]
    target: str
    device: str


class TargetRecord(TypedDict):
    """run.json's `target_spec`: `baselines.target.TargetSpec.to_json()`."""

    kind: str
    arch: NotRequired[str]


class RunOptions(TypedDict):
    """The run's options the tuners read (a key an older run lacks takes its default where read)."""

    seed: NotRequired[Annotated[int, option("seed")]]  # of the tuners' samplers
    workers: NotRequired[Annotated[int, option("workers")]]  # Optuna processes sharing a study
    sampler: NotRequired[str]  # Optuna's sampler
    exhaustive: NotRequired[bool | None]  # also measure every point of the template's space
    # --storage: the Optuna storage the run shares (its password kept out), and where the
    # password is read from
    storage: NotRequired[str | None]
    storage_password_env: NotRequired[str | None]
    rpc_tracker: NotRequired[str]  # --rpc-tracker HOST:PORT: MetaSchedule measures on its servers
    rpc_key: NotRequired[str]
    study: NotRequired[str]  # the run's studies' name in a shared storage (never two runs')


class ArmEntry(TypedDict):
    name: str
    peer: NotRequired[bool]
    whole_graph: NotRequired[bool]
    masked_loads: NotRequired[bool]
    rule_before: NotRequired[str]


class RunMeta(TypedDict):
    """run.json of a study (`tune`): what the run measures, how, and what it has done."""

    format: NotRequired[int]
    identity: Identity
    case: dict[str, int | bool]
    target_spec: TargetRecord
    protocol: ProtocolRecord
    tuners: list[str]
    budget: Budget
    options: RunOptions
    arms: list[ArmEntry]
    arm_names: NotRequired[list[str]]
    command: NotRequired[str]
    wall_s: NotRequired[Seconds]
    phase_wall_s: NotRequired[dict[str, Seconds]]
    tuner_failures: NotRequired[dict[str, str]]
    peers_added: NotRequired[list[str]]
    peers_not_measured: NotRequired[dict[str, Any]]
    fused_kernel_rules: NotRequired[dict[str, dict[str, str] | None]]


class Check(TypedDict):
    correct: bool
    max_abs_err: NotRequired[float | None]


class Design(TypedDict):
    blocks: Blocks


class KernelName(TypedDict):
    name: str


class Profiled(TypedDict):
    """An arm's kernel sum and captured call (`measure/profiled.py`), on a GPU."""

    kernel_sum_us: NotRequired[TimeUs]
    kernels_per_call: NotRequired[float]
    kernels_us: NotRequired[dict[str, float]]
    captured_us: NotRequired[TimeUs]
    captured_reason: NotRequired[str]
    profile_reason: NotRequired[str]


class TrialWalls(TypedDict):
    """Where the trial's time went (`harness.run_trial`); the report reads these."""

    build_s: NotRequired[dict[str, Seconds]]
    libraries_loaded: NotRequired[list[str]]  # the arms whose built library the trial loaded
    check_by_arm_s: NotRequired[dict[str, Seconds]]
    startup_s: NotRequired[Seconds]
    compiler_import_s: NotRequired[Seconds]
    waited_s: NotRequired[Seconds]
    load_s: NotRequired[dict[str, Seconds]]
    peer_s: NotRequired[dict[str, Seconds]]
    check_s: NotRequired[Seconds]
    warmup_s: NotRequired[Seconds]
    timing_s: NotRequired[Seconds]
    timing_by_arm_s: NotRequired[dict[str, Seconds]]
    profile_s: NotRequired[Seconds]


class Trial(TypedDict):
    """trials/trial_N.json: one trial of the end-to-end harness, in a process of its own."""

    trial: Annotated[int, Within(0, RANGES["trials"][1] - 1)]
    format: NotRequired[int]
    build_order: NotRequired[list[str]]
    checks: dict[str, Check]
    design: NotRequired[Design]
    block_orders: NotRequired[list[list[str]]]
    block_samples_us: NotRequired[dict[str, dict[str, list[list[TimeUs]]]]]
    samples_us: NotRequired[dict[str, list[TimeUs]]]
    queued_gpu_us: NotRequired[dict[str, list[TimeUs]]]
    gpu_queued_reasons: NotRequired[dict[str, str]]
    kernels: NotRequired[dict[str, list[KernelName]]]
    cuda_graph_launches: NotRequired[dict[str, Any]]
    profiled: NotRequired[dict[str, Profiled]]
    wall_s: NotRequired[TrialWalls]


class WarmStart(TypedDict):
    """Where a kernel's MetaSchedule search began (`tune model --warm-start`): the run folder, the
    kernel there with the same workload (None: none had it), that run's GPU, and how many of its
    best records were measured again here, the search's first trial rows."""

    folder: str
    kernel: str | None
    gpu: str | None
    records: Count


class TunerRun(TypedDict):
    """What one tuner's search found (a summary's, or one of its resumes')."""

    trials: Count
    valid: Count
    failed_by_reason: dict[str, Count]
    wall_s: NotRequired[Seconds]
    best_kernel_us: NotRequired[TimeUs | None]
    best_trial: NotRequired[Count | None]
    timer: NotRequired[str | None]
    default_kernel_us: NotRequired[TimeUs | None]
    fixed_kernel_us: NotRequired[TimeUs | None]
    serial_kernel_us: NotRequired[TimeUs | None]
    exhaustive_best_kernel_us: NotRequired[TimeUs | None]
    exhaustive_points: NotRequired[Count]
    time_spent: NotRequired[dict[str, Seconds]]
    warm_start: NotRequired[WarmStart]


class TunerSummary(TunerRun):
    """tuners/NAME/summary.json."""

    importances: NotRequired[dict[str, Share] | None]  # plotted (reports/plots.py)
    source: NotRequired[str]
    runs: NotRequired[dict[str, TunerRun]]
    kernel_times: NotRequired[dict[str, str]]
    held_against: NotRequired[str]
    best_of: NotRequired[Count]  # a tuner of several runs: the trials its best is numbered among
    sampler_replay: NotRequired[dict[str, Any]]  # Optuna's samplers replayed on the whole space


class Measurement(TypedDict):
    """One kernel's measurement (tuners/NAME/*_kernel.json, and each entry of the lists)."""

    status: str
    kernel_us: NotRequired[TimeUs | None]
    timer: NotRequired[str | None]


# tuners/NAME/trials.json, kernels.json, exhaustive.json
TunerTrials = list[Measurement]
KernelMeasurements = dict[str, Measurement]
ExhaustiveTimes = dict[str, TimeUs | None]

# A sweep's own file, written with its marker (`kind`); an older sweep.json has none and is known by
# its settings.
SWEEP_KIND = "tune sweep"


class SweepSettings(TypedDict):
    cases: list[str]
    definitions: dict[str, dict[str, Any]]
    target: str
    device: str
    budget: Budget
    protocol: dict[str, Any]


class LargeReductionRecord(TypedDict):
    default: dict[str, str]
    fixed: dict[str, str]
    unchanged: bool


class Sweep(TypedDict):
    """sweep.json of `tune sweep`'s folder."""

    kind: NotRequired[str]
    settings: SweepSettings
    command: NotRequired[str]
    tuners: NotRequired[dict[str, str]]  # tuner -> the rule-made arm its arm is held against
    large_reductions: NotRequired[dict[str, LargeReductionRecord]]
    # What rendering adds (`reports/sweep_report.py`): a row per Case, the Cases each finding holds
    # for
    device: NotRequired[str | None]
    cases: NotRequired[list[dict[str, Any]]]
    fixed_slower_than_on: NotRequired[list[str]]
    fixed_beyond_goal: NotRequired[list[str]]
    one_kernel_slower_than_fixed: NotRequired[list[str]]
    one_kernel_beyond_goal: NotRequired[list[str]]
    tuner_failures: NotRequired[dict[str, dict[str, str]]]
    one_kernel_slower_than_inductor: NotRequired[list[str]]
