"""The shape of each file of a run folder, checked as it is read.

A file that is valid JSON of the wrong shape (a list where a record goes, a key missing, text
where a number goes) is said in one line naming the file, as a garbled one is, instead of a
traceback far from it. A shape holds what the commands read without a default; a key marked
`?` may be absent (older runs lack it) and is checked for its type where present. Other keys
are left alone. A number that defines the run, or a time it measured, is checked for its range
too (`ranges.py`): a value the command line refuses is as damaged as text where a number goes.
"""

from __future__ import annotations

import re
from pathlib import Path

from baselines.case import Case, CaseError

from .matching import NUMBER, NUMBER_OR_NONE, Each, Within, mismatch
from .ranges import RANGES, STORED_RANGES, TIME_US, WALL_S


def option(name: str, kind=int) -> Within:
    """The range of a run-defining option, as the command line checks it (`ranges.py`)."""
    return Within(kind, *{**RANGES, **STORED_RANGES}[name])


TIME = Within(NUMBER, *TIME_US)
TIME_OR_NONE = (TIME, None)
SECONDS = Within(NUMBER, *WALL_S)
COUNT = Within(int, 0, 2**53)
PROTOCOL = {
    "repeat": option("repeat"),
    "number?": option("number"),
    "trials?": option("trials"),
    "min_repeat_ms?": option("min_repeat_ms", NUMBER),
    "warmup_s?": option("warmup_s", NUMBER),
    "blocks?": (option("blocks"), None),
    "checks?": option("checks"),
    "warmup_calls?": option("warmup_calls"),
    "queued_calls?": option("queued_calls"),
}
RUN = {
    "format?": int,
    "identity": {"case": dict, "target": str, "device": str},
    "case": Each((int, bool)),
    "target_spec": {"kind": str, "arch?": str},
    "protocol": PROTOCOL,
    "tuners": [str],
    "budget": option("budget"),
    "options": {
        "seed?": option("seed"),
        "workers?": option("workers"),
        "sampler?": str,
        "exhaustive?": (bool, None),
        "storage?": (str, None),
    },
    "arms": [{"name": str, "peer?": bool, "whole_graph?": bool, "rule_before?": str}],
    "arm_names?": [str],
    "command?": str,
    "wall_s?": SECONDS,
    "phase_wall_s?": Each(SECONDS),
    "tuner_failures?": Each(str),
    "peers_added?": [str],
    "peers_not_measured?": dict,
    "fused_kernel_rules?": Each((Each(str), None)),
}
TRIAL = {
    "trial": Within(int, 0, RANGES["trials"][1] - 1),
    "checks": Each({"correct": bool, "max_abs_err?": NUMBER_OR_NONE}),
    "design?": {"blocks": option("blocks")},
    "block_orders?": [[str]],
    "block_samples_us?": Each(Each([[TIME]])),
    "samples_us?": Each([TIME]),
    "queued_gpu_us?": Each([TIME]),
    "gpu_queued_reasons?": Each(str),
    "kernels?": Each([{"name": str}]),
    "cuda_graph_launches?": dict,
    # Each arm's kernel sum and captured call (`measure/profiled.py`), on a GPU.
    "profiled?": Each(
        {
            "kernel_sum_us?": TIME,
            "kernels_per_call?": NUMBER,
            "kernels_us?": Each(NUMBER),
            "captured_us?": TIME,
            "captured_reason?": str,
            "profile_reason?": str,
        }
    ),
    # Where the trial's time went (`harness.run_trial`); the report reads these.
    "wall_s?": {
        "startup_s?": SECONDS,
        "compiler_import_s?": SECONDS,
        "waited_s?": SECONDS,
        "load_s?": Each(SECONDS),
        "peer_s?": Each(SECONDS),
        "check_s?": SECONDS,
        "warmup_s?": SECONDS,
        "timing_s?": SECONDS,
        "timing_by_arm_s?": Each(SECONDS),
        "profile_s?": SECONDS,
    },
}
TUNER_RUN = {
    "trials": COUNT,
    "valid": COUNT,
    "failed_by_reason": Each(COUNT),
    "wall_s?": SECONDS,
    "best_kernel_us?": TIME_OR_NONE,
    "best_trial?": (COUNT, None),
    "timer?": (str, None),
    "default_kernel_us?": TIME_OR_NONE,
    "fixed_kernel_us?": TIME_OR_NONE,
    "serial_kernel_us?": TIME_OR_NONE,
    "exhaustive_best_kernel_us?": TIME_OR_NONE,
    "exhaustive_points?": COUNT,
    "time_spent?": Each(SECONDS),
}
SUMMARY = {
    **TUNER_RUN,
    "importances?": (Each(Within(NUMBER, 0, 1)), None),  # plotted (reports/plots.py)
    "source?": str,
    "runs?": Each(TUNER_RUN),
    "kernel_times?": Each(str),
    "held_against?": str,
}
MEASUREMENT = {"status": str, "kernel_us?": TIME_OR_NONE, "timer?": (str, None)}
# A sweep's own file: written with its marker (`kind`) since 2026-12; a sweep.json made before
# has no marker and is known by its settings.
SWEEP_KIND = "tune sweep"
SWEEP_SETTINGS = {
    "cases": [str],
    "definitions": Each(dict),
    "target": str,
    "device": str,
    "budget": option("budget"),
    "protocol": dict,
}
SWEEP = {
    "kind?": str,
    "settings": SWEEP_SETTINGS,
    "command?": str,
    "tuners?": Each(str),  # tuner -> the rule-made arm its arm is held against
    "large_reductions?": Each({"default": Each(str), "fixed": Each(str), "unchanged": bool}),
}
# What a sweep reads of each Case's report.json (`reports/sweep.py`).
REPORT = {
    "case": dict,
    "device": str,
    "arms": Each(
        {
            "correct?": bool,
            "max_abs_err?": NUMBER_OR_NONE,
            "median_us?": TIME_OR_NONE,
            "queued_gpu_us?": TIME_OR_NONE,
        }
    ),
    "tuners": Each(dict),
    "ratios": Each({"ratio?": NUMBER, "low?": NUMBER_OR_NONE, "high?": NUMBER_OR_NONE}),
    "tuner_failures?": Each(str),
    "fused_kernel?": [dict],
}
# A real network's run (`tune model`, tuning/models/plan.py): run.json of kind "model".
MODEL_RUN = {
    "format?": int,
    "kind": str,
    "identity": {"model": {"spec": str, "options": dict}, "target": str, "device": str},
    "settings": {
        "model": {"spec": str, "options": dict},
        "target_spec": {"kind": str, "arch?": str},
        "protocol": PROTOCOL,
        "rule_lists": [str],
        "peers": [str],
        "tune_top": (COUNT, str),  # a count, or "all"
        "budget": option("budget"),
        "analyze_only": bool,
        "arch": str,
        "kernels?": str,  # --kernels of --tune-top, where not the default
        "time_budget_s?": option("time_budget", NUMBER),
    },
    "shows?": (str, None),
    "command?": str,
    "wall_s?": SECONDS,
    "phase_wall_s?": Each(SECONDS),
    "arms?": [{"name": str, "peer?": bool}],
    "tuned?": dict,
    "tuning?": {"chosen": [str], "commands": COUNT},  # --tune-top's kernels, commands so far
}
# One kernel of a model's --tune-top, tuned (`tuning/models/tune_top.py`), in
# tuners/<kernel>/result.json: written as it finishes, so that a resume does not tune it again.
TUNED_KERNEL = {
    "kernel": str,
    "kind": str,
    "calls": COUNT,
    "default_us": TIME_OR_NONE,
    "fixed_us": TIME_OR_NONE,
    "best": (str, None),
    "kernel_us": TIME_OR_NONE,
    "used": (str, None),
    "budget": option("budget"),
    "wall_s": SECONDS,
}
LAUNCH = ({"grid": int, "block": int}, None)
ANALYSIS = {
    "target": dict,
    "criterion": str,
    "kernels": [
        {
            "name": str,
            "window": (int, None),
            "outputs": (int, None),
            "calls": COUNT,
            "rules": Each((str, None)),
            "launches": Each(LAUNCH),
            "cross_thread": Each(bool),
            "pattern": bool,
            "failures?": Each({"rule": str, "message": str, "upstream": (str, None)}),
        }
    ],
}
KERNEL_TIMES = {"kernels": Each(Each(MEASUREMENT))}
# What `tune models` reads of each model's report.json (`reports/models.py`).
MODEL_REPORT = {
    "kind": str,
    "model": {"spec": str, "options": dict},
    "device": str,
    "kernels": list,
    "pattern": dict,
    "rule_changes": Each(list),
    "recovered": dict,
    "arms": Each(
        {
            "correct?": bool,
            "median_us?": TIME_OR_NONE,
            "queued_gpu_us?": TIME_OR_NONE,
        }
    ),
    "peers": [str],
    "build_errors": dict,
    "ratios_by_figure": Each(Each(dict)),
    "phase_wall_s": Each(SECONDS),
}
MODEL = {"spec": str, "options": dict, "inputs": [{"shape": [int], "dtype": str}]}
# `tune models`' own file (`tuning/models/catalog.py`): its models are folder names inside it.
MODELS = {
    "settings": Each(dict),
    "models": [str],
    "command?": str,
    "failures?": Each(str),
    "wall_s?": [SECONDS],
}


