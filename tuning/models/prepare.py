"""The CPU work of model runs before anything is timed, in parallel processes of one pool.

Per model: import and per-kernel analysis (one process); one build per rule list (a process each: a
CUDA build of inception_v3 takes about 25 s on one core); and on a GPU, torch.compile's first
compile (its disk caches serve the trial processes). `tune models` submits every model's work at
once and times nothing until all is done, so no timing shares the machine with a build. Each task
reports its wall time; libraries go to this process's temporary folder, never loaded from a run
folder, which may come from elsewhere.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from pool_fusion_tuning.baselines.peers import compiling
from pool_fusion_tuning.runfolder.store import Run, write_json
from pool_fusion_tuning.tuning.base.children import kill_pool, process_pool

from .model_plan import ModelPlan

ANALYSIS = "analysis"
COMPILE = "torch.compile warm-up"


def _analysis_task(plan: ModelPlan, kernels_file: str) -> dict:
    """Import the model and analyse its kernels for CUDA (`plan.arch`) under each rule list; keep
    the run target's unscheduled kernels in `kernels_file`, unless the run is an analysis alone."""
    from pool_fusion_tuning.baselines.models.analysis import analyze_lowered
    from pool_fusion_tuning.baselines.models.importer import prepare_model
    from pool_fusion_tuning.baselines.models.kernels import prim_funcs, rule_lists
    from pool_fusion_tuning.baselines.pipeline import make_target, unscheduled

    started = time.monotonic()
    model = prepare_model(plan.spec, plan.options)
    imported = time.monotonic()
    cuda = make_target("cuda", plan.arch)
    lowered = unscheduled(model.mod, cuda)
    analysis = analyze_lowered(lowered, cuda, rule_lists(cuda, plan.rule_lists))
    if not plan.analyze_only:  # the kernels timed or tuned later; an analysis alone needs none
        if not plan.target.is_cuda:
            lowered = unscheduled(model.mod, plan.target.tvm())
        Path(kernels_file).write_bytes(pickle.dumps(prim_funcs(lowered)))
    ended = time.monotonic()
    return {
        "model": model.to_dict(),
        "analysis": analysis.to_dict(),
        "wall_s": {"import": imported - started, ANALYSIS: ended - imported},
        "began": started,
        "ended": ended,
    }


def _build_task(plan: ModelPlan, arm, library: str) -> dict:
    began = time.monotonic()
    try:
        _, found = plan.workload.build(arm, plan.target.tvm(), None, Path(library), False)
    except Exception as error:  # TVM's errors may not pickle: the parent gets their text
        error_text = f"{type(error).__name__}: {_last_line(error)}"
        return {"error": error_text, "began": began, "ended": time.monotonic()}
    return {**found, "began": began, "ended": time.monotonic()}


def _last_line(error: Exception) -> str:
    """Where TVM says what went wrong: the last line of its message."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return (lines or [type(error).__name__])[-1][:300]


def _compile_task(plan: ModelPlan) -> dict:
    """torch.compile's first compile of the model (for each compiling peer), its caches left
    on disk."""
    started = time.monotonic()
    for name in compiling(plan.peers):
        plan.workload.peer(name, plan.target.kind)
    ended = time.monotonic()
    return {"compile_s": ended - started, "began": started, "ended": ended}


def build_alone(plan: ModelPlan, arm, library_dir: str) -> str | None:
    """One arm built in a fresh process into `library_dir` (the tuned arm, once its kernels
    are tuned); its error's text, or None."""
    pool = process_pool(1)
    try:
        found = pool.submit(_build_task, plan, arm, str(Path(library_dir) / f"{arm.name}.so"))
        result = found.result()
    except BaseException:
        kill_pool(pool)
        raise
    pool.shutdown()
    return result.get("error")


@dataclass
class Prepared:
    """One model's prepared work: its libraries' folder, its kernels, what failed to build."""

    library_dir: str
    kernels_file: str | None = None
    build_errors: dict = field(default_factory=dict)


