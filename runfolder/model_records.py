"""The files of a real network's run (`tune model`, tuning/models/) and of `tune models`' folder,
one type each, as `records.py` holds the study's (why TypedDicts: its docstring)."""

from typing import Annotated, Any, NotRequired, TypedDict

from .records import (
    Budget,
    Count,
    Measurement,
    ProtocolRecord,
    Seconds,
    TargetRecord,
    TimeUs,
    option,
)
from .report_records import Ratio, ReportArm

MODEL_KIND = "model"


class ModelName(TypedDict):
    spec: str
    options: dict[str, Any]


class ModelIdentity(TypedDict):
    model: ModelName
    target: str
    device: str


class ModelSettings(TypedDict):
    model: ModelName
    target_spec: TargetRecord
    protocol: ProtocolRecord
    rule_lists: list[str]
    peers: list[str]
    tune_top: Count | str  # a count, or "all"
    budget: Budget
    analyze_only: bool
    arch: str
    kernels: NotRequired[str]  # --kernels of --tune-top, where not the default
    # --time-budget, in runs made before a later command could raise it (now in `tuned`)
    time_budget_s: NotRequired[Annotated[float, option("time_budget")]]


class ModelArmRecord(TypedDict):
    name: str
    peer: NotRequired[bool]


class ModelTuning(TypedDict):
    """run.json's `tuning` of --tune-top while not done: the commands so far. (Older runs also
    wrote the kernels chosen, unread: the choice is remade, the same, from kernel_times.json.)"""

    commands: Count
    kernels_at_once: NotRequired[Count]  # the most any command tuned side by side


class ModelRunMeta(TypedDict):
    """run.json of kind "model" (tuning/models/model_plan.py)."""

    format: NotRequired[int]
    kind: str
    identity: ModelIdentity
    settings: ModelSettings
    shows: NotRequired[str | None]
    command: NotRequired[str]
    wall_s: NotRequired[Seconds]
    phase_wall_s: NotRequired[dict[str, Seconds]]
    arms: NotRequired[list[ModelArmRecord]]
    tuned: NotRequired[dict[str, Any]]
    tuning: NotRequired[ModelTuning]
    study: NotRequired[str]  # its kernels' studies' name in a shared storage (--storage)
    build_errors: NotRequired[dict[str, str]]
    failure: NotRequired[str]  # why the model could not be imported or analysed


class TunedKernel(TypedDict):
    """tuners/KERNEL/result.json of `tune model --tune-top`, written as the kernel finishes so a
    resume does not tune it again: its rule-made times, the best tuner and what the tuned build
    uses; each tuner's summary under its name."""

    kernel: str
    kind: str
    calls: Count
    default_us: TimeUs | None
    fixed_us: TimeUs | None
    best: str | None
    kernel_us: TimeUs | None
    used: str | None
    budget: Budget
    wall_s: Seconds


class KernelLaunchRecord(TypedDict):
    grid: int
    block: int


class RuleFailureRecord(TypedDict):
    rule: str
    message: str
    upstream: str | None


class AnalyzedKernel(TypedDict):
    name: str
    window: int | None
    outputs: int | None
    calls: Count
    rules: dict[str, str | None]
    launches: dict[str, KernelLaunchRecord | None]
    cross_thread: dict[str, bool]
    pattern: bool
    failures: NotRequired[dict[str, RuleFailureRecord]]
    declines: NotRequired[dict[str, Any]]


class Analysis(TypedDict):
    """analysis.json: the network's kernels under each rule list."""

    target: dict[str, Any]
    criterion: str
    kernels: list[AnalyzedKernel]
    declines: NotRequired[dict[str, Any]]  # why the window rule declined each kernel it did


class KernelTimes(TypedDict):
    """kernel_times.json: each kernel's time under each rule list."""

    kernels: dict[str, dict[str, Measurement]]
    protocol: NotRequired[dict[str, Any]]  # the kernel-level protocol (`KernelProtocol`)
    checks: NotRequired[dict[str, str]]  # what each kind of check compares against
    complete: NotRequired[bool]  # every kernel timed under every list


