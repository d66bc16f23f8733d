"""Workers of one shared Optuna study, the Case's or a network kernel's: `tune worker`
processes, one GPU each."""

from __future__ import annotations

import os
import subprocess

import optuna

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.runfolder.store import run_identity
from pool_fusion_tuning.tuning.base.children import module_command, stop
from pool_fusion_tuning.tuning.base.errors import UsageError
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.summary import budget_shares
from pool_fusion_tuning.tuning.candidates.task import KernelTask
from pool_fusion_tuning.tuning.tuners.space import Space
from pool_fusion_tuning.tuning.tuners.spec import RunOptions

from .kernel_study import kernel_identity, stored_budget, stored_kernel
from .optuna_study import STUDY_NAME, claim, open_study
from .samplers import make_sampler
from .search_loop import OptunaSearch
from .search_summary import records
from .storages import CHILD_PASSWORD_ENV, password_for


def run_worker(
    case: Case | None,
    target: TargetSpec,
    url: str,
    name: str,
    budget: int,
    sampler: str,
    seed: int,
    progress=None,
    password_env: str | None = None,
) -> list[dict]:
    """One worker of a shared study: measure `budget` trials of its own, then stop. The study
    of a network's kernel (`kernel_study.py`) holds its task, so `case` is None there; a
    Case's study holds none, and the worker tunes `case` (the default Case where None). Only
    a study made for this target and device (and Case) is joined."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(url, name, make_sampler(sampler, seed), None, password_env, create=False)
    kernel = stored_kernel(study)
    subject: Case | KernelTask
    if kernel is not None:
        if case is not None:
            raise UsageError(
                f"study {name!r} holds the network kernel {kernel.name}, which the worker "
                "measures: give no --case"
            )
        subject, cap = kernel, stored_budget(study)
        space = Space.for_function(kernel.func, target.tvm())
        identity = kernel_identity(study, name, target)
    else:
        subject, cap = case or Case(), None
        space = Space.for_target(subject, target.tvm())
        identity = run_identity(subject.to_dict(), target.kind, target.device)
    claim(study, name, identity)
    with CandidateEvaluator(subject, target) as evaluator:
        search = OptunaSearch(study, space, evaluator, progress, shared=True)
        search.run(budget, own=True, cap=cap)
    return [row for row in records(study) if row["number"] in search.mine]


def run_workers(
    url: str, case: Case, target: TargetSpec, remaining: int, workers: int, options: RunOptions
) -> None:
    """`tune --workers K`: K `tune worker` processes share the remaining budget, one GPU each."""
    shares = budget_shares(remaining, workers)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    password = password_for(url, options.get("storage_password_env"))
    gpus = visible.split(",") if visible else [str(i) for i in range(workers)]
    processes = []
    for index, share in enumerate(s for s in shares if s > 0):
        env = dict(os.environ)
        if target.is_cuda:
            env["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
        if password:  # in the environment, not on the command line that `ps` shows
            env[CHILD_PASSWORD_ENV] = password
        command = module_command(
            "pool_fusion_tuning",
            "worker",
            "--storage",
            url,
            "--study",
            options.get("study", STUDY_NAME),
            "--budget",
            str(share),
            "--target",
            target.kind,
            "--sampler",
            options.get("sampler", "tpe"),
            "--seed",
            str(options.get("seed", 0) + index),
            "--parent-pid",
            str(os.getpid()),
            *(["--storage-password-env", CHILD_PASSWORD_ENV] if password else []),
            "--case",
            *[f"{k}={v}" for k, v in case.to_dict().items()],
        )
        processes.append(subprocess.Popen(command, env=env))
    try:
        failed = [p.args for p in processes if p.wait() != 0]
    except BaseException:  # Ctrl-C or SIGTERM: the workers stop with the run
        for process in processes:
            stop(process)
        raise
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(processes)} Optuna workers failed")
