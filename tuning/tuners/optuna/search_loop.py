"""The ask-and-tell loop of an Optuna search over the schedule template of the fused kernel.

Points are checked against the space's constraints before building (pruned with the reason), a
repeated point is answered from its first measurement, and failed candidates are FAIL trials with
their reason. Every measured figure is a trial's user attribute, so a resume re-measures nothing. A
point is asked for as soon as a candidate in flight is measured, not once a whole batch is, so
asking overlaps building and measuring. Where the loop's time goes is added to `book`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, wait

import optuna

from pool_fusion_tuning.runfolder.records import ExhaustiveTimes
from pool_fusion_tuning.runfolder.store import read_record, write_json
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.time_book import TimeBook
from pool_fusion_tuning.tuning.tuners.space import Space, completed, key

from .heartbeat import Heartbeat, fail_stale_trials
from .record import close_interrupted, measurement, recorded_value, store_measurement
from .samplers import STUCK_AFTER, enqueue_unmeasured, first_points

# Asks allowed per measured trial before the search gives up on new points.
ASKS_PER_TRIAL = 20
# How often a search waits for other processes' trials in flight that complete its budget.
OTHERS_POLL_S = 0.5


class OptunaSearch:
    def __init__(
        self,
        study,
        space: Space,
        evaluator: CandidateEvaluator,
        progress=None,
        batch: int | None = None,
        shared: bool = False,
        phase: str = "optuna",
    ):
        """`shared`: other workers use the study now, so their running trials are left alone.
        `phase`: the name its progress bar shows."""
        self.study, self.space, self.evaluator = study, space, evaluator
        self.progress, self.phase = progress, phase
        self.batch = batch or evaluator.workers
        self.mine: set[int] = set()
        self.shared = shared
        self._limit: int | None = None  # the study's budget, where trials of all count (`run`)
        self._full = False
        self.book = TimeBook()
        self.heartbeat = Heartbeat(study)
        if not shared:
            close_interrupted(study)
        self._enqueue(first_points(space, study.sampler))

    def _enqueue(self, points: list[dict]) -> None:
        """Queue the points not yet measured, waiting or running; one whose trial a kill
        interrupted is queued again (`skip_if_exists` would count its failed trial as done)."""
        states = (optuna.trial.TrialState.WAITING, optuna.trial.TrialState.RUNNING)
        present = set(self.measured()) | {
            key(completed(t.params or t.system_attrs.get("fixed_params", {})))
            for t in self.study.get_trials(deepcopy=False, states=states)
        }
        for params in points:
            if key(params) not in present:
                self.study.enqueue_trial(params)
                present.add(key(params))

    def measured(self) -> dict:
        """Measured points by key: the trial that measured them (and holds their record)."""
        found = {}
        with self.book.timing("read_s"):
            for trial in self.study.get_trials(deepcopy=False):
                record = measurement(trial)
                if record is not None:
                    found[record.get("key", trial.user_attrs.get("key"))] = trial
        return found

    def run(self, budget: int, own: bool = False, cap: int | None = None) -> None:
        """Measure until `budget` trials are measured (failed ones count) or the space is spent.
        With `own`, count only this worker's trials, so workers' shares add up to the budget
        exactly. In a shared study the budget counts every process's trials (`budget`, or with
        `own` the study's `cap`): a trial asked once others' measured and in-flight trials fill
        it is not measured, and a search not `own` ends only when others' trials in flight have
        ended, so the study holds the budget whole."""
        if self.shared:
            self._limit = cap if own else budget
        try:
            self._run(budget, own)
        finally:
            self.heartbeat.stop()

    def _run(self, budget: int, own: bool) -> None:
        """Keep `batch` candidates building: each measured one is told, and the next point asked
        while the others build (TPE's constant liar counts those in flight)."""
        points = {key(p): p for p in self.space.valid_points()}
        valid = set(points)
        asks = stuck = 0
        building: dict = {}  # future -> its trial and point
        # What will be measured: the budget, or the whole space where smaller (a worker's share of a
        # shared study cannot tell what the others will take).
        total = budget if own else min(budget, len(valid))
        if self.progress and total < budget:
            self.progress.line(
                f"{self.phase}: the space holds {len(valid)} distinct points, so {total} of "
                f"the {budget} budget will be measured"
            )

        def counted(measured: dict) -> int:
            return len(self.mine) if own else len(measured)

        while True:
            if self.shared:  # trials of a worker that died elsewhere are failed
                fail_stale_trials(self.study)
            measured = self.measured()
            # The study's budget, filled by the trials measured and in flight in every process.
            mine = {trial.number for trial, _ in building.values()}
            others = len(self._running_others(mine)) if self._limit is not None else 0
            self._full = False  # set where a trial asked found the study's budget filled
            if self.progress:
                best = self.best_value(measured)
                self.progress.step(
                    self.phase, counted(measured), total, f"best {best:.2f} us" if best else ""
                )
            while (
                len(building) < self.batch
                and counted(measured) + len(building) < budget
                and (self._limit is None or len(measured) + others + len(building) < self._limit)
                and not self._full
                and asks < ASKS_PER_TRIAL * budget
                and not valid <= set(measured) | set(self._in_flight(building))  # space spent
            ):
                asks += 1
                if stuck >= STUCK_AFTER:
                    taken = set(measured) | set(self._in_flight(building))
                    enqueue_unmeasured(self.study, points, taken, asks)
                    stuck = 0
                with self.book.timing("ask_s"):
                    trial = self.study.ask()
                    params = self.space.suggest(trial)
                self.book.add("asks")
                self.heartbeat.add(trial)
                if self._triage(trial, params, measured, self._in_flight(building)):
                    building[self.evaluator.submit(self.space.config(params))] = trial, params
                    stuck = 0
                else:
                    self.heartbeat.remove(trial)  # told already
                    stuck += 1
            if not building and (own or not (others or self._full)):
                return
            if not building:  # the others' last trials fill the budget: they end, or fail
                with self.book.timing("wait_s"):
                    time.sleep(OTHERS_POLL_S)
                continue
            with self.book.timing("wait_s"):
                finished, _ = wait(building, return_when=FIRST_COMPLETED)
            for future in finished:
                trial, params = building.pop(future)
                self._store(trial, params, self.evaluator.finish(future))

    @staticmethod
    def _in_flight(building: dict) -> dict:
        """The trials in flight by point."""
        return {key(params): trial for trial, params in building.values()}

    def _triage(self, trial, params: dict, measured: dict, batch: dict) -> bool:
        """Prune impossible points and answer repeats from memory (`batch`: trials in flight by
        point); True for a point to measure."""
        point = key(params)
        with self.book.timing("storage_s"):
            trial.set_user_attr("key", point)
        reason = self.space.why_invalid(params)
        elsewhere = {}
        if self.shared:  # other workers measure too: look at the study as it is now
            measured = self.measured()
            elsewhere = self._running_elsewhere(trial.number, batch)
            if not reason and self._limit is not None:
                reason = self._no_room(trial.number, measured, batch)
                self._full = reason is not None
        if not reason and point not in measured and point not in batch and point not in elsewhere:
            return True
        with self.book.timing("storage_s"):
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
            else:  # another worker is measuring it
                trial.set_user_attr("duplicate_of", elsewhere[point])
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        return False

    def _no_room(self, number: int, measured: dict, batch: dict) -> str | None:
        """Why trial `number` is not measured, where the study's budget is filled by trials
        measured, this process's in flight (`batch`) and those elsewhere asked before it: of two
        processes asking for the last trial at once, the later gives way."""
        mine = {t.number for t in batch.values()}
        before = [n for n in self._running_others(mine) if n < number]
        if len(measured) + len(batch) + len(before) < (self._limit or 0):
            return None
        return "the study's budget is filled by other workers' trials"

    def _running_others(self, mine: set[int]) -> list[int]:
        """The trials in flight in other processes (`mine`: this one's); none where the storage
        records no heartbeats (a journal), since a dead process's trial would then hold its
        budget place for ever."""
        if not self.heartbeat.beats:
            return []
        running = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        return [t.number for t in running if t.number not in mine]

    def _running_elsewhere(self, number: int, batch: dict) -> dict:
        """Points other workers asked and have not told yet. Each trial's key is set before this
        check, so of two workers asking one point at once, at least one sees the other."""
        mine = {t.number for t in batch.values()} | {number}
        running = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        return {
            t.user_attrs["key"]: t.number
            for t in running
            if t.number not in mine and "key" in t.user_attrs
        }

    def _store(self, trial, params: dict, record: Mapping) -> None:
        self.mine.add(trial.number)
        with self.book.timing("storage_s"):
            store_measurement(self.study, trial, {"key": key(params), **record})
        self.heartbeat.remove(trial)

    def best_value(self, measured: dict | None = None) -> float | None:
        """The best time measured (in `measured`, the search's `measured()` if not given)."""
        measured = self.measured() if measured is None else measured
        values = [recorded_value(measurement(t)) for t in measured.values()]
        valid = [v for v in values if v is not None]
        return min(valid) if valid else None

    def exhaustive(self, path) -> dict:
        """Every valid point measured once (earlier measurements reused): the space's optimum.
        The table is saved after each batch, so a resume measures only what is missing."""
        table = read_record(path, ExhaustiveTimes) if path.exists() else {}
        table.update({k: recorded_value(measurement(t)) for k, t in self.measured().items()})
        missing = [p for p in self.space.valid_points() if key(p) not in table]
        for start in range(0, len(missing), self.batch):
            chunk = missing[start : start + self.batch]
            records = self.evaluator.evaluate([self.space.config(p) for p in chunk])
            for params, record in zip(chunk, records):
                table[key(params)] = recorded_value(record)
            write_json(path, table)
            if self.progress:
                self.progress.step(
                    "exhaustive", min(start + self.batch, len(missing)), len(missing)
                )
        return table
