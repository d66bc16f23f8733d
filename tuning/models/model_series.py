"""`tune models`: the built-in list (`baselines/models/catalog.py`), the models `--models` names, or
every model of a zoo (`--zoo`), one ordinary model run folder each (`DIR/<model>/`), and models.md,
.json and .png across them (`reports/models_report.py`); for a zoo, census.md too.

Every model's CPU work (import, analysis, builds, first compile) runs first, all models at once in
one process pool, each recorded as it ends; then each model is timed in turn, alone. The same
command finishes an interrupted run, a complete model measuring nothing. A model that cannot run is
named in models.md in one line and the others go on; a failure of the model's own (not a missing
package or dead process) is kept in its folder and not tried again.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from pool_fusion_tuning.baselines.models.catalog import BUILTIN_MODELS, CatalogEntry
from pool_fusion_tuning.baselines.models.model_errors import ModelError
from pool_fusion_tuning.baselines.models.model_spec import ModelOptions, parse_spec
from pool_fusion_tuning.baselines.models.zoo import Zoo, pick
from pool_fusion_tuning.runfolder.lock import hold
from pool_fusion_tuning.runfolder.model_records import Models
from pool_fusion_tuning.runfolder.store import Run, RunError, read_record, write_json

from .kernel_times import kernel_times_complete
from .model_plan import ModelPlan
from .model_run import measure, open_model_run, prepare_all, submit, trials_left
from .prepare import Preparation

FILE = "models.json"
DECOMPOSE = "+decompose"
GIVEN = "given with --models"


def select_models(text: str | None) -> list[CatalogEntry]:
    """The built-in list, or the models `text` names (comma-separated): a built-in entry by spec
    or model name, or any SPEC; `+decompose` after a name decomposes it."""
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
    """Folder names, one per model: two FILE.py:FUNCTION specs of one FUNCTION name are told
    apart by their file's name, then by their place."""
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
    """Whether the model's run has nothing left to do: analysed and timed, or failed in a way
    kept in its folder (`study.prepare_failure`)."""
    analysed = (run.path / "analysis.json").exists()
    timed = plan.analyze_only or (kernel_times_complete(run) and not trials_left(run, plan))
    return "failure" in run.model_meta or (analysed and timed)


def zoo_models(zoo: Zoo, decompose: bool = False) -> list[CatalogEntry]:
    """Every model of a zoo (`baselines/models/zoo.py`) as an entry, at its own input size;
    `decompose`: each with DecomposeOpsForInference after its import."""
    options, by = ModelOptions(decompose=decompose), f"listed by {zoo.listed_by}"
    return [CatalogEntry(zoo.spec(name), options, by) for name in zoo.names]


def filter_models(entries: list[CatalogEntry], only: list[str], skip: list[str]) -> list:
    """The entries whose model name `--only` and `--skip` keep (`zoo.pick`), in order."""
    names = [parse_spec(e.spec).name for e in entries]
    kept = set(pick(names, only, skip))
    return [entry for entry, name in zip(entries, names) if name in kept]


def model_plans(entries: list[CatalogEntry], shared: dict, command: str) -> dict:
    """Each model's plan, by its folder's name."""
    if len({(e.spec, e.options) for e in entries}) != len(entries):
        raise RunError("--models names one model twice")
    names = folder_names(entries)
    return {
        name: ModelPlan(e.spec, e.options, shows=e.shows, command=f"{command} ({name})", **shared)
        for name, e in zip(names, entries)
    }


def run_models(out: Path, plans: dict, progress, jobs: int | None = None) -> dict:
    """Every model's run in `out` (`open_models_folder` first); the summary. `jobs`: the
    preparation's processes (default: one per core)."""
    from pool_fusion_tuning.reports.model_report import render_model_run
    from pool_fusion_tuning.reports.models_report import render_models

    started = time.monotonic()
    runs = {name: open_model_run(out / name, plan, progress.line) for name, plan in plans.items()}
    left = {name: run for name, run in runs.items() if not complete(run, plans[name])}
    failures: dict = {}
    for name in [name for name in runs if name not in left]:
        run = runs[name]
        meta = run.model_meta
        if "failure" in meta:  # kept from an earlier command: not tried again
            failures[name] = meta["failure"]
            progress.line(f"{name}: failed before, kept (remove {run.path} to try again)")
            continue
        if not (run.path / "report.json").exists():  # measured, interrupted before its report
            render_model_run(run)
        progress.line(f"{name}: already measured, kept")
    with Preparation(jobs) as prep:
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
    stored = read_record(out / FILE, Models)
    walls = [*stored.get("wall_s", []), time.monotonic() - started]  # one per command
    write_json(out / FILE, {**stored, "failures": failures, "wall_s": walls})
    return render_models(out)


def open_models_folder(out: Path, plans: dict, command: str, zoo: dict | None = None) -> None:
    """models.json with the settings (and the zoo, for a census); a folder holding a model with
    other settings, or another zoo's census, is refused; one `tune models` per folder at a time.
    Another choice of models (--only, --skip) goes on in the same folder."""
    settings = {name: plan.settings for name, plan in plans.items()}
    path = out / FILE
    stored = read_record(path, Models) if path.exists() else None
    if stored is not None:
        before = stored["settings"]
        if any(before.get(name, found) != found for name, found in settings.items()):
            raise RunError(
                f"{out} holds a tune models run with other settings; choose another --out"
            )
        if (stored.get("zoo") or {}).get("source") != (zoo or {}).get("source"):
            raise RunError(f"{out} holds a tune models run of other models; choose another --out")
        settings = {**before, **settings}
    if out.exists() and stored is None and any(out.iterdir()):
        raise RunError(f"{out} exists and is not a tune models folder; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    hold(out)  # one `tune models` per folder at a time
    found = {"settings": settings, "models": list(plans), "command": command}
    write_json(path, {**(stored or {}), **found, **({"zoo": zoo} if zoo else {})})
