"""One model's run, phase by phase, each skipped where the run folder holds its result:

    preparation    import and analysis, a build per rule list, torch.compile's first compile
                   (`prepare.py`, parallel processes; analysis.json, model.json)
    kernel timing  every kernel under every rule list, checked, then timed (kernel_times.json)
    cuBLAS GEMMs   on CUDA with PyTorch: each matmul kernel's GEMM in PyTorch eager, timed
                   alone (`cublas_gemms.py`; cublas_gemms.json)
    tuning         with --tune-top K: the K costliest pattern kernels (with --kernels any,
                   the K costliest kernels; with all, every one that matters) tuned
                   (`tune_top.py`), each saved as it ends, within --time-budget over all
                   commands; the tuned arm built
    trials         the study's harness: every TVM arm and the PyTorch peers, checked against
                   PyTorch eager, timed in interleaved Williams-ordered blocks, each trial a
                   fresh process (trials/)
    report         report.md, .json, .csv and .png (`reports/model_report.py`), renderable
                   again with `tune report DIR` without TVM

The same command again (same --out) finishes an interrupted run without re-measuring; a run
folder made with other settings is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

from pool_fusion_tuning.baselines.models.failures import failure_lines
from pool_fusion_tuning.baselines.models.model_errors import ModelError
from pool_fusion_tuning.baselines.peers import compiling
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.reports.model_tuned import none_taken
from pool_fusion_tuning.runfolder.model_records import Analysis, ModelReport
from pool_fusion_tuning.runfolder.names import member
from pool_fusion_tuning.runfolder.opener import open_run
from pool_fusion_tuning.runfolder.store import RUN_FILE, Run, RunError, read_record
from pool_fusion_tuning.tuning.measure.harness import TrialJob
from pool_fusion_tuning.tuning.measure.trial_process import run_trial_process

from .cublas_gemms import cublas_gemms_left, time_cublas_gemms
from .kernel_times import kernel_times_complete, time_kernels
from .model_plan import ModelPlan, settings_difference
from .prepare import Preparation, Prepared
from .reopen import comparable, reopen_tuning, widens


def run_model(run: Run, plan: ModelPlan, progress) -> ModelReport:
    """`tune model`: the model's run (`open_model_run`), started or finished; its report."""
    from pool_fusion_tuning.reports.model_report import render_model_run

    with Preparation() as prep:
        submit(prep, "model", run, plan)
        prepared = prepare_all(prep, {"model": run}, progress)["model"]
        measure(run, plan, prepared, progress)
    return render_model_run(run)


def prepare_all(
    prep: Preparation, runs: dict[str, Run], progress, failures: dict | None = None
) -> dict[str, Prepared]:
    """Wait for every model's preparation (a bar over the tasks), recording each in its run
    folder as soon as its tasks end (an interrupted `tune models` keeps what is done); by key, in
    the order of `runs`. A model that cannot be imported raises its ModelError, or with
    `failures` is left out and its one line kept there (`prepare_failure`)."""
    progress.start("preparation")
    prepared = {}

    def step(done: int, total: int, ended: list[str]) -> None:
        progress.step("preparation", done, total)
        for key in ended:
            run = runs[key]
            try:
                prepared[key] = prep.wait(key, run)
                analysis = read_record(run.path / "analysis.json", Analysis)
                for line in failure_lines(dict(analysis)):
                    progress.line(line if len(runs) == 1 else f"{key}: {line}")
            except Exception as error:
                if failures is None:
                    raise
                failures[key] = prepare_failure(run, error)

    tasks = prep.wait_all(step)
    progress.finish("preparation", f"{tasks} tasks for {len(runs)} model(s)")
    return {key: prepared[key] for key in runs if key in prepared}


