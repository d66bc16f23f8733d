"""Trial processes start with the run and wait, no CUDA context before their trial; one
without a trial is stopped."""

import time

from pool_fusion_tuning.baselines.arms import ARMS
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.measure.harness import TrialJob
from pool_fusion_tuning.tuning.measure.protocol import Protocol
from pool_fusion_tuning.tuning.measure.trial_process import TrialProcesses, run_trial_process

CASE = Case(channels=2, height=8, width=8, branches=2)
PROTOCOL = Protocol(number=1, repeat=1, min_repeat_ms=0, warmup_s=0, blocks=2, trials=2, checks=1)


def test_a_trial_process_waits_for_its_trial_and_says_where_its_time_went():
    with TrialProcesses([0, 1], warm_peers=("torch-compile",)) as processes:
        waiting = [processes._waiting[0]._process, processes._waiting[1]._process]
        assert all(process.is_alive() for process in waiting)
        time.sleep(1)  # importing or waiting: alive, no trial given yet
        first = processes.take(0, ("torch-compile",))
        assert first._process is waiting[0]
        job = TrialJob(CASE, [ARMS["on"], ARMS["fixed"]], TargetSpec("llvm"), PROTOCOL, 0)
        record = run_trial_process(job, process=first)
    assert not waiting[0].is_alive()  # ended after its result
    assert not waiting[1].is_alive()  # never given a trial: stopped on leaving
    walls = record["wall_s"]
    assert walls["startup_s"] > 0 and walls["compiler_import_s"] > 0 and walls["waited_s"] >= 0
    assert record["cuda_before_trial"] is False  # imports only, while it waited
    assert set(walls["load_s"]) == {"on", "fixed"} and walls["peer_s"] == {}
    assert set(walls["check_by_arm_s"]) == {"on", "fixed"} and walls["check_s"] > 0
    assert set(walls["timing_by_arm_s"]) == {"on", "fixed"} and walls["warmup_s"] >= 0
    assert all(check["correct"] for check in record["checks"].values())


def test_a_trial_without_a_process_started_for_it_gets_a_fresh_one():
    with TrialProcesses([]) as processes:
        job = TrialJob(CASE, [ARMS["on"]], TargetSpec("llvm"), PROTOCOL, 1)
        record = run_trial_process(job, process=processes.take(1))
    assert record["trial"] == 1 and record["wall_s"]["compiler_import_s"] >= 0


def test_a_trial_process_that_dies_is_one_line_saying_how_and_how_to_continue():
    # TVM_NUM_THREADS=100000 aborts one: the run says how it ended and how to go on.
    import os
    import signal

    import pytest

    from pool_fusion_tuning.tuning.base.errors import ProcessDied
    from pool_fusion_tuning.tuning.cli.fault_lines import fault_line

    with TrialProcesses([0]) as processes:
        process = processes.take(0)
        os.kill(process._process.pid, signal.SIGABRT)
        job = TrialJob(CASE, [ARMS["on"]], {"kind": "llvm"}, PROTOCOL, 0)
        with pytest.raises(ProcessDied) as died:
            run_trial_process(job, process=process)
    assert str(died.value) == "trial 0's process was killed by SIGABRT before it reported"
    line = fault_line(died.value, "tune --resume runs/x")
    assert line is not None and "\n" not in line
    assert line.endswith("fix the cause, then tune --resume runs/x continues the run")
