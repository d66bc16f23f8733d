"""A network kernel's Optuna study in a storage others share (`tune model --tune-top N --storage
URL`): the study holds the kernel itself (its PrimFunc as TVM's JSON, its dtype) and its budget
beside the identity of the run that made it (model, target, device, kernel), so that `tune
worker --storage URL --study NAME` rebuilds the task without the network, measures it only on
the target and GPU it was made for, and stops once the study holds the kernel's budget."""

from __future__ import annotations

import json

import tvm

from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.runfolder.store import RunError
from pool_fusion_tuning.tuning.candidates.task import KernelTask, ModelKernel

# The study's user attributes that hold the kernel (`record_kernel`).
KERNEL, FUNCTION, DTYPE, BUDGET = "kernel", "function", "dtype", "budget"


def record_kernel(study, task: KernelTask, budget: int) -> None:
    """What a worker needs to measure the kernel, as the study's user attributes."""
    if not isinstance(task, ModelKernel):  # the Case's study: its workers are given --case
        raise TypeError(f"a kernel study holds a network's kernel, not {type(task).__name__}")
    attrs = {
        KERNEL: task.name,
        FUNCTION: tvm.ir.save_json(task.func),
        DTYPE: task.dtype,
        BUDGET: budget,
    }
    for name, value in attrs.items():
        if study.user_attrs.get(name) != value:
            study.set_user_attr(name, value)


def stored_kernel(study) -> ModelKernel | None:
    """The network kernel a study holds (None: the Case's study, which holds none)."""
    attrs = study.user_attrs
    if FUNCTION not in attrs:
        return None
    return ModelKernel(attrs[KERNEL], tvm.ir.load_json(attrs[FUNCTION]), attrs[DTYPE])


def stored_budget(study) -> int:
    return int(study.user_attrs[BUDGET])


def kernel_identity(study, name: str, target: TargetSpec) -> dict:
    """The identity a worker on `target` joins the kernel's study with: the study's own, where
    the study was made for this target and device; else refused in one line."""
    made = json.loads(study.user_attrs.get("identity") or "{}")
    here = {"target": target.kind, "device": target.device}
    there = {key: made.get(key) for key in here}
    if there != here:
        raise RunError(
            f"study {name!r} was made for {there['target']} on {there['device']}, and this "
            f"worker measures on {here['target']} on {here['device']}: join it from a machine "
            "like the one that made it"
        )
    return made
