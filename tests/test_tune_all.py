"""`tune model --tune-top all [--time-budget S]` with the toy random tuner: every kernel that
matters tuned and saved, resumed without tuning twice, a budget's leftovers said, errors."""

import threading

import pytest
from conftest import ROOT, read_json, tuners_only
from fixtures.random_tuner import RANDOM

from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.limits import usable_cores
from pool_fusion_tuning.tuning.models import tune_top
from pool_fusion_tuning.tuning.models.model_plan import ALL_MIN_SHARE

pytestmark = pytest.mark.torch

TWO_LINEARS = f"{ROOT / 'tests' / 'fixtures' / 'matmul_head.py'}:two_linears"
POOL_THEN_LINEAR = f"{ROOT / 'tests' / 'fixtures' / 'matmul_head.py'}:pool_then_linear"
QUICK = [
    *"--target llvm --processes 1 --blocks 1 --number 1 --repeat 1 --min-repeat-ms 0".split(),
    *"--warmup-s 0 --peers none --budget 2 --kernels any".split(),
]


@pytest.fixture(scope="module")
def random_only():
    with tuners_only(RANDOM):
        yield


def _results(out) -> dict:
    """Each tuned kernel's saved result file, by kernel."""
    return {path.parent.name: path for path in (out / "tuners").glob("*/result.json")}


def _matter(out) -> list[str]:
    """Every kernel that takes ALL_MIN_SHARE of the summed default time, costliest first."""
    times = read_json(out / "kernel_times.json")["kernels"]
    calls_of = {k["name"]: k["calls"] for k in read_json(out / "analysis.json")["kernels"]}
    cost = {name: calls_of[name] * t["default"]["kernel_us"] for name, t in times.items()}
    matter = [n for n in cost if cost[n] >= ALL_MIN_SHARE * sum(cost.values())]
    return sorted(matter, key=cost.__getitem__, reverse=True)


@pytest.fixture(scope="module")
def resumed(tmp_path_factory, random_only):
    """`--tune-top all` stopped as Ctrl-C stops it, in its second kernel; then run again."""
    out = tmp_path_factory.mktemp("all") / "run"
    args = ["model", TWO_LINEARS, *QUICK, "--tune-top", "all", "--out", str(out)]
    real, calls = tune_top._tune_kernel, []

    def interrupted(*given, **named):
        calls.append(given[2]["name"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*given, **named)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tune_top, "_tune_kernel", interrupted)
        assert main(args) == 130
    first = _results(out)
    stamps = {name: path.stat().st_mtime_ns for name, path in first.items()}
    stopped = read_json(out / "run.json")
    return out, args, calls, first, stamps, stopped


def test_an_interrupted_tune_top_all_keeps_each_finished_kernel(resumed):
    out, _, calls, first, _, stopped = resumed
    assert list(first) == calls[:1]  # the first kernel saved, the one cut off not
    assert "tuned" not in stopped  # not finished: the next command goes on
    # The interrupted command's tuning time counts.
    assert stopped["tuning"]["commands"] == 1 and stopped["phase_wall_s"]["tuning"] > 0
    assert _matter(out)[:2] == calls  # costliest first


def test_the_same_command_again_goes_on_and_tunes_every_kernel_that_matters(resumed, capfd):
    out, args, calls, first, stamps, stopped = resumed
    assert main([*args, "--time-budget", "3600"]) == 0  # a time budget may be given later
    err = capfd.readouterr().err
    chosen = _matter(out)
    assert len(chosen) >= 2
    results = _results(out)
    assert set(results) == set(chosen)
    # The kernel finished before is kept, not tuned again; the one cut off is tuned now.
    (kept,) = first
    assert results[kept].stat().st_mtime_ns == stamps[kept]
    assert f"tuned before, kept 1/{len(chosen)}: {kept}" in err
    assert f"tuning 1/{len(chosen)}" not in err and f"tuning 2/{len(chosen)}: {calls[1]}" in err
    report = read_json(out / "report.json")
    tuned = report["tuned"]
    assert set(tuned["kernels"]) == set(chosen) and tuned["kernels_left"] == []
    walls = report["phase_wall_s"]["tuning"], stopped["phase_wall_s"]["tuning"]
    assert tuned["commands"] == 2 and walls[0] > walls[1]
    tuned_now = [name for name in chosen if name not in first]
    assert walls[1] + sum(tuned["kernels"][name]["wall_s"] for name in tuned_now) <= walls[0]
    assert tuned["kernels_chosen"] == len(chosen) and tuned["tune_top"] == "all"
    text = (out / "report.md").read_text()
    assert "## Tuned kernels (--tune-top all --kernels any, 2 candidates per" in text
    assert f"Kernels: {len(chosen)} tuned of {len(chosen)} chosen, 0 left." in text
    assert "time budget 3600 s;" in text and "over 2 command(s)" in text
    # One timing process gives no interval: the control's sentence claims none either way.
    assert "changes no kernel's rule (a control) (" in text and "interval excludes" not in text


