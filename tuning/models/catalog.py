"""`tune models`: the built-in list (`baselines/models/catalog.py`), or the models `--models`
names, one ordinary model run folder each (`DIR/<model>/`, readable with `tune report`), and
models.md, models.json and models.png across them (`reports/models.py`).

Every model's CPU work (import, analysis, builds, torch.compile's first compile) runs first, all
models at once in one pool of processes; then each model is timed in turn, with nothing else
running. The same command again finishes an interrupted run: a model whose run is complete is
kept as it is and measures nothing. A model that cannot be run (a package missing on this
machine, a module the exporter refuses) is named in models.md and the others go on.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from baselines.models.catalog import BUILTIN_MODELS, CatalogEntry
from baselines.models.errors import ModelError
from baselines.models.spec import ModelOptions, parse_spec
from tuning.runfolder.lock import hold
from tuning.runfolder.store import Run, RunError, read_json, write_json

from .kernel_times import kernel_times_complete
from .plan import ModelPlan
from .prepare import Preparation
from .study import measure, open_model_run, prepare_all, submit, trials_left

FILE = "models.json"
DECOMPOSE = "+decompose"
GIVEN = "given with --models"


def select_models(text: str | None) -> list[CatalogEntry]:
    """The built-in list, or the models `text` names (comma-separated): a built-in entry by
    its spec or its model name, or any SPEC; `+decompose` after a name decomposes it."""
    if not text:
        return list(BUILTIN_MODELS)
    entries = []
    for name in (n.strip() for n in text.split(",") if n.strip()):
        base, decompose = name.removesuffix(DECOMPOSE), name.endswith(DECOMPOSE)
        builtin = next(
            (
                entry
                for entry in BUILTIN_MODELS
                if base in (entry.spec, entry.spec.partition(":")[2])
                and (entry.options.decompose or not decompose)
            ),
            None,
        )
        spec = builtin.spec if builtin else parse_spec(base).text
        entries.append(builtin or CatalogEntry(spec, ModelOptions(decompose=decompose), GIVEN))
    if not entries:
        raise ModelError(f"--models {text!r} names no model")
    return entries


def folder_name(entry: CatalogEntry) -> str:
    """A model's run folder in the models folder: its name, `-decomposed` where it is."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", parse_spec(entry.spec).name)
    return f"{name}-decomposed" if entry.options.decompose else name


def folder_names(entries: list[CatalogEntry]) -> list[str]:
    """Folder names, one per model: two FILE.py:FUNCTION specs of one FUNCTION name in other
    files (a.py:build, u.py:build) are told apart by their file's name, then by their place."""
    names = [folder_name(e) for e in entries]
    spec_of = [parse_spec(e.spec) for e in entries]
    names = [
        f"{re.sub(r'[^A-Za-z0-9._-]', '_', Path(s.path).stem)}-{n}"
        if names.count(n) > 1 and s.path
        else n
        for n, s in zip(names, spec_of)
    ]
    return [f"{n}-{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def complete(run: Run, plan: ModelPlan) -> bool:
    analysed = (run.path / "analysis.json").exists()
    timed = plan.analyze_only or (kernel_times_complete(run) and not trials_left(run, plan))
    return analysed and timed and (run.path / "report.json").exists()


def model_plans(entries: list[CatalogEntry], shared: dict, command: str) -> dict:
    """Each model's plan, by its folder's name."""
    if len({(e.spec, e.options) for e in entries}) != len(entries):
        raise RunError("--models names one model twice")
    names = folder_names(entries)
    return {
        name: ModelPlan(e.spec, e.options, shows=e.shows, command=f"{command} ({name})", **shared)
        for name, e in zip(names, entries)
    }


def run_models(out: Path, plans: dict, progress) -> dict:
    """Every model's run in `out` (`open_models_folder` first); the summary
    (`reports.models.render_models`)."""
    from reports.model import render_model_run
    from reports.models import render_models

    started = time.monotonic()
    runs = {name: open_model_run(out / name, plan) for name, plan in plans.items()}
    left = {name: run for name, run in runs.items() if not complete(run, plans[name])}
    for name in [name for name in runs if name not in left]:
        progress.line(f"{name}: already measured, kept")
    failures: dict = {}
    with Preparation() as prep:
        for name, run in left.items():
            submit(prep, name, run, plans[name])
        prepared = prepare_all(prep, left, progress, failures) if left else {}
        for number, (name, found) in enumerate(prepared.items(), 1):
            progress.line(f"model {number}/{len(prepared)}: {name}")
            run = runs[name]
            try:
                measure(run, plans[name], found, progress)
            except (ModelError, RuntimeError) as error:  # a failed trial: named, others go on
                failures[name] = str(error).strip().splitlines()[-1][:300]
                continue
            render_model_run(run)
    for name, said in failures.items():
        progress.line(f"{name}: {said}")
    stored = read_json(out / FILE)
    walls = [*stored.get("wall_s", []), time.monotonic() - started]  # one per command
    write_json(out / FILE, {**stored, "failures": failures, "wall_s": walls})
    return render_models(out)


def open_models_folder(out: Path, plans: dict, command: str) -> None:
    """models.json with the settings; a folder holding other settings is refused; one
    `tune models` per folder at a time."""
    settings = {name: plan.settings for name, plan in plans.items()}
    path = out / FILE
    if path.exists() and read_json(path)["settings"] != settings:
        raise RunError(f"{out} holds a tune models run with other settings; choose another --out")
    if out.exists() and not path.exists() and any(out.iterdir()):
        raise RunError(f"{out} exists and is not a tune models folder; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    hold(out)  # one `tune models` per folder at a time
    stored = read_json(path) if path.exists() else {}
    write_json(path, {**stored, "settings": settings, "models": list(plans), "command": command})
