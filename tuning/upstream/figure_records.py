"""What the PR text reads of each figure file `tune upstream` takes (a study's report.json, a
sweep's and `tune models`' summaries, window_bench.json), one type each, checked by
`runfolder.checker` as the run folder's files are (why TypedDicts: `runfolder/records.py`).
Every key is optional: the PR text says what a file lacks; what it has must be of its type."""

from typing import Any, NotRequired, TypedDict

from pool_fusion_tuning.runfolder.records import TimeUs


class RatioWithInterval(TypedDict):
    """A ratio as reports/comparisons.py writes it: `ratio_text` reads these."""

    ratio: float
    low: float
    high: float
    confidence: float


class RatioAlone(TypedDict):
    ratio: float
    low: NotRequired[None]


Ratio = RatioWithInterval | RatioAlone | None
Text = str | int | None
LaunchText = int | list[int] | str | None


class FigureEnvironment(TypedDict):
    gpu: NotRequired[Text]
    tvm: NotRequired[Text]


class FigureArm(TypedDict):
    kernel_us: NotRequired[TimeUs | None]
    queued_gpu_us: NotRequired[TimeUs | None]
    median_us: NotRequired[TimeUs | None]
    q1_us: NotRequired[TimeUs | None]
    q3_us: NotRequired[TimeUs | None]


class FusedKernel(TypedDict):
    arm: NotRequired[Text]
    grid: NotRequired[LaunchText]
    block: NotRequired[LaunchText]


class ReportFigures(TypedDict):
    command: NotRequired[Text]
    device: NotRequired[Text]
    trials: NotRequired[Text]
    environment: NotRequired[FigureEnvironment]
    arms: NotRequired[dict[str, FigureArm]]
    fused_kernel: NotRequired[list[FusedKernel]]
    ratios: NotRequired[dict[str, Ratio]]


class SweepCaseFigures(TypedDict):
    case: NotRequired[Text]
    kernel_us: NotRequired[dict[str, TimeUs | None]]
    end_to_end_us: NotRequired[dict[str, TimeUs | None]]
    fixed_over_on: NotRequired[Ratio]


class SweepFigures(TypedDict):
    command: NotRequired[Text]
    device: NotRequired[Text]
    cases: NotRequired[list[SweepCaseFigures]]
    fixed_slower_than_on: NotRequired[list[Text] | None]


Ms = float | None


class PatternFigures(TypedDict):
    kernels: NotRequired[Text]
    by_list_ms: NotRequired[dict[str, Ms] | None]


class RecoveredFigures(TypedDict):
    ratios: NotRequired[dict[str, Ratio] | None]


class ModelRowFigures(TypedDict):
    model: NotRequired[Text]
    label: NotRequired[Text]
    kernels: NotRequired[Text]
    correct: NotRequired[bool | None]
    pattern: NotRequired[PatternFigures | None]
    gpu_ms: NotRequired[dict[str, Ms] | None]
    call_path_ms: NotRequired[dict[str, Ms] | None]
    recovered: NotRequired[dict[str, RecoveredFigures | None] | None]


class ModelsFigures(TypedDict):
    command: NotRequired[Text]
    device: NotRequired[Text]
    rows: NotRequired[list[ModelRowFigures]]


class BenchEntry(TypedDict):
    rule: str
    grid: LaunchText
    block: LaunchText
    correct: bool
    median_us: NotRequired[TimeUs]
    q1_us: NotRequired[TimeUs]
    q3_us: NotRequired[TimeUs]


class BenchKernel(TypedDict):
    kernel: str
    where: str
    lists: dict[str, BenchEntry]


class BenchFigures(TypedDict):
    environment: NotRequired[FigureEnvironment]
    kernels: NotRequired[list[BenchKernel]]


FIGURE_RECORDS: dict[str, Any] = {
    "report.json": ReportFigures,
    "sweep.json": SweepFigures,
    "models.json": ModelsFigures,
    "window_bench.json": BenchFigures,
}
