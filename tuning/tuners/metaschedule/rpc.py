"""MetaSchedule's measurements on remote devices, through TVM's RPC tracker and `RPCRunner`.

Candidates are built here into shared libraries. RPCRunner sends each to a free server of the key
(one connection per server), where `kernel_check.check_and_time` checks it against the reference
computed here and times it with `time_evaluator`. RPCRunner hands back only times or an error line,
so the whole record returns in a JSON file beside the library, and a wrong result raises:
MetaSchedule never learns a time for it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pool_fusion_tuning.runfolder.store import read_json, write_json
from pool_fusion_tuning.tuning.base.children import die_with_parent
from pool_fusion_tuning.tuning.base.errors import TrackerError
from pool_fusion_tuning.tuning.candidates.builder import error_line
from pool_fusion_tuning.tuning.candidates.kernel_check import check_and_time
from pool_fusion_tuning.tuning.candidates.outcome import Reason, Status, failed
from pool_fusion_tuning.tuning.measure.protocol import KernelProtocol

if TYPE_CHECKING:
    from tvm.s_tir.meta_schedule.runner import RPCRunner

    from pool_fusion_tuning.tuning.candidates.task import KernelTask
    from pool_fusion_tuning.tuning.tuners.spec import RunOptions


def parse_tracker(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise TrackerError(f"--rpc-tracker must be HOST:PORT, got {text!r}")
    return host, int(port)


def free_servers(tracker: str, key: str, timeout_s: float = 10) -> int:
    """How many servers of `key` the tracker has free; TrackerError when none, or unreachable."""
    from tvm import rpc

    host, port = parse_tracker(tracker)
    default = socket.getdefaulttimeout()
    try:
        # TVM retries a refused connection for 60 s and waits forever on a port that is not a
        # tracker: a plain connection first, and a timeout on the tracker's socket.
        socket.create_connection((host, port), timeout=timeout_s).close()
        socket.setdefaulttimeout(timeout_s)
        summary = rpc.connect_tracker(host, port).summary()
    except (OSError, RuntimeError) as error:
        raise TrackerError(f"cannot reach the RPC tracker at {tracker} ({error})") from None
    finally:
        socket.setdefaulttimeout(default)
    count = sum(server["key"] == f"server:{key}" for server in summary["server_info"])
    if count == 0:
        raise TrackerError(
            f"the RPC tracker at {tracker} has no free server for key {key!r}; "
            f"on the device: python3 -m tvm.exec.rpc_server --tracker {tracker} "
            f"--key {key}"
        )
    return count


def label(options: RunOptions) -> str:
    """What trial rows say measured them."""
    return f"rpc {options['rpc_tracker']} key {options['rpc_key']}"


@contextlib.contextmanager
def remote_runner(options: RunOptions, task: KernelTask, protocol: KernelProtocol) -> RPCRunner:
    """An RPCRunner over the tracker's servers of the key, one connection to each, measuring
    candidates of `task`."""
    from tvm.s_tir.meta_schedule.runner import RPCConfig, RPCRunner

    host, port = parse_tracker(options["rpc_tracker"])
    # The server ends a session past its timeout: the remote form of the local time limit.
    config = RPCConfig(
        host, port, options["rpc_key"], session_timeout_sec=int(protocol.time_limit_s)
    )
    runner = RPCRunner(
        config,
        f_upload_module=_upload,
        f_alloc_argument=functools.partial(_alloc, task, protocol.checks),
        f_run_evaluator=functools.partial(_evaluate, task, protocol),
        max_workers=free_servers(options["rpc_tracker"], options["rpc_key"]),
        # A worker mid-session dies with the run.
        initializer=functools.partial(die_with_parent, os.getpid()),
    )
    try:
        yield runner
    finally:
        runner.pool.shutdown()


def remote_record(path: str, built: dict, ran) -> dict:
    """A candidate built here and measured remotely, as a local record; its files deleted."""
    measured = Path(path + ".json")
    if measured.exists():
        record = {**built, **read_json(measured)}
    else:  # the session failed before the check: no connection, a crash, or its timeout
        message = ran.error_msg or "(no message)"
        reason = Reason.TIME_LIMIT if "timeout" in message.lower() else Reason.RUN_ERROR
        record = {**built, **failed(reason, error_line(message))}
    record.pop("path", None)
    for leftover in (Path(path), measured):
        leftover.unlink(missing_ok=True)
    return record


# These run in RPCRunner's worker processes, a candidate at a time, with only RPCRunner's arguments:
# the upload notes where the candidate's record goes.
_CANDIDATE: dict = {}


def _upload(session, local_path: str, remote_path: str):
    from tvm.s_tir.meta_schedule.runner.rpc_runner import default_upload_module

    _CANDIDATE.update(record=local_path + ".json", started=time.monotonic())
    return default_upload_module(session, local_path, remote_path)


def _alloc(task: KernelTask, checks: int, session, device, args_info, alloc_repeat):
    """The task's inputs (not RPCRunner's random fill), one argument list per check."""
    return [task.upload(seed, device) for seed in range(checks)]


def _evaluate(
    task: KernelTask,
    protocol: KernelProtocol,
    session,
    module,
    device,
    evaluator_config,
    arguments,
) -> list[float]:
    record = check_and_time(module, device, task, protocol, arguments)
    record["run_s"] = time.monotonic() - _CANDIDATE["started"]
    write_json(Path(_CANDIDATE["record"]), record)
    if record["status"] != Status.OK:
        raise RuntimeError(f"{record['status']}: {record['reason']}")
    return [sample * 1e-6 for sample in record["samples_us"]]