def test_another_command_line_on_the_folder_is_refused_saying_what_differs(resumed, capsys):
    out, args, *_ = resumed
    changed = [*args[:-2], "--budget", "1", "--out", str(out)]  # a larger one goes on
    assert main(changed) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert "with other settings (--budget: 2 in the folder, 1 here)" in line


def test_a_larger_budget_goes_on_keeping_what_was_measured(tmp_path, random_only, capfd):
    out = tmp_path / "more"
    args = ["model", TWO_LINEARS, *QUICK, "--tune-top", "1", "--out", str(out)]
    assert main(args) == 0
    ((name, result),) = _results(out).items()
    first, earlier = result.read_bytes(), read_json(out / "trials" / "trial_0.json")
    more = [*args[:-2], "--budget", "4", "--out", str(out)]
    assert main(more) == 0
    said = "the tuning goes on: --budget 2 -> 4, 1 kernel(s) tuned at 2 go on from what they "
    assert f"{said}measured; the arms are timed again, the earlier trials kept in " in (
        capfd.readouterr().err
    )
    assert (out / "tuners" / name / "result-budget-2.json").read_bytes() == first
    assert read_json(result)["budget"] == 4  # tuned again to the larger budget
    assert read_json(out / "trials-superseded-1" / "trial_0.json") == earlier
    assert read_json(out / "run.json")["settings"]["budget"] == 4
    assert "4 candidates per tuner" in (out / "report.md").read_text()
    stamp = (out / "trials" / "trial_0.json").stat().st_mtime_ns
    assert main(more) == 0  # done: the same command again measures nothing
    assert (out / "trials" / "trial_0.json").stat().st_mtime_ns == stamp
    assert main(args) == 2  # and the smaller budget is refused
    assert "(--budget: 4 in the folder, 2 here)" in capfd.readouterr().err


def test_more_kernel_classes_go_on_keeping_the_kernels_tuned(tmp_path, random_only, capfd):
    out = tmp_path / "wider"
    quick = [*QUICK[:-2], "--tune-top", "2"]  # on the CPU the pool is below --tune-top all's share
    args = ["model", POOL_THEN_LINEAR, *quick, "--kernels", "window-reduction", "--out", str(out)]
    assert main(args) == 0
    ((pool, result),) = _results(out).items()
    stamp, earlier = result.stat().st_mtime_ns, read_json(out / "trials" / "trial_0.json")
    # Listed in any order, the classes are one setting.
    wider = [*args[:-4], "--kernels", "window-reduction,matmul", "--out", str(out)]
    assert main(wider) == 0
    said = "the tuning goes on: --kernels window-reduction -> matmul,window-reduction, the "
    assert f"{said}kernels tuned before kept; the arms are timed again" in capfd.readouterr().err
    results = _results(out)
    assert len(results) == 2 and results[pool].stat().st_mtime_ns == stamp  # not tuned again
    assert read_json(out / "trials-superseded-1" / "trial_0.json") == earlier
    assert read_json(out / "run.json")["settings"]["kernels"] == "matmul,window-reduction"
    assert set(read_json(out / "report.json")["tuned"]["kernels"]) == set(results)
    assert main(args) == 2  # fewer classes are refused
    assert "(--kernels: matmul,window-reduction in the folder, window-reduction here)" in (
        capfd.readouterr().err
    )


def test_a_spent_time_budget_leaves_kernels_untuned_and_the_report_says_which(
    tmp_path, random_only, capfd
):
    out = tmp_path / "budget"
    args = ["model", TWO_LINEARS, *QUICK, "--tune-top", "all", "--time-budget", "1"]
    assert main([*args, "--out", str(out)]) == 0
    assert "time budget 1 s:" in capfd.readouterr().err
    tuned = read_json(out / "report.json")["tuned"]
    (name,) = _results(out)  # the first kernel starts; its time spends the budget
    assert list(tuned["kernels"]) == [name] and tuned["time_budget_s"] == 1
    left = tuned["kernels_left"]
    assert left and name not in left and len(left) + 1 == tuned["kernels_chosen"]
    text = (out / "report.md").read_text()
    said = f"1 tuned of {1 + len(left)} chosen, {len(left)} left (the time budget was spent): "
    assert f"{said}`{left[0]}`" in text
    # More time goes on: the kernel tuned is kept, those left tuned, every arm timed again.
    first_result = _results(out)[name].stat().st_mtime_ns
    earlier = read_json(out / "trials" / "trial_0.json")
    assert main([*args[:-1], "3600", "--out", str(out)]) == 0
    said = f"the tuning goes on: {len(left)} kernel(s) left by its time budget (1 s); the arms "
    assert f"{said}are timed again, the earlier trials kept in trials-superseded-1/" in (
        capfd.readouterr().err
    )
    tuned = read_json(out / "report.json")["tuned"]
    assert list(tuned["kernels"]) == [name, *left] and tuned["kernels_left"] == []
    assert tuned["time_budget_s"] == 3600 and tuned["commands"] == 2
    assert _results(out)[name].stat().st_mtime_ns == first_result
    assert read_json(out / "trials-superseded-1" / "trial_0.json") == earlier
    assert read_json(out / "trials" / "trial_0.json") != earlier
    assert "2 tuned of 2 chosen, 0 left" in (out / "report.md").read_text()
    # Done: the command again measures nothing; the folder renders again.
    stamp = (out / "trials" / "trial_0.json").stat().st_mtime_ns
    assert main([*args[:-1], "3600", "--out", str(out)]) == 0
    assert (out / "trials" / "trial_0.json").stat().st_mtime_ns == stamp
    text = (out / "report.md").read_text()
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0 and (out / "report.md").read_text() == text


