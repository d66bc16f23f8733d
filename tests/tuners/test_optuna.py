"""The Optuna search on llvm with real builds: seeding, pruning, repeats, failures, resume."""

import io
import re
import threading

import optuna
import pytest
import tvm
from conftest import WINDOW3, InjectingSpace
from tvm import te

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.template import PoolSchedule
from pool_fusion_tuning.tuning.base.progress import Progress
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol
from pool_fusion_tuning.tuning.tuners.optuna.record import RECORD
from pool_fusion_tuning.tuning.tuners.optuna.samplers import make_sampler
from pool_fusion_tuning.tuning.tuners.optuna.search_loop import OptunaSearch
from pool_fusion_tuning.tuning.tuners.optuna.search_summary import records, summarize
from pool_fusion_tuning.tuning.tuners.optuna.storages import storage_for
from pool_fusion_tuning.tuning.tuners.space import Space, completed, key

QUICK = KernelProtocol(number=1, repeat=2, min_repeat_ms=0, checks=1)


class BrokenSchedule(PoolSchedule):
    """Fails to build, as a bad schedule would."""

    def apply(self, func, target):
        raise tvm.error.InternalError("injected build failure")


class WrongSchedule(PoolSchedule):
    """Builds a kernel of the right signature that computes the wrong thing (all zeros)."""

    def apply(self, func, target):
        # TIRx parameters carry their BufferType in Var.ty (no buffer_map).
        shapes = [[int(d) for d in p.ty.shape] for p in func.params]
        inputs = [te.placeholder(s, "float32", name=f"in{i}") for i, s in enumerate(shapes[:-1])]
        out = te.compute(shapes[-1], lambda *i: tvm.tirx.const(0, "float32"), name="zeros")
        return te.create_prim_func(inputs + [out])


class BrokenSpace(InjectingSpace):
    """The real space, with two points replaced by broken schedules."""

    faults = {(2, 1): BrokenSchedule, (4, 1): WrongSchedule}


def _study(directory, sampler="random"):
    return optuna.create_study(
        study_name="s",
        direction="minimize",
        load_if_exists=True,
        storage=storage_for(directory, None),
        sampler=make_sampler(sampler, 0),
    )


@pytest.fixture(scope="module")
def evaluator():
    with CandidateEvaluator(WINDOW3, TargetSpec("llvm"), QUICK, workers=2) as ev:
        yield ev


def test_search_seeds_serial_first_and_measures_the_budget(tmp_path, evaluator):
    space = Space(WINDOW3, "llvm")
    study = _study(tmp_path)
    OptunaSearch(study, space, evaluator, batch=4).run(8)
    rows = records(study)
    assert len(rows) == 8
    assert rows[0]["params"] == space.seeds()[0]
    assert all(r["status"] == "ok" and r["kernel_us"] > 0 for r in rows)


def test_repeats_are_not_measured_twice(tmp_path, evaluator):
    space = Space(WINDOW3, "llvm")
    study = _study(tmp_path, "grid")
    console = io.StringIO()  # --verbose: the bar's steps as lines
    search = OptunaSearch(study, space, evaluator, Progress(verbose=True, stream=console), 4)
    points = len(space.valid_points())
    search.run(points + 10)  # more than the space: it stops when spent
    rows = records(study)
    assert len({r["key"] for r in rows}) == len(rows) == points
    # the bar counts to what is measured, and the console says once why it is not the budget
    lines = console.getvalue().splitlines()
    said = f"optuna: the space holds {points} distinct points, so {points} of the {points + 10} "
    assert lines[0] == said + "budget will be measured" and lines.count(lines[0]) == 1
    assert lines[-1].startswith(f"optuna: {points}/{points} ")
    assert all(re.match(rf"optuna: \d+/{points}( |$)", line) for line in lines[1:]), lines


