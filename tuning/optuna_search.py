"""Optuna search over the schedule template of the fused pool kernel.

The study lives in its storage (SQLite in the run folder by default, a journal file where
SQLAlchemy is missing, or any `--storage` URL); every measured figure is a trial's user attribute,
so `--resume` re-measures nothing. Points are checked against the space's constraints before
building (pruned with the reason), a repeated point is answered from its first measurement, and
failed candidates are FAIL trials with their reason.
"""

from __future__ import annotations

import json
import random
import time

import optuna

from baselines.arms import template_arm
from baselines.case import Case

from .children import stop
from .candidates import CandidateEvaluator, TuningFailed, budget_shares, failures_by_reason
from .kernel import DefaultSchedule
from .heartbeat import Heartbeat, fail_stale_trials
from .measurement import close_interrupted, measurement, recorded_value, store_measurement
from .space import Space, key
from .storages import (CHILD_PASSWORD_ENV, JOURNAL, check_untouched,  # noqa: F401
                       default_storage_url, password_for, said, storage_for)
from .store import Run, RunError, read_json, write_json

STUDY_NAME = "fused-pool"
# The tuner of the one kernel for the whole graph, and the rule lists each tuner times.
WHOLE_TUNER = "optuna-one-kernel"
RULES = ("default", "fixed")
STORAGE_ATTEMPTS = 3
# Asks allowed per measured trial before the search gives up on new points.
ASKS_PER_TRIAL = 20


def make_sampler(name: str, seed: int):
    """The sampler `--sampler` names, seeded."""
    if name not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; choose from {', '.join(SAMPLERS)}")
    return SAMPLERS[name](seed)


class GridOrder(optuna.samplers.RandomSampler):
    """Every point once, in a seeded order. Optuna's GridSampler calls `study.stop()` when spent,
    which an ask-and-tell loop cannot take, so the points are enqueued instead."""

    def __init__(self, seed: int):
        super().__init__(seed=seed)
        self.seed = seed


# `--sampler` names and their factories (seed -> sampler): a new sampler is one entry here.
SAMPLERS = {
    "tpe": lambda seed: optuna.samplers.TPESampler(seed=seed, constant_liar=True),
    "random": lambda seed: optuna.samplers.RandomSampler(seed=seed),
    "cmaes": lambda seed: optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False),
    "grid": GridOrder,
}


def distributions(space: Space) -> dict:
    from optuna.distributions import CategoricalDistribution
    return {name: CategoricalDistribution(choices) for name, choices in space.domains.items()}


