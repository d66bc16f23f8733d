"""The whole study of one run: tuners first (the arms' libraries built beside them), then one
interleaved end-to-end comparison.

Every phase writes its results into the run folder as it finishes, and skips what is already
there, so an interrupted run is finished by `tune --resume DIR` without re-measuring.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pool_fusion_tuning.baselines.arms import Arm
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.runfolder.report_records import Report
from pool_fusion_tuning.runfolder.store import Run, read_json, write_json
from pool_fusion_tuning.tuning.candidates.side_by_side import side_by_side
from pool_fusion_tuning.tuning.measure.arm_libraries import ArmLibraries, with_builds
from pool_fusion_tuning.tuning.measure.harness import TrialJob
from pool_fusion_tuning.tuning.measure.trial_process import TrialProcesses, run_trial_process
from pool_fusion_tuning.tuning.tuners.registry import TUNERS
from pool_fusion_tuning.tuning.tuners.spec import TunerPlan

from .base.errors import TuningFailed
from .base.progress import Progress
from .environment import capture, sm_clock_mhz
from .plan import RunPlan, describe_arms, split_arms


def run_tuner(name: str, run: Run, plan: TunerPlan, progress: Progress) -> Arm:
    """Run one tuner (or reuse its finished result) and return its arm for the final comparison."""
    return TUNERS[name].tune(run, plan, progress)


def run_study(run: Run, progress: Progress, process_started: float | None = None) -> Report:
    """`process_started`: when the `tune` process began (time.monotonic), so that the run's
    wall time holds its setup too (TVM's import, the environment, the run folder)."""
    plan = RunPlan.of(run.meta)
    started = time.monotonic()
    if process_started is not None:
        run.add_wall("setup", started - process_started)
    arms, peers = split_arms(plan.arm_names)
    left = [i for i in range(plan.protocol.trials) if not run.trial_path(i).exists()]
    with (
        ArmLibraries.for_run(run, plan) as libraries,
        # Each trial's process starts now and imports while the tuners run (`trial_process`).
        TrialProcesses(left, peers, torch=bool(peers) or plan.target.is_cuda) as processes,
    ):
        libraries.start(arms)  # built while the tuners run; each tuned arm once it is found
        tuned, failures = _tune(run, plan, progress, libraries.start)
        run.add_wall("tuning", time.monotonic() - started)
        arms += tuned
        run.update_meta(arms=describe_arms(arms, peers), tuner_failures=failures)
        Comparison(run, plan, arms, peers, progress, libraries, processes).measure()
    if plan.target.is_cuda:
        environment = read_json(run.path / "environment.json")
        write_json(run.path / "environment.json", {**environment, "sm_clock_after": sm_clock_mhz()})
    run.update_meta(
        wall_s=run.meta.get("wall_s", 0) + time.monotonic() - (process_started or started)
    )
    from pool_fusion_tuning.reports.render import render_run

    report = render_run(run)
    if failures and len(failures) == len(plan.tuners):
        raise TuningFailed("; ".join(failures.values()))
    return report


@dataclass(frozen=True)
class Comparison:
    """The final comparison of one run: every trial not yet measured, each in a fresh process
    (started with the run, `processes`) that loads the arms' libraries (`libraries`), once
    every one is built."""

    run: Run
    plan: RunPlan
    arms: list[Arm]
    peers: tuple
    progress: Progress
    libraries: ArmLibraries
    processes: TrialProcesses

    def measure(self) -> None:
        run, progress, libraries = self.run, self.progress, self.libraries
        started = time.monotonic()
        progress.start("comparison")
        libraries.built()  # every one, before the first trial
        if libraries.wall_s is not None:
            run.add_wall("arm builds", libraries.wall_s)
        for index in range(self.plan.protocol.trials):
            self._trial(index)
        run.add_wall("comparison", time.monotonic() - started)
        arms = len(self.arms) + len(self.peers)
        progress.finish("comparison", f"{arms} arms, {self.plan.protocol.trials} timing processes")

    def _trial(self, index: int) -> None:
        run, plan, progress, peers = self.run, self.plan, self.progress, self.peers
        trials = plan.protocol.trials
        if run.trial_path(index).exists():
            progress.say(f"trial {index}: already measured, kept")
            return
        progress.say(
            f"trial {index + 1}/{trials}: {len(self.arms) + len(peers)} arms in a fresh process"
        )

        def step(done: int, blocks: int) -> None:
            progress.step(
                "comparison", index * blocks + done, trials * blocks, f"trial {index + 1}/{trials}"
            )

        ir_dir = str(run.path / "ir") if index == 0 else None
        job = TrialJob(
            plan.case,
            self.arms,
            plan.target,
            plan.protocol,
            index,
            ir_dir,
            peers,
            self.libraries.path,
        )
        record = run_trial_process(job, progress.say, step, self.processes.take(index, peers))
        run.save_trial(with_builds(record, self.libraries.built()) if index == 0 else record)


def _tune(run: Run, plan: RunPlan, progress: Progress, found) -> tuple[list[Arm], dict]:
    """Every tuner at once, each in a thread of its own (`side_by_side`). Each tuned arm goes to
    `found` as its tuner returns it, from this thread (the arms' build pool must not be started
    by a tuner's thread, whose end would kill it). A tuner that finds nothing valid is a failure
    the report states; any other error, or Ctrl-C, stops them all and is raised here."""

    tuner_plan = TunerPlan(
        plan.case,
        plan.target,
        plan.budget,
        plan.options,  # run.json's, checked where the run was opened
        dict(run.meta["identity"]),  # as stored: an older run's Case may lack fields added since
    )

    def tuner(name: str):
        return lambda: run_tuner(name, run, tuner_plan, progress)

    outcomes = side_by_side(
        {name: tuner(name) for name in plan.tuners},
        fatal=lambda error: not isinstance(error, TuningFailed),
        each=lambda name, arm: found([arm]),
    )
    arms, failures = [], {}
    for name in plan.tuners:
        outcome = outcomes[name]
        if isinstance(outcome, TuningFailed):  # the other arms still run
            failures[name] = str(outcome)
            progress.line(f"{name}: {outcome}")
        else:
            arms.append(outcome)
    return arms, failures


def save_environment(run: Run, target: TargetSpec) -> None:
    write_json(run.path / "environment.json", capture(target.tvm()))