def test_impossible_points_are_pruned_not_built(tmp_path, evaluator):
    space = Space(WINDOW3.replace(width=3, height=3, window=3), "llvm")  # a 1x1 pool output
    assert {space.why_invalid(p) for p in space.points()} >= {"tile larger than the output"}
    study = optuna.create_study(
        storage=storage_for(tmp_path, None), sampler=make_sampler("grid", 0)
    )
    with CandidateEvaluator(space.case, TargetSpec("llvm"), QUICK, workers=2) as small:
        OptunaSearch(study, space, small, batch=4).run(len(space.valid_points()))
    pruned = [t for t in study.trials if "pruned" in t.user_attrs]
    assert all(t.state == optuna.trial.TrialState.PRUNED for t in pruned)
    assert {t.user_attrs["pruned"] for t in pruned} >= {"tile larger than the output"}
    assert all(t.user_attrs["pruned"] == space.why_invalid(completed(t.params)) for t in pruned)
    assert all(t.user_attrs.get("measured") is None for t in pruned)


def test_failed_and_wrong_candidates_are_recorded_and_the_search_goes_on(tmp_path, evaluator):
    space = BrokenSpace(WINDOW3, "llvm")
    study = _study(tmp_path, "grid")
    OptunaSearch(study, space, evaluator, batch=4).run(len(space.valid_points()))
    rows = records(study)
    summary = summarize(study, rows, 1.0, {}, None, key(space.seeds()[0]))
    assert summary["failed_by_reason"] == {"build error": 4, "wrong result": 4}
    assert summary["valid"] == len(rows) - 8
    broken = [r for r in rows if r.get("reason") == "build error"]
    assert all("injected build failure" in r["detail"] for r in broken)
    assert (summary["best_params"]["outputs_w"], summary["best_params"]["outputs_h"]) not in [
        (2, 1),
        (4, 1),
    ]


def test_resume_keeps_every_measurement(tmp_path, evaluator):
    space = Space(WINDOW3, "llvm")
    OptunaSearch(_study(tmp_path), space, evaluator, batch=3).run(6)
    before = {r["number"]: (r["key"], r["kernel_us"]) for r in records(_study(tmp_path))}
    study = _study(tmp_path)
    OptunaSearch(study, space, evaluator, batch=3).run(9)
    after = {r["number"]: (r["key"], r["kernel_us"]) for r in records(study)}
    assert len(before) == 6 and len(after) == 9
    assert all(after[n] == before[n] for n in before)