class CublasGemm(TypedDict):
    """One GEMM shape of cublas_gemms.json: the matmul kernels of that shape (M x N x K, B x
    where batched, a bias add or not) and PyTorch eager's call of it (`call`), timed alone once
    for them all (`measured`, absent until timed)."""

    kernels: list[str]
    batch: Count | None
    m: Count
    n: Count
    k: Count
    bias: bool
    call: str
    measured: NotRequired[Measurement]


class CublasGemms(TypedDict):
    """cublas_gemms.json (`tuning/models/cublas_gemms.py`): each matmul kernel's GEMM in PyTorch
    eager (cuBLAS, TF32 off), written as each shape is timed; `unread`: the matmul kernels whose
    GEMM shape could not be read, with why."""

    protocol: dict[str, Any]  # the kernel-level protocol, as kernel_times.json's
    tf32: dict[str, bool]
    shapes: list[CublasGemm]
    unread: dict[str, str]
    complete: NotRequired[bool]


class ModelReport(TypedDict):
    """report.json of kind "model" (`reports/model_report.py`); `tune models` reads each."""

    kind: str
    model: "ModelFile"
    shows: NotRequired[str | None]
    command: NotRequired[str | None]
    target: NotRequired[str]
    device: str
    environment: NotRequired[dict[str, Any]]
    settings: NotRequired[ModelSettings]
    analysis_target: NotRequired[dict[str, Any]]
    criterion: NotRequired[str]
    tf32: NotRequired[str]
    kernels: list[dict[str, Any]]
    kernel_timer: NotRequired[str | None]
    kernel_checks: NotRequired[dict[str, Any]]
    rule_changes: dict[str, list[Any]]
    build_errors: dict[str, Any]
    rule_failures: NotRequired[list[dict[str, Any]]]
    tuned: NotRequired[dict[str, Any]]
    phase_wall_s: dict[str, Seconds]
    trials: NotRequired[int]
    arms: dict[str, ReportArm]
    peers: list[str]
    figures: NotRequired[dict[str, str]]
    ratios_by_figure: dict[str, dict[str, Ratio]]
    ratio_method: NotRequired[dict[str, Any]]
    trial_walls: NotRequired[list[dict[str, Any]]]
    checks: NotRequired[dict[str, Any]]
    gpu_reasons: NotRequired[dict[str, Any]]
    pattern: dict[str, Any]
    recovered: dict[str, Any]
    profiled: NotRequired[dict[str, dict[str, Any]]]
    cublas: NotRequired[CublasGemms]  # runs that timed PyTorch's GEMMs (cublas_gemms.json)


class ModelInput(TypedDict):
    shape: list[int]
    dtype: str


class ModelFile(TypedDict):
    """model.json: the network's spec and its inputs."""

    spec: str
    options: dict[str, Any]
    inputs: list[ModelInput]
    weights: NotRequired[str]


class Models(TypedDict):
    """models.json, `tune models`' own file: its models are folder names inside it."""

    settings: dict[str, dict[str, Any]]
    models: list[str]
    command: NotRequired[str]
    failures: NotRequired[dict[str, str]]
    wall_s: NotRequired[list[Seconds]]
    zoo: NotRequired[dict[str, Any]]  # a census's zoo (`tune models --zoo`)
    # What rendering adds (`reports/models_report.py`): a row per model, the device
    rows: NotRequired[list[dict[str, Any]]]
    device: NotRequired[str | None]


class Census(TypedDict):
    """census.json of a zoo's models folder (`tune models --zoo`): a row per model, from
    models.json and each model's report."""

    zoo: dict[str, Any]
    device: str | None
    rule_lists: list[str]
    rows: list[dict[str, Any]]
    reasons: dict[str, Any]
    wall_s: list[Seconds]
    command: str | None