def test_kernels_at_once_tunes_kernels_side_by_side_the_cores_shared_out(
    tmp_path, random_only, capfd
):
    out = tmp_path / "at_once"
    args = ["model", TWO_LINEARS, *QUICK, "--tune-top", "all", "--kernels-at-once", "2"]
    real, running, most, workers = tune_top._tune_kernel, [0], [0], []
    both = threading.Barrier(2, timeout=10)  # broken unless two kernels are tuned at once

    def counted(*given):
        workers.append(given[-1])
        running[0] += 1
        most[0] = max(most[0], running[0])
        if len(workers) <= 2:
            both.wait()
        try:
            return real(*given)
        finally:
            running[0] -= 1

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tune_top, "_tune_kernel", counted)
        assert main([*args, "--out", str(out)]) == 0
    chosen = _matter(out)
    assert len(chosen) >= 2 and most[0] == 2
    assert set(workers) == {max(1, usable_cores() // 2)}
    tuned = read_json(out / "report.json")["tuned"]
    assert list(tuned["kernels"]) == chosen and tuned["kernels_at_once"] == 2  # costliest first
    assert set(_results(out)) == set(chosen)
    assert "over 1 command(s), 2 kernels at once." in (out / "report.md").read_text()


@pytest.mark.parametrize("through_tvm", [False, True])
def test_a_tuner_stopped_by_an_interrupt_leaves_its_kernel_unfinished(
    tmp_path, random_only, through_tvm
):
    """The evaluator's answer while stopping, raw or as MetaSchedule's RuntimeError."""
    from fixtures.random_tuner import tuner as random_tuner

    from pool_fusion_tuning.tuning.candidates import evaluator

    def stopped(job, _):
        evaluator.STOPPING.set()  # as stop_all() sets it
        raise (RuntimeError if through_tvm else evaluator.Stopped)("the run is stopping")

    out = tmp_path / "stopped"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(random_tuner, "tune_kernel", stopped)
        # in a run, raised behind the interrupt that stopped it
        with pytest.raises(RuntimeError if through_tvm else evaluator.Stopped):
            main(["model", TWO_LINEARS, *QUICK, "--tune-top", "1", "--out", str(out)])
    assert _results(out) == {}  # nothing saved as the kernel's finding: tuned again next time
    assert not evaluator.STOPPING.is_set()  # cleared once the run's tuning has ended


@pytest.mark.parametrize(
    "args, says",
    [
        (["--tune-top", "many"], "--tune-top: takes all or an integer in digits 0-9, got 'many'"),
        (["--tune-top", "all", "--time-budget", "0"], "--time-budget must be between 1 and"),
        (["--tune-top", "all", "--time-budget", "soon"], "--time-budget: takes a number"),
        (["--time-budget", "60"], "--time-budget bounds the wall time of --tune-top"),
        (["--tune-top", "all", "--kernels-at-once", "0"], "--kernels-at-once must be between 1"),
        (["--kernels-at-once", "2"], "--kernels-at-once says how --tune-top tunes"),
    ],
)
def test_bad_tuning_values_are_one_line(capsys, tmp_path, args, says):
    out = tmp_path / "out"
    assert main(["model", TWO_LINEARS, "--target", "llvm", *args, "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert says in line
    assert not out.exists()


def test_a_kernel_s_saved_result_is_read_against_its_shape(tmp_path):
    from pool_fusion_tuning.runfolder.store import RunError, read_json, write_json

    path = tmp_path / "tuners" / "fused_matmul" / "result.json"
    path.parent.mkdir(parents=True)
    write_json(path, {"kernel": "fused_matmul", "kind": "matmul"})
    with pytest.raises(RunError, match=r"result.json is damaged \(calls is missing\)"):
        read_json(path)