class OptunaSearch:
    def __init__(self, study, space: Space, evaluator: CandidateEvaluator, progress=None,
                 batch: int | None = None, shared: bool = False):
        """`shared`: other workers use the study now, so their running trials are left alone."""
        self.study, self.space, self.evaluator = study, space, evaluator
        self.progress = progress
        self.batch = batch or evaluator.workers
        self.mine: set[int] = set()
        self.shared = shared
        self.heartbeat = Heartbeat(study)
        if not shared:
            close_interrupted(study)
        points = space.seeds()
        if isinstance(study.sampler, GridOrder):
            grid = space.points()
            random.Random(study.sampler.seed).shuffle(grid)
            points += grid
        self._enqueue(points)

    def _enqueue(self, points: list[dict]) -> None:
        """Queue the points not yet measured, waiting or running. A point whose trial a kill
        interrupted is queued again (`skip_if_exists` would count its failed trial as done)."""
        states = (optuna.trial.TrialState.WAITING, optuna.trial.TrialState.RUNNING)
        present = set(self.measured()) | {
            key(t.params or t.system_attrs.get("fixed_params", {}))
            for t in self.study.get_trials(deepcopy=False, states=states)}
        for params in points:
            if key(params) not in present:
                self.study.enqueue_trial(params)
                present.add(key(params))

    def measured(self) -> dict:
        """Measured points by key: the trial that measured them (and holds their record)."""
        found = {}
        for trial in self.study.get_trials(deepcopy=False):
            record = measurement(trial)
            if record is not None:
                found[record.get("key", trial.user_attrs.get("key"))] = trial
        return found

    def run(self, budget: int, own: bool = False) -> None:
        """Measure until `budget` trials are measured (failed ones count) or the space is spent.
        With `own`, count only this worker's trials: workers with shares of a budget then add
        up to it exactly."""
        try:
            self._run(budget, own)
        finally:
            self.heartbeat.stop()

    def _run(self, budget: int, own: bool) -> None:
        valid = {key(p) for p in self.space.valid_points()}
        dists = distributions(self.space)
        asks = 0

        def counted(measured: dict) -> int:
            return len(self.mine) if own else len(measured)

        while True:
            if self.shared:  # trials of a worker that died elsewhere are failed
                fail_stale_trials(self.study)
            measured = self.measured()
            done = counted(measured)
            if done >= budget or valid <= set(measured) or asks > ASKS_PER_TRIAL * budget:
                return
            batch = {}
            while len(batch) < min(self.batch, budget - done):
                asks += 1
                if asks > ASKS_PER_TRIAL * budget:
                    break
                trial = self.study.ask(dists)
                self.heartbeat.add(trial)
                self._triage(trial, measured, batch)
                if trial.number not in {t.number for t in batch.values()}:
                    self.heartbeat.remove(trial)  # told already
                if valid <= set(measured) | set(batch):
                    break
            self._measure(batch)
            if self.progress:
                best = self.best_value()
                self.progress.step("optuna", counted(self.measured()), budget,
                                   f"best {best:.2f} us" if best else "")

    def _triage(self, trial, measured: dict, batch: dict) -> None:
        """Prune impossible points, answer repeats from memory, queue the rest for measuring."""
        params = trial.params
        point = key(params)
        trial.set_user_attr("key", point)
        reason = self.space.why_invalid(params)
        elsewhere = {}
        if self.shared:  # other workers measure too: look at the study as it is now
            measured = self.measured()
            elsewhere = self._running_elsewhere(trial.number, batch)
        if reason:
            trial.set_user_attr("pruned", reason)
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        elif point in measured or point in batch:
            first = measured.get(point)
            value = recorded_value(measurement(first)) if first else None
            trial.set_user_attr("duplicate_of", first.number if first else None)
            if value is None:  # repeat within a batch, or of a failure
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            else:
                self.study.tell(trial, value)
        elif point in elsewhere:  # another worker is measuring it
            trial.set_user_attr("duplicate_of", elsewhere[point])
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            batch[point] = trial

    def _running_elsewhere(self, number: int, batch: dict) -> dict:
        """Points other workers asked and have not told yet. Each trial's key is set before
        this check, so of two workers asking one point at once, at least one sees the other."""
        mine = {t.number for t in batch.values()} | {number}
        running = self.study.get_trials(deepcopy=False,
                                        states=(optuna.trial.TrialState.RUNNING,))
        return {t.user_attrs["key"]: t.number for t in running
                if t.number not in mine and "key" in t.user_attrs}

    def _measure(self, batch: dict) -> None:
        trials = list(batch.values())
        records = self.evaluator.evaluate([self.space.config(t.params) for t in trials])
        for trial, record in zip(trials, records):
            self.mine.add(trial.number)
            store_measurement(self.study, trial, {"key": key(trial.params), **record})
            self.heartbeat.remove(trial)

    def best_value(self):
        values = [recorded_value(measurement(t)) for t in self.measured().values()]
        values = [v for v in values if v is not None]
        return min(values) if values else None

    def exhaustive(self, path) -> dict:
        """Every valid point measured once (earlier measurements reused): the space's optimum.
        The table is saved after each batch, so a resumed run measures only what is missing."""
        table = read_json(path) if path.exists() else {}
        table.update({k: recorded_value(measurement(t)) for k, t in self.measured().items()})
        missing = [p for p in self.space.valid_points() if key(p) not in table]
        for start in range(0, len(missing), self.batch):
            chunk = missing[start:start + self.batch]
            records = self.evaluator.evaluate([self.space.config(p) for p in chunk])
            for params, record in zip(chunk, records):
                table[key(params)] = record.get("kernel_us") if record["status"] == "ok" else None
            write_json(path, table)
            if self.progress:
                self.progress.step("exhaustive", min(start + self.batch, len(missing)),
                                   len(missing))
        return table


