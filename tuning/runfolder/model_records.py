"""The files of a real network's run (`tune model`, tuning/models/) and of `tune models`' folder,
one type each, as `records.py` holds the study's (why TypedDicts: its docstring)."""

from typing import Any, NotRequired, TypedDict

from .records import Budget, Count, Measurement, Protocol, Seconds, TargetSpec, TimeUs

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
    target_spec: TargetSpec
    protocol: Protocol
    rule_lists: list[str]
    peers: list[str]
    tune_top: Count
    budget: Budget
    analyze_only: bool
    arch: str
    kernels: NotRequired[str]  # --kernels of --tune-top, where not the default


class ModelArm(TypedDict):
    name: str
    peer: NotRequired[bool]


class ModelRunMeta(TypedDict):
    """run.json of kind "model" (tuning/models/plan.py)."""

    format: NotRequired[int]
    kind: str
    identity: ModelIdentity
    settings: ModelSettings
    shows: NotRequired[str | None]
    command: NotRequired[str]
    wall_s: NotRequired[Seconds]
    phase_wall_s: NotRequired[dict[str, Seconds]]
    arms: NotRequired[list[ModelArm]]
    tuned: NotRequired[dict[str, Any]]
    build_errors: NotRequired[dict[str, str]]
    failure: NotRequired[str]  # why the model could not be imported or analysed


class Launch(TypedDict):
    grid: int
    block: int


class RuleFailure(TypedDict):
    rule: str
    message: str
    upstream: str | None


class AnalyzedKernel(TypedDict):
    name: str
    window: int | None
    outputs: int | None
    calls: Count
    rules: dict[str, str | None]
    launches: dict[str, Launch | None]
    cross_thread: dict[str, bool]
    pattern: bool
    failures: NotRequired[dict[str, RuleFailure]]


class Analysis(TypedDict):
    """analysis.json: the network's kernels under each rule list."""

    target: dict[str, Any]
    criterion: str
    kernels: list[AnalyzedKernel]


class KernelTimes(TypedDict):
    """kernel_times.json: each kernel's time under each rule list."""

    kernels: dict[str, dict[str, Measurement]]


class ModelReportArm(TypedDict):
    correct: NotRequired[bool]
    median_us: NotRequired[TimeUs | None]
    queued_gpu_us: NotRequired[TimeUs | None]


class ModelReport(TypedDict):
    """report.json of kind "model": what `tune models` reads of each (`reports/models.py`)."""

    kind: str
    model: ModelName
    device: str
    kernels: list[Any]
    pattern: dict[str, Any]
    rule_changes: dict[str, list[Any]]
    recovered: dict[str, Any]
    arms: dict[str, ModelReportArm]
    peers: list[str]
    build_errors: dict[str, Any]
    ratios_by_figure: dict[str, dict[str, dict[str, Any]]]
    phase_wall_s: dict[str, Seconds]


class ModelInput(TypedDict):
    shape: list[int]
    dtype: str


class ModelFile(TypedDict):
    """model.json: the network's spec and its inputs."""

    spec: str
    options: dict[str, Any]
    inputs: list[ModelInput]


class Models(TypedDict):
    """models.json, `tune models`' own file (tuning/models/catalog.py): its models are folder
    names inside it."""

    settings: dict[str, dict[str, Any]]
    models: list[str]
    command: NotRequired[str]
    failures: NotRequired[dict[str, str]]
    wall_s: NotRequired[list[Seconds]]