def prepare_failure(run: Run, error: Exception) -> str:
    """One line for a model whose preparation failed. A failure before its analysis for a reason
    of the model and libraries (an exporter's refusal, an operator Relax lacks, a TVM error) is
    kept in its run folder, so the same command does not try it again; a missing package, a dead
    process or a failure after the analysis is tried again."""
    from concurrent.futures.process import BrokenProcessPool

    from pool_fusion_tuning.baselines.models.model_errors import MissingPackage

    if isinstance(error, BrokenProcessPool):
        return "its preparation's process ended (out of memory or a crash); tried again next time"
    said = (
        _said(error) if isinstance(error, ModelError) else f"{type(error).__name__}: {_said(error)}"
    )
    if (run.path / "analysis.json").exists():
        return f"its preparation failed after its analysis: {said}"[:300]
    if not isinstance(error, ModelError):
        said = f"cannot import or analyse {run.model_meta['settings']['model']['spec']}: {said}"
    if not isinstance(error, MissingPackage):
        run.update_meta(failure=said[:300])
    return said[:300]


def _said(error: Exception) -> str:
    """The error in one line: its first, or its last where the first opens a traceback (TVM's
    errors may carry one in the message)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


def open_model_run(out: Path, plan: ModelPlan, say) -> Run:
    """The model's run folder: created, or opened to finish when it holds this model's run
    with the same settings (its tuning reopened where this command gives it more time, a larger
    --budget or more --kernels classes: `reopen`)."""
    from pool_fusion_tuning.tuning.study import save_environment

    # An analysis alone runs on the host, whatever it analyses for.
    target = TargetSpec("llvm") if plan.analyze_only else plan.target

    def refuse(stored: dict) -> str | None:
        settings = comparable(stored["settings"])
        if settings == plan.settings or widens(settings, plan.settings):
            return None
        differs = settings_difference(settings, plan.settings)
        return (
            f"{out} holds a run of {plan.spec} with other settings ({differs}); give the "
            "options it was started with to finish it, or choose another --out"
        )

    run = open_run(out, plan.meta(), refuse)
    if not (out / "environment.json").exists():
        save_environment(run, target)
    reopen_tuning(run, plan, say)
    return run


def trials_left(run: Run, plan: ModelPlan) -> list[int]:
    if plan.analyze_only:
        return []
    return [i for i in range(plan.protocol.trials) if not run.trial_path(i).exists()]


def submit(prep: Preparation, key: str, run: Run, plan: ModelPlan) -> None:
    """The model's preparation left to do: the analysis where missing or kernels are left to
    time, tune or set beside cuBLAS, the builds where anything is left to time, the compile
    warm-up where a torch.compile trial on a GPU is left."""
    timing_left = not plan.analyze_only and not kernel_times_complete(run)
    left = trials_left(run, plan)
    # the kernels come from the analysis' process
    kernels = timing_left or tuning_left(run, plan) or cublas_gemms_left(run, plan)
    analysis = kernels or not (run.path / "analysis.json").exists()
    builds = plan.arms() if timing_left or left else []
    warm = bool(left) and bool(compiling(plan.peers)) and plan.target.is_cuda
    prep.submit(key, plan, analysis, builds, warm)


def measure(run: Run, plan: ModelPlan, prepared: Prepared, progress) -> None:
    """Every phase after the preparation, each where it is left to do."""
    if plan.analyze_only:
        return
    built = [arm for arm in plan.arms() if arm.name not in prepared.build_errors]
    for name, error in prepared.build_errors.items():
        progress.line(f"`{name}` cannot be built, not timed: {error}")
    stored = run.model_meta.get("build_errors", {})
    run.update_meta(build_errors={**stored, **prepared.build_errors})
    if not kernel_times_complete(run):
        _kernel_times(run, plan, prepared, built, progress)
    if cublas_gemms_left(run, plan):
        time_cublas_gemms(run, prepared.kernels_file, progress)
    arms = built + _tuned_arm(run, plan, prepared, progress)
    run.update_meta(
        arms=[a.describe() for a in arms] + [{"name": p, "peer": True} for p in plan.peers]
    )
    _trials(run, plan, arms, prepared, progress)


def tuning_left(run: Run, plan: ModelPlan) -> bool:
    return bool(plan.tune_top) and "tuned" not in run.model_meta


def _tuned_arm(run: Run, plan: ModelPlan, prepared: Prepared, progress) -> list:
    """With --tune-top: the costliest kernels tuned (`tune_top.py`), then, where
    trials are left, the tuned arm built; [] without it, or where nothing valid was found."""
    from .prepare import build_alone
    from .tune_top import tune_top

    if not plan.tune_top:
        return []
    if tuning_left(run, plan):
        if prepared.kernels_file is None:
            raise RunError(f"{run.path}: the model's kernels were not prepared")
        progress.start("tuning")
        tune_top(run, plan, prepared.kernels_file, progress)
        found = run.model_meta["tuned"]
        count = len(found["kernels"])  # the model may have fewer than --tune-top
        left = len(found["kernels_left"])
        said = f"{count} kernel(s)" + (f", {left} left by the time budget" if left else "")
        if not found["kernels_chosen"]:
            said = f"none: {none_taken(plan.kernels)}"
        progress.finish("tuning", said)  # its wall time is added by tune_top, kernel by kernel
    else:
        _say_tuning_done(run, plan, progress)
    file = run.model_meta["tuned"]["file"]
    if file is None:
        return []
    tuned = member(run.path, file, run.path / RUN_FILE)  # a name in the run folder, not a path
    (arm,) = plan.arms(str(tuned))[len(plan.rule_lists) :]
    if not trials_left(run, plan):
        return [arm]
    progress.start("tuned build")
    error = build_alone(plan, arm, prepared.library_dir)
    run.add_wall("tuned build", progress.finish("tuned build", error or arm.name))
    if error:
        run.update_meta(build_errors={**run.model_meta.get("build_errors", {}), arm.name: error})
        return []
    return [arm]


def _say_tuning_done(run: Run, plan: ModelPlan, progress) -> None:
    """A finished tuning that this command's time budget does not reopen (`reopen.reopen_tuning`):
    where it gives another, smaller, one and kernels were left, say so rather than ignore it."""
    found = run.model_meta["tuned"]
    left = found["kernels_left"]
    if left and plan.time_budget_s != found["time_budget_s"]:
        progress.line(
            f"the tuning is done, {len(left)} kernel(s) left by its time budget "
            f"({found['time_budget_s']:g} s); a larger --time-budget tunes them"
        )


def _kernel_times(run: Run, plan: ModelPlan, prepared: Prepared, built: list, progress) -> None:
    if prepared.kernels_file is None:
        raise RunError(f"{run.path}: the model's kernels were not prepared")
    progress.start("kernel timing")
    libraries = {a.rules: str(Path(prepared.library_dir) / f"{a.name}.so") for a in built}
    analysis = read_record(run.path / "analysis.json", Analysis)
    found = time_kernels(
        run,
        libraries,
        prepared.kernels_file,
        changed_kernels(dict(analysis), list(libraries)),
        plan.options.dtype,
        plan.target.kind,
        progress,
    )
    timed = sum(all(o["status"] == "ok" for o in per.values()) for per in found["kernels"].values())
    summary = f"{timed} of {len(found['kernels'])} kernels checked and timed under every list"
    run.add_wall("kernel timing", progress.finish("kernel timing", summary))


def changed_kernels(analysis: dict, lists: list[str]) -> set:
    """The kernels the rule lists `lists` schedule differently (by rule or by launch)."""
    changed = set()
    for kernel in analysis["kernels"]:
        rules = {str(kernel["rules"].get(name)) for name in lists}
        launches = {str(kernel["launches"].get(name)) for name in lists}
        if len(rules) > 1 or len(launches) > 1:
            changed.add(kernel["name"])
    return changed


def _trials(run: Run, plan: ModelPlan, arms: list, prepared: Prepared, progress) -> None:
    protocol, peers = plan.protocol, tuple(plan.peers)
    left = trials_left(run, plan)
    if not left:
        return
    progress.start("trials")
    for index in left:

        def step(done: int, blocks: int, index=index) -> None:
            progress.step(
                "trials",
                index * blocks + done,
                protocol.trials * blocks,
                f"trial {index + 1}/{protocol.trials}",
            )

        job = TrialJob(
            plan.workload,
            arms,
            plan.target,
            protocol,
            index,
            peers=peers,
            library_dir=prepared.library_dir,
            profile=True,
        )
        record = run_trial_process(job, progress.say, step)
        run.save_trial(record)
    summary = f"{len(arms) + len(peers)} arms, {len(left)} timing processes"
    run.add_wall("trials", progress.finish("trials", summary))