class Preparation:
    """One pool for every model's preparation: `submit` queues a model's tasks, `start` hands
    them out longest first (compiles, builds, analyses), `wait(key, ...)` records a model's
    results once its tasks have ended."""

    ORDER = (COMPILE, "build", ANALYSIS)

    def __init__(self, workers: int | None = None):
        self.workers = workers or os.cpu_count() or 1
        self.folder = tempfile.TemporaryDirectory(prefix="tune-model-")
        self._pool: ProcessPoolExecutor | None = None
        self._queued: list = []  # (key, task name, function, arguments)
        self._tasks: dict[str, dict[str, Future]] = {}

    def submit(self, key: str, plan: ModelPlan, analysis: bool, builds: list, warm: bool) -> None:
        """Queue a model's tasks: the analysis if `analysis`, the builds of `builds` (its TVM
        arms), torch.compile's warm-up if `warm`."""
        folder = Path(self.folder.name) / key
        folder.mkdir(parents=True, exist_ok=True)
        self._tasks.setdefault(key, {})
        if analysis:
            self._queued.append(
                (key, ANALYSIS, _analysis_task, (plan, str(folder / "kernels.pkl")))
            )
        for arm in builds:
            library = str(folder / f"{arm.name}.so")
            self._queued.append((key, f"build {arm.name}", _build_task, (plan, arm, library)))
        if warm:
            self._queued.append((key, COMPILE, _compile_task, (plan,)))

    def start(self) -> None:
        def rank(task) -> int:
            return next(i for i, kind in enumerate(self.ORDER) if task[1].startswith(kind))

        if not self._queued:
            return
        if self._pool is None:
            self._pool = process_pool(self.workers)
        for key, name, function, arguments in sorted(self._queued, key=rank):
            self._tasks[key][name] = self._pool.submit(function, *arguments)
        self._queued = []

    def library_dir(self, key: str) -> str:
        return str(Path(self.folder.name) / key)

    def wait(self, key: str, run: Run) -> Prepared:
        """Wait for the model's tasks; write model.json, analysis.json and the tasks' wall times
        into its run folder. A model that cannot be imported raises its ModelError."""
        self.start()
        tasks = self._tasks.pop(key, {})
        wait(tasks.values())
        prepared = Prepared(self.library_dir(key))
        walls, began, ended = {}, [], []
        for name, future in tasks.items():
            result = future.result()  # the analysis' ModelError, or a crashed process
            began.append(result["began"])
            ended.append(result["ended"])
            if name == ANALYSIS:
                write_json(run.path / "model.json", result["model"])
                write_json(run.path / "analysis.json", result["analysis"])
                walls.update(result["wall_s"])
                kernels = Path(prepared.library_dir) / "kernels.pkl"
                prepared.kernels_file = str(kernels) if kernels.exists() else None
            elif name == COMPILE:
                walls[name] = result["compile_s"]
            elif "error" in result:
                prepared.build_errors[name.removeprefix("build ")] = result["error"]
            else:
                walls[name] = result["build_s"]
        if tasks:  # from its first task begun to its last one ended (one clock: Linux's
            # monotonic clock is the system's, the same in every process)
            walls["preparation"] = max(ended) - min(began)
        for phase, seconds in walls.items():
            run.add_wall(phase, seconds)
        return prepared

    def wait_all(self, step=None) -> int:
        """Until every submitted task has ended; `step(done, total, ended)` hears each end, with
        the keys whose tasks have all ended since (each once). Returns the task count."""
        self.start()
        futures = [f for tasks in self._tasks.values() for f in tasks.values()]
        told, heard = -1, set()
        while True:
            done, left = wait(futures, timeout=1)
            ended = [
                key
                for key, tasks in self._tasks.items()
                if key not in heard and all(f.done() for f in tasks.values())
            ]
            heard.update(ended)
            if step is not None and (len(done) != told or ended):
                told = len(done)
                step(told, len(futures), ended)
            if not left:
                return len(futures)

    def __enter__(self) -> "Preparation":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if self._pool is not None:
            if error is not None:
                kill_pool(self._pool)
            else:
                self._pool.shutdown()
        self.folder.cleanup()
