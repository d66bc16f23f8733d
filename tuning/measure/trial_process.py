"""A trial's fresh process, started with the run (`TrialProcess`): it imports TVM (and what
torch.compile loads, for PyTorch peers), then waits for its trial (`harness.run_trial`) without
touching the GPU, so its start-up overlaps the tuners rather than the comparison, and it is still
fresh where it counts (its own CUDA context, allocator, caches). The trial's record says where its
time went (`wall_s`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue as queue_module
import signal
import sys
import time
from typing import TYPE_CHECKING

from pool_fusion_tuning.runfolder.records import Trial
from pool_fusion_tuning.tuning.base.children import die_with_parent, import_tvm, stop
from pool_fusion_tuning.tuning.base.errors import ProcessDied

if TYPE_CHECKING:
    from .harness import TrialJob


def _trial_entry(jobs, replies, warm_peers: tuple, torch: bool, parent: int, spawned_at: float):
    """A trial's process: imports (TVM without PyTorch where the trial runs none), then its
    trial when it comes (None: no trial, exit)."""
    die_with_parent(parent)
    import_tvm(without_torch=not torch)
    from .harness import run_trial

    imported = time.time()  # the process and the imports its entry needs (TVM)
    if warm_peers:
        from pool_fusion_tuning.baselines.torch_peer import load_compilers

        try:
            load_compilers(warm_peers)
        except Exception:  # only a head start: the trial makes its peers and says what fails
            pass
    # Whether anything before the trial made a CUDA context (it must not, beside the tuners'
    # measurements); the record says so.
    cuda_before_trial = _cuda_initialized()
    ready = time.time()
    job = jobs.get()
    if job is None:
        os._exit(0)
    started = time.time()
    message: tuple
    try:
        result = run_trial(
            job,
            progress=lambda message: replies.put(("say", message)),
            step=lambda done, total: replies.put(("step", done, total)),
        )
        result["wall_s"].update(
            startup_s=imported - spawned_at,
            compiler_import_s=ready - imported,
            waited_s=started - ready,
        )
        result["cuda_before_trial"] = cuda_before_trial
        message = ("ok", result)
    except BaseException as error:  # reported to the parent, which fails the run loudly
        message = ("error", f"{type(error).__name__}: {error}")
    replies.put(message)
    # The trial is over once its message is out: ending without tearing down PyTorch, CUDA and TVM
    # saves the next trial seconds.
    replies.close()
    replies.join_thread()
    os._exit(0)


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_initialized())


class TrialProcess:
    """A trial's fresh process, started now and given its trial later (`run`). `warm_peers`: the
    PyTorch peers it will time, whose compiler it imports while waiting; `torch`: whether the
    trial may run PyTorch at all."""

    def __init__(self, index: int, warm_peers: tuple = (), torch: bool = True):
        context = multiprocessing.get_context("spawn")
        self.index = index
        self._jobs, self._replies = context.Queue(), context.Queue()
        self._process = context.Process(
            target=_trial_entry,
            args=(self._jobs, self._replies, tuple(warm_peers), torch, os.getpid(), time.time()),
        )
        self._process.start()

    def run(self, job: TrialJob, say=None, step=None) -> Trial:
        """Run the trial and return its record. `say` and `step` hear its progress, as
        `run_trial` gives it."""
        self._jobs.put(job)
        listeners = {"say": say, "step": step}
        try:
            while True:
                try:
                    kind, *payload = self._replies.get(timeout=1)
                except queue_module.Empty:
                    if not self._process.is_alive():
                        raise ProcessDied(f"trial {self.index}'s process {_ended(self._process)}")
                    continue
                if kind in listeners:
                    if listeners[kind] is not None:
                        listeners[kind](*payload)
                    continue
                status, payload = kind, payload[0]
                break
        except BaseException:  # Ctrl-C or an error here: the trial is not waited for
            self.stop()
            raise
        self._process.join()
        if status != "ok":
            raise RuntimeError(f"trial {self.index} failed: {payload}")
        return payload

    def stop(self) -> None:
        stop(self._process)


def _ended(process) -> str:
    """How a process that never reported ended, in words."""
    code = process.exitcode
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name} before it reported"
    return f"exited with status {code} before it reported"


class TrialProcesses:
    """The run's trial processes, one per trial left, started at once from the thread that will
    use them (a child dies with its starting thread); any unused is stopped on leaving."""

    def __init__(self, indices: list[int], warm_peers: tuple = (), torch: bool = True):
        self._torch = torch
        self._waiting = {index: TrialProcess(index, warm_peers, torch) for index in indices}

    def take(self, index: int, warm_peers: tuple = ()) -> TrialProcess:
        return self._waiting.pop(index, None) or TrialProcess(index, warm_peers, self._torch)

    def __enter__(self) -> "TrialProcesses":
        return self

    def __exit__(self, *exc) -> None:
        for process in self._waiting.values():
            process.stop()
        self._waiting.clear()


def run_trial_process(
    job: TrialJob, say=None, step=None, process: TrialProcess | None = None
) -> Trial:
    """Run one trial in a fresh process (`process`, started earlier, or a new one); `say` and
    `step` hear its progress, as `run_trial` gives it."""
    process = process or TrialProcess(job.index, job.peers)
    return process.run(job, say, step)