def records(study) -> list[dict]:
    """Measured trials in order, for the report's best-so-far plot and tables."""
    rows = []
    for trial in study.get_trials(deepcopy=False):
        record = measurement(trial)
        if record is not None:
            fields = {k: v for k, v in record.items() if k != "samples_us"}
            rows.append({"number": trial.number, "params": trial.params, "measured": True,
                         "key": trial.user_attrs.get("key"), **fields,
                         "kernel_us": recorded_value(record)})
    return rows


def summarize(study, rows: list[dict], wall_s: float, rule_kernels: dict,
              exhaustive: dict | None, serial_key: str) -> dict:
    valid = [row for row in rows if row["status"] == "ok"]
    summary = {"trials": len(rows), "valid": len(valid),
               "failed_by_reason": failures_by_reason(rows), "wall_s": wall_s}
    for rules, record in rule_kernels.items():
        summary[f"{rules}_kernel_us"] = record.get("kernel_us")
        summary[f"{rules}_status"] = record.get("status")
    serial = [r for r in rows if r["key"] == serial_key]
    if serial and serial[0]["status"] == "ok":
        summary["serial_kernel_us"] = serial[0]["kernel_us"]
    if valid:
        best_index, best = min(enumerate(valid), key=lambda item: item[1]["kernel_us"])
        summary.update({"best_params": best["params"], "best_kernel_us": best["kernel_us"],
                        "best_trial": rows.index(best) + 1, "timer": best.get("timer")})
        summary["importances"] = _importances(study)
    if exhaustive is not None:
        values = [v for v in exhaustive.values() if v is not None]
        summary["exhaustive_points"] = len(exhaustive)
        summary["exhaustive_best_kernel_us"] = min(values) if values else None
    return summary


def _importances(study) -> dict | None:
    try:
            return {k: float(v) for k, v in optuna.importance.get_param_importances(study).items()}
    except Exception:  # too few distinct points; importances are optional in the report
        return None


def run_optuna(run: Run, case: Case, target, budget: int, progress, options: dict,
               whole: bool = False):
    """Tune (or finish tuning) the fused pool kernel; return the arm `optuna` for the graph.
    With `whole`, the one kernel of the whole graph instead: tuner and arm `optuna-one-kernel`,
    against the rule's choice for that kernel."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    name = WHOLE_TUNER if whole else "optuna"
    directory = run.tuner_dir(name)
    target_spec = run.meta["target_spec"]
    space = Space(case, target.kind.name, whole=whole)
    started = time.monotonic()
    workers = 1 if whole else options.get("workers", 1)  # the workers tune the pool kernel
    url = options.get("storage") or default_storage_url(directory, workers)
    # A storage the user gives holds both tuners' studies; the default one is this tuner's own.
    study_name = f"{STUDY_NAME}-one-kernel" if whole and options.get("storage") else STUDY_NAME
    study = open_study(url, study_name, make_sampler(options.get("sampler", "tpe"),
                                                      options.get("seed", 0)),
                       run.meta["identity"], options.get("storage_password_env"))
    if workers > 1:
        close_interrupted(study)
        run_workers(url, case, target_spec, budget - len(records(study)), workers, options)
    with CandidateEvaluator(case, target_spec, whole=whole) as evaluator:
        search = OptunaSearch(study, space, evaluator, progress)
        search.run(budget)
        # The default rules have no schedule for a kernel with a prologue worth timing.
        rule_kernels = _rule_kernels(directory, evaluator, ("fixed",) if whole else RULES)
        exhaustive = search.exhaustive(directory / "exhaustive.json") if options.get(
            "exhaustive") else None
    rows = records(study)
    previous = run.meta.get("tuner_wall_s", {}).get(name, 0.0)
    wall_s = previous + time.monotonic() - started
    run.update_meta(tuner_wall_s={**run.meta.get("tuner_wall_s", {}), name: wall_s})
    summary = summarize(study, rows, wall_s, rule_kernels, exhaustive, key(space.seeds()[0]))
    if exhaustive is not None and summary.get("exhaustive_best_kernel_us"):
        from .replay import compare_samplers
        summary["sampler_replay"] = compare_samplers(space, exhaustive)
    write_json(directory / "trials.json", rows)
    write_json(directory / "summary.json", summary)
    if not summary["valid"]:
        raise TuningFailed(f"{name} measured no valid candidate in {len(rows)} trials: "
                           f"{summary['failed_by_reason']}")
    return template_arm(name, summary["best_params"], whole_graph=whole)


def open_study(url: str, name: str, sampler, identity: dict, password_env: str | None = None):
    """Load or create a study; refuse storage that is damaged, unreadable or holds another
    run's study, and leave it as it is."""
    check_untouched(url)
    for attempt in range(STORAGE_ATTEMPTS):
        try:
            study = optuna.create_study(study_name=name, direction="minimize",
                                        load_if_exists=True,
                                        storage=storage_for(None, url, password_env),
                                        sampler=sampler)
            break
        except RunError:
            raise
        except Exception as error:  # whatever the storage backend raises, said in one line
            # Workers starting together on a fresh database race to create its tables.
            if attempt + 1 < STORAGE_ATTEMPTS:
                time.sleep(1 + attempt)
                continue
            raise RunError(f"cannot open the Optuna storage ({said(error)}); it was left as it "
                           "is: repair it or pass another --storage") from None
    mine = json.dumps(identity, sort_keys=True)
    stored = study.user_attrs.get("identity")
    if stored is None and study.trials or stored not in (None, mine):
        raise RunError(f"the Optuna storage holds study {name!r} of another run (case, "
                       "target or device); it was left as it is: pass another --storage")
    if stored is None:
        study.set_user_attr("identity", mine)
    return study


