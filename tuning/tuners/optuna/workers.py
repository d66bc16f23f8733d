"""Workers of one shared Optuna study: `tune worker` processes, one GPU each."""

from __future__ import annotations

import os
import subprocess

import optuna

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.base.children import module_command, stop
from pool_fusion_tuning.tuning.candidates.evaluator import CandidateEvaluator
from pool_fusion_tuning.tuning.candidates.summary import budget_shares
from pool_fusion_tuning.tuning.tuners.space import Space
from pool_fusion_tuning.tuning.tuners.spec import RunOptions

from .optuna_study import STUDY_NAME, open_study
from .samplers import make_sampler
from .search_loop import OptunaSearch
from .search_summary import records
from .storages import CHILD_PASSWORD_ENV, password_for


def run_worker(
    case: Case,
    target: TargetSpec,
    identity: dict,
    url: str,
    name: str,
    budget: int,
    sampler: str,
    seed: int,
    progress=None,
    password_env: str | None = None,
) -> list[dict]:
    """One worker of a shared study: measure `budget` trials of its own, then stop."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = Space.for_target(case, target.tvm())
    study = open_study(url, name, make_sampler(sampler, seed), identity, password_env, create=False)
    with CandidateEvaluator(case, target) as evaluator:
        search = OptunaSearch(study, space, evaluator, progress, shared=True)
        search.run(budget, own=True)
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