class SpaceBeforeFlat(Space):
    """The space as it was before `outputs_flat`: a study stored then has no such parameter."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.domains = {k: v for k, v in self.domains.items() if k != "outputs_flat"}


def test_a_study_stored_before_a_knob_was_added_resumes_without_measuring_again(
    tmp_path, evaluator
):
    """Distributions fit, points keep their keys, only new points are measured."""
    OptunaSearch(_study(tmp_path), SpaceBeforeFlat(WINDOW3, "llvm"), evaluator, batch=3).run(6)
    before = {r["key"] for r in records(_study(tmp_path))}
    assert len(before) == 6 and not any("outputs_flat" in k for k in before)
    study = _study(tmp_path)
    space = Space(WINDOW3, "llvm")
    OptunaSearch(study, space, evaluator, batch=3).run(9)
    rows = records(study)
    keys = {r["key"] for r in rows}
    assert len(rows) == len(keys) == 9 and before <= keys
    assert sum(1 for r in rows if r["key"] == key(space.seeds()[0])) == 1


def _asked(study, space):
    """A trial asked as the search asks one (its knobs suggested)."""
    trial = study.ask()
    space.suggest(trial)
    return trial


def test_a_seed_interrupted_by_a_kill_is_measured_on_resume(tmp_path, evaluator):
    space = Space(WINDOW3, "llvm")
    study = _study(tmp_path)
    OptunaSearch(study, space, evaluator)
    asked = _asked(study, space)  # the run is killed while SERIAL is measured
    assert asked.params == space.seeds()[0]
    study = _study(tmp_path)
    OptunaSearch(study, space, evaluator, batch=2).run(2)
    assert space.seeds()[0] in [r["params"] for r in records(study)]


def test_a_measurement_recorded_but_not_told_before_a_kill_is_kept(tmp_path, evaluator):
    space = Space(WINDOW3, "llvm")
    study = _study(tmp_path)
    trial = _asked(study, space)
    trial.set_user_attr("key", key(trial.params))
    trial.set_user_attr(
        RECORD, {"key": key(trial.params), "status": "ok", "kernel_us": 3.5, "samples_us": [3.5]}
    )  # killed here, before `tell`
    OptunaSearch(_study(tmp_path), space, evaluator)
    assert _study(tmp_path).trials[trial.number].value == 3.5


def test_a_partial_record_of_the_old_layout_counts_as_not_measured(tmp_path, evaluator):
    """An old record with `measured` and `status` but no `kernel_us` resumes."""
    space = Space(WINDOW3, "llvm")
    study = _study(tmp_path)
    trial = _asked(study, space)
    for name, value in {"key": key(trial.params), "measured": True, "status": "ok"}.items():
        trial.set_user_attr(name, value)  # killed here, before kernel_us and samples_us
    search = OptunaSearch(_study(tmp_path), space, evaluator)
    assert search.measured() == {}
    assert _study(tmp_path).trials[trial.number].state == optuna.trial.TrialState.FAIL


class SlowFirstBuild:
    """The first build ends only after three later ones are submitted: no waiting for batches."""

    workers = 2

    def __init__(self):
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(2)
        self.submitted = 0
        self.released = threading.Event()

    def submit(self, schedule):
        self.submitted += 1
        if self.submitted == 4:
            self.released.set()
        first = self.submitted == 1
        return self.pool.submit(lambda: self.released.wait(timeout=20) if first else True)

    def finish(self, future):
        assert future.result(), "the first build waited for the whole batch"
        return {"status": "ok", "kernel_us": 1.0 + self.submitted, "samples_us": [1.0]}


def test_builders_are_kept_busy_while_one_candidate_builds_long(tmp_path):
    evaluator = SlowFirstBuild()
    study = _study(tmp_path)
    OptunaSearch(study, Space(WINDOW3, "llvm"), evaluator, batch=2).run(6)
    assert len(records(study)) == 6 and evaluator.released.is_set()


def test_optuna_is_not_asked_for_the_knobs_a_tiling_implies():
    """Flat or block-apart outputs ask no W and H knobs; recorded params complete to the point."""
    from pool_fusion_tuning.baselines.pipeline import make_target

    space = Space.for_target(Case(), make_target("cuda"))
    study = optuna.create_study(sampler=make_sampler("tpe", 0))
    reasons = set()
    for _ in range(200):
        trial = study.ask()
        params = space.suggest(trial)
        assert list(params) == list(space.domains) and completed(trial.params) == params
        if params["outputs_flat"] > 1 or params["outputs_strided"] > 1:
            assert not {"outputs_w", "outputs_h"} & set(trial.params)
        reasons.add(reason := space.why_invalid(params))
        if reason:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, float(params["threads"]))
    assert not {r for r in reasons if r and ("at once" in r or "consecutive" in r)}


def test_a_search_whose_sampler_repeats_its_best_point_still_measures_its_budget(tmp_path):
    """After STUCK_AFTER asks without a new point, an unmeasured one is queued: a budget the
    space can fill is filled."""
    from fixtures.killed_search import InstantEvaluator

    from pool_fusion_tuning.tuning.tuners.optuna.samplers import STUCK_AFTER

    space = Space(Case(channels=2, height=12, width=12, branches=2), "llvm")
    assert len(space.valid_points()) == 32 and STUCK_AFTER < 24
    study = _study(tmp_path, "tpe")
    search = OptunaSearch(study, space, InstantEvaluator(), batch=1)
    search.run(24)
    rows = records(study)
    assert len(rows) == len({r["key"] for r in rows}) == 24


def test_a_replay_queues_an_unmeasured_point_where_the_search_would():
    """The sampler comparison's replay queues unmeasured points as the search does: 24 of 24."""
    from pool_fusion_tuning.tuning.tuners.optuna.replay import replay

    space = Space(Case(channels=2, height=12, width=12, branches=2), "llvm")
    table = {key(p): 1.0 + i / 100 for i, p in enumerate(space.valid_points())}
    assert replay(space, table, "tpe", seed=0, trials=24)["measured"] == 24
