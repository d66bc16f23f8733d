"""report.json, a run's report (`reports/report_data.py`, `reports/model_report.py` for a
model's run), one type each, as `records.py` holds the measured files (why TypedDicts: its
docstring).

A report is derived data, rendered again from the measurements; its type says every key a
renderer reads, each figure of an arm, and the ratios with their interval. What a renderer only
passes along (a protocol, an environment, the design of the blocks) is an object of any keys.
"""

from typing import Any, NotRequired, TypedDict

from .records import ProtocolRecord, Seconds, TimeUs, TunerSummary


class ReportArm(TypedDict):
    """One arm across the trials (`summary.arm_summary`): the call-path figure's summary
    under the keys earlier reports gave, every figure's under `figures`."""

    correct: NotRequired[bool]
    max_abs_err: NotRequired[float | None]
    kernels: NotRequired[list[dict[str, Any]]]
    figures: NotRequired[dict[str, dict[str, Any]]]
    queued_gpu_us: NotRequired[TimeUs | None]
    median_us: NotRequired[TimeUs | None]
    trial_medians_us: NotRequired[list[float]]
    iqr_us: NotRequired[float]
    q1_us: NotRequired[float]
    q3_us: NotRequired[float]
    cv: NotRequired[float]
    samples: NotRequired[int]
    ratio_to_on: NotRequired[float | None]
    ratio_to_best: NotRequired[float | None]
    kernel_us: NotRequired[float | None]
    whole_graph: NotRequired[bool]


class Ratio(TypedDict):
    """A paired ratio with its interval (`reports/stats/paired.py`)."""

    ratio: NotRequired[float]
    low: NotRequired[float | None]
    high: NotRequired[float | None]
    confidence: NotRequired[float]
    unit: NotRequired[str]
    units: NotRequired[int]
    method: NotRequired[str]
    per_trial: NotRequired[list[float]]
    half_width: NotRequired[float | None]
    distinguishable: NotRequired[bool]
    noise_band: NotRequired[float]  # a CPU run's between-run noise (`stats/cpu_noise.py`)


class Report(TypedDict):
    """report.json of a study (`summary.summarize_run`); a sweep reads each Case's."""

    command: NotRequired[str | None]
    case: dict[str, Any]
    target: NotRequired[str]
    device: str
    protocol: NotRequired[ProtocolRecord]
    environment: NotRequired[dict[str, Any]]
    trials: NotRequired[int]
    arms: dict[str, ReportArm]
    figures: NotRequired[dict[str, str]]
    tuners: dict[str, TunerSummary]
    ratios: dict[str, Ratio]
    ratios_by_figure: NotRequired[dict[str, dict[str, Ratio]]]
    ratio_method: NotRequired[dict[str, Any]]
    design: NotRequired[list[dict[str, Any]]]
    peers_not_measured: NotRequired[dict[str, Any]]
    peers_added: NotRequired[list[str]]
    budget: NotRequired[int | None]
    workers: NotRequired[int]
    wall_s: NotRequired[Seconds | None]
    phase_wall_s: NotRequired[dict[str, Seconds]]
    tuner_failures: NotRequired[dict[str, str]]
    cuda_graph_launches: NotRequired[dict[str, Any]]
    fixed_rule_before: NotRequired[str]  # runs before 2026-12-01
    masked_arms: NotRequired[list[str]]
    best_arm: NotRequired[str]
    fused_kernel_bytes: NotRequired[int]
    whole_kernel_bytes: NotRequired[int]
    fused_kernel: NotRequired[list[dict[str, Any]]]
    trial_wall_s: NotRequired[list[dict[str, Any]]]
