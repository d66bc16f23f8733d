"""MetaSchedule measured through TVM's RPC tracker on two real servers on localhost (llvm)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tvm
from conftest import WINDOW3, read_json, tune

from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.candidates.kernel import bias_count, compile_kernel, fused_function
from pool_fusion_tuning.tuning.candidates.task import PoolKernel
from pool_fusion_tuning.tuning.cli.main import main
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol
from pool_fusion_tuning.tuning.tuners.metaschedule import rpc

KEY = "pool-test"
# Two blocks of two samples per trial, a 16 x 16 graph.
FAST = [
    *"--target llvm --processes 1 --blocks 2 --number 2 --repeat 2 --min-repeat-ms 1".split(),
    *"--warmup-s 0 --case channels=2 height=16 width=16 branches=2".split(),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(module: str, log, *args) -> subprocess.Popen:
    """A TVM RPC process in a session of its own (a server forks one process per session)."""
    return subprocess.Popen(
        [sys.executable, "-m", module, "--host", "127.0.0.1", *args],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def tracker(tmp_path_factory):
    """A tracker and two servers of KEY; yields the tracker's address and the servers' logs."""
    logs = tmp_path_factory.mktemp("rpc")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    processes = [
        _start(
            "tvm.exec.rpc_tracker",
            logs / "tracker.log",
            "--port",
            str(port),
            "--port-end",
            str(port + 1),
        )
    ]
    servers = [logs / "server0.log", logs / "server1.log"]
    for log in servers:
        server_port = _free_port()
        processes.append(
            _start(
                "tvm.exec.rpc_server",
                log,
                "--tracker",
                address,
                "--key",
                KEY,
                "--port",
                str(server_port),
                "--port-end",
                str(server_port + 1),
            )
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if rpc.free_servers(address, KEY) == 2:
                    break
            except rpc.TrackerError:
                pass
            assert time.monotonic() < deadline, "the RPC servers did not register"
            time.sleep(0.5)
        yield address, servers
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _sessions(log) -> int:
    return log.read_text().count("connected from")


@pytest.fixture(scope="module")
def remote_run(tracker, tmp_path_factory):
    address, servers = tracker
    out = tmp_path_factory.mktemp("runs") / "run"
    before = [_sessions(log) for log in servers]
    tune(
        "--tuners",
        "metaschedule",
        "--budget",
        "16",
        "--rpc-tracker",
        address,
        "--rpc-key",
        KEY,
        "--out",
        str(out),
        *FAST,
        check_exit=0,
    )
    return out, [_sessions(log) - b for log, b in zip(servers, before)]


@pytest.mark.slow
def test_every_candidate_is_measured_on_the_servers(tracker, remote_run):
    out, sessions = remote_run
    measured = 0
    for name in ("ms-default", "ms-space"):
        rows = read_json(out / "tuners" / name / "trials.json")
        assert [row["trial"] for row in rows] == list(range(1, 9)), name
        assert {row["runner"] for row in rows} == {f"rpc {tracker[0]} key {KEY}"}
        valid = [row for row in rows if row["status"] == "ok"]
        assert valid and all(row["kernel_us"] > 0 and row["max_abs_err"] == 0 for row in valid)
        measured += sum(row.get("reason") != "build error" for row in rows)
    assert all(count > 0 for count in sessions)  # both servers measured candidates
    assert sum(sessions) == measured  # one session per measured candidate, none local
    summary = read_json(out / "report.json")["tuners"]["metaschedule"]
    # the arm's trials: both runs' candidates, as the report's row counts them
    assert summary["trials"] == 16 and summary["best_kernel_us"] > 0
    assert read_json(out / "run.json")["options"]["rpc_key"] == KEY


def _refused(argv, capsys) -> str:
    """`tune` in this process (these refusals come before any tuning): exit 2, one line."""
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_resume_checks_the_run_s_own_tracker(remote_run, tmp_path, capsys):
    """A resumed run re-reads its tracker from run.json, and checks it before tuning."""
    copy = tmp_path / "run"
    shutil.copytree(remote_run[0], copy)
    (copy / "tuners" / "metaschedule" / "summary.json").unlink()
    meta = read_json(copy / "run.json")
    meta["options"]["rpc_tracker"] = f"127.0.0.1:{_free_port()}"
    (copy / "run.json").write_text(json.dumps(meta))
    assert "cannot reach the RPC tracker" in _refused(["--resume", str(copy)], capsys)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rpc-tracker", "127.0.0.1:{dead}", "--rpc-key", KEY], "cannot reach the RPC tracker"),
        (
            ["--rpc-tracker", "{tracker}", "--rpc-key", "other"],
            "has no free server for key 'other'",
        ),
        (["--rpc-tracker", "localhost", "--rpc-key", KEY], "--rpc-tracker must be HOST:PORT"),
        (["--rpc-tracker", "{tracker}"], "--rpc-tracker HOST:PORT and --rpc-key KEY go together"),
    ],
)
def test_a_tracker_that_cannot_be_used_is_one_line_and_exit_2(
    tracker, args, message, tmp_path, capsys
):
    args = [a.format(dead=_free_port(), tracker=tracker[0]) for a in args]
    line = _refused(
        ["--tuners", "metaschedule", "--budget", "2", *args, "--out", str(tmp_path / "run"), *FAST],
        capsys,
    )
    assert message in line
    assert not (tmp_path / "run").exists()  # refused before the run folder is made


def test_a_wrong_kernel_on_a_server_is_recorded_wrong_and_never_timed(tracker, tmp_path):
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.s_tir.meta_schedule.runner import RunnerInput

    _, func = fused_function(WINDOW3, TargetSpec("llvm"))
    target = make_target("llvm")
    kernels = {"right": func, "unwritten": func.with_body(tvm.tirx.Evaluate(0))}
    paths = [str(tmp_path / f"{name}.so") for name in kernels]
    for (name, kernel), path in zip(kernels.items(), paths):
        compile_kernel(kernel, target, Path(path))
    protocol = KernelProtocol(number=1, repeat=1, min_repeat_ms=0, checks=1, time_limit_s=20)
    options = {"rpc_tracker": tracker[0], "rpc_key": KEY}
    with rpc.remote_runner(options, PoolKernel(WINDOW3, bias_count(func)), protocol) as runner:
        inputs = [RunnerInput(path, "cpu", ArgInfo.from_prim_func(func)) for path in paths]
        results = [future.result() for future in runner.run(inputs)]
    right, unwritten = [
        rpc.remote_record(path, {"status": "built", "path": path}, result)
        for path, result in zip(paths, results)
    ]
    assert right["status"] == "ok" and right["max_abs_err"] == 0 and results[0].run_secs
    assert unwritten["status"] == "wrong" and unwritten["reason"] == "output not written"
    assert results[1].run_secs is None and "output not written" in results[1].error_msg
    assert not any(os.path.exists(path) or os.path.exists(path + ".json") for path in paths)


# A network whose costliest kernel is a matmul (Optuna's template does not take it).
MATMUL_HEAD = "tests/fixtures/matmul_head.py:pool_then_linear"
MODEL_FAST = "--target llvm --processes 1 --blocks 2 --number 1 --repeat 2 --min-repeat-ms 0 "
MODEL_FAST = (MODEL_FAST + "--warmup-s 0 --peers torch-eager --tune-top 1").split()


@pytest.mark.slow
@pytest.mark.torch
def test_tune_model_measures_a_network_s_kernel_on_the_servers(tracker, tmp_path):
    address, servers = tracker
    out, before = tmp_path / "model", [_sessions(log) for log in servers]
    remote = ["--kernels", "any", "--budget", "8", "--rpc-tracker", address, "--rpc-key", KEY]
    tune("model", MATMUL_HEAD, *MODEL_FAST, *remote, "--out", str(out), check_exit=0)
    report = read_json(out / "report.json")
    ((name, summary),) = report["tuned"]["kernels"].items()
    rows = read_json(out / "tuners" / name / "metaschedule" / "trials.json")
    assert len(rows) == 8 and {row["runner"] for row in rows} == {f"rpc {address} key {KEY}"}
    measured = sum(row.get("reason") != "build error" for row in rows)
    # one session per measured candidate, none local
    assert sum(_sessions(log) for log in servers) - sum(before) == measured > 0
    valid = [row["kernel_us"] for row in rows if row["status"] == "ok"]
    assert summary["metaschedule"]["valid"] == len(valid) and summary["best"] == "metaschedule"
    assert summary["kernel_us"] == min(valid) > 0 and report["arms"]["tvm-tuned"]["correct"]
    assert (out / "report.md").exists()
    # Where it measured is no setting: a later command may measure on another tracker.
    assert "rpc" not in json.dumps(read_json(out / "run.json")["settings"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--tune-top", "0", "--rpc-tracker", "{tracker}", "--rpc-key", KEY], "give --tune-top"),
        (["--rpc-key", KEY], "--rpc-tracker HOST:PORT and --rpc-key KEY go together"),
        (["--rpc-tracker", "127.0.0.1:{dead}", "--rpc-key", KEY], "cannot reach the RPC tracker"),
    ],
)
def test_tune_model_refuses_a_tracker_it_cannot_use_in_one_line(
    tracker, args, message, tmp_path, capsys
):
    args = [a.format(dead=_free_port(), tracker=tracker[0]) for a in args]
    out = tmp_path / "run"
    assert message in _refused(
        ["model", MATMUL_HEAD, *MODEL_FAST, *args, "--out", str(out)], capsys
    )
    assert not out.exists()  # refused before the run folder is made


# A kernel sleeping 10 minutes on a server through `rpc.remote_runner`.
MEASURES_A_HANGING_KERNEL = """
import sys, time
sys.path.insert(0, "tests")
from tvm.s_tir.meta_schedule.arg_info import ArgInfo
from tvm.s_tir.meta_schedule.runner import RunnerInput
from conftest import WINDOW3
from pool_fusion_tuning.tuning.tuners.metaschedule import rpc
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.candidates.kernel import bias_count, fused_function
from pool_fusion_tuning.tuning.candidates.task import PoolKernel
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol
_, func = fused_function(WINDOW3, TargetSpec("llvm"))
protocol = KernelProtocol(number=1, repeat=1, min_repeat_ms=0, checks=1, time_limit_s=120)
options = {"rpc_tracker": sys.argv[1], "rpc_key": sys.argv[2]}
with rpc.remote_runner(options, PoolKernel(WINDOW3, bias_count(func)), protocol) as runner:
    runner.run([RunnerInput(sys.argv[3], "cpu", ArgInfo.from_prim_func(func))])
    time.sleep(600)
"""


def test_the_rpc_runner_s_workers_die_with_the_run_mid_session(tracker, tmp_path):
    """Killed mid-session, the run leaves no RPC worker waiting (last: it holds the server)."""
    import psutil
    from conftest import ROOT, assert_all_gone

    _, func = fused_function(WINDOW3, TargetSpec("llvm"))
    sleep = tvm.tirx.Evaluate(tvm.tirx.call_extern("int32", "sleep", 600))
    library = tmp_path / "hangs.so"
    compile_kernel(
        func.with_body(tvm.tirx.SeqStmt([sleep, func.body])), make_target("llvm"), library
    )
    address, servers = tracker
    before = sum(_sessions(log) for log in servers)
    run = subprocess.Popen(
        [sys.executable, "-c", MEASURES_A_HANGING_KERNEL, address, KEY, str(library)],
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while sum(_sessions(log) for log in servers) == before:
            assert run.poll() is None and time.monotonic() < deadline, "no session began"
            time.sleep(0.3)
        workers = psutil.Process(run.pid).children(recursive=True)
        assert workers, "the RPC runner started no worker"
        time.sleep(2)  # the worker is inside the session, waiting on the kernel
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=60)
        assert_all_gone(workers)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