def run_worker(case: Case, target_spec: dict, identity: dict, url: str, name: str,
               budget: int, sampler: str, seed: int, progress=None,
               password_env: str | None = None) -> list[dict]:
    """One worker of a shared study: measure `budget` trials of its own, then stop."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = Space(case, target_spec["kind"])
    study = open_study(url, name, make_sampler(sampler, seed), identity, password_env)
    with CandidateEvaluator(case, target_spec) as evaluator:
        search = OptunaSearch(study, space, evaluator, progress, shared=True)
        search.run(budget, own=True)
    return [row for row in records(study) if row["number"] in search.mine]


def run_workers(url: str, case: Case, target_spec: dict, remaining: int, workers: int,
                options: dict) -> None:
    """`tune --workers K`: K `tune worker` processes share the remaining budget, one GPU each."""
    import os
    import subprocess
    import sys
    shares = budget_shares(remaining, workers)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    password = password_for(url, options.get("storage_password_env"))
    gpus = visible.split(",") if visible else [str(i) for i in range(workers)]
    processes = []
    for index, share in enumerate(s for s in shares if s > 0):
        env = dict(os.environ)
        if target_spec["kind"] == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
        if password:  # in the environment, not on the command line that `ps` shows
            env[CHILD_PASSWORD_ENV] = password
        command = [sys.executable, "-m", "tuning.cli", "worker", "--storage", url,
                   "--study", STUDY_NAME, "--budget", str(share), "--target", target_spec["kind"],
                   "--sampler", options.get("sampler", "tpe"),
                   "--seed", str(options.get("seed", 0) + index),
                   "--parent-pid", str(os.getpid()),
                   *(["--storage-password-env", CHILD_PASSWORD_ENV] if password else []),
                   "--case", *[f"{k}={v}" for k, v in case.to_dict().items()]]
        processes.append(subprocess.Popen(command, env=env))
    try:
        failed = [p.args for p in processes if p.wait() != 0]
    except BaseException:  # Ctrl-C or SIGTERM: the workers stop with the run
        for process in processes:
            stop(process)
        raise
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(processes)} Optuna workers failed")


def _rule_kernels(directory, evaluator: CandidateEvaluator, rule_lists=RULES) -> dict:
    """The kernels of the default rules and of the fixed ones, timed once by the same runner
    (kept across resumes)."""
    kernels = {}
    for rules in rule_lists:
        path = directory / f"{rules}_kernel.json"
        if not path.exists():
            write_json(path, evaluator.evaluate([DefaultSchedule(rules)])[0])
        kernels[rules] = read_json(path)
    return kernels