def file_problem(path: Path, data) -> str | None:
    """What is wrong with the data of the run folder's file at `path`, if anything."""
    shape = shape_of(path)
    if shape is REPORT and isinstance(data, dict) and data.get("kind") == "model":
        shape = MODEL_REPORT
    return None if shape is None else mismatch(data, shape)


def run_problem(meta: dict) -> str | None:
    """What is wrong with a run file's data, if anything (its whole shape, and its Case; a
    model run's own shape)."""
    if meta.get("kind") == "model":
        return mismatch(meta, MODEL_RUN)
    found = mismatch(meta, RUN)
    if found:
        return found
    try:
        Case.from_fields(meta["case"])
    except CaseError as error:
        return f"case: {error}"
    return None


def shape_of(path: Path) -> object | None:
    """The shape of the run folder's file at `path`; None for a file it does not know."""
    path = Path(path)
    in_tuner = path.parent.parent.name == "tuners"
    if path.name == "run.json":
        return dict  # the whole shape is checked where a run is opened (`Run.open`)
    if path.name == "environment.json":
        return dict
    if path.name == "sweep.json":
        return SWEEP
    if path.name == "report.json":
        return REPORT
    if path.name == "kernels.json":
        return Each(MEASUREMENT)
    if path.name == "analysis.json":
        return ANALYSIS
    if path.name == "kernel_times.json":
        return KERNEL_TIMES
    if path.name == "model.json":
        return MODEL
    if path.name == "models.json":
        return MODELS
    if path.parent.name == "trials" and re.fullmatch(r"trial_\d+\.json", path.name):
        return TRIAL
    if in_tuner and path.name == "result.json":
        return TUNED_KERNEL
    if in_tuner and path.name == "summary.json":
        return SUMMARY
    if in_tuner and path.name == "trials.json":
        return [MEASUREMENT]
    if in_tuner and path.name.endswith("_kernel.json"):
        return MEASUREMENT
    if in_tuner and path.name == "exhaustive.json":
        return Each(TIME_OR_NONE)
    return None
