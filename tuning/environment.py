"""What a run records about where it ran: the versions, the GPU, its clocks and the target."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys

import tvm
import tvm_ffi

from pool_fusion_tuning.baselines.rules import rule_hash


def _nvidia_smi(query: str) -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    done = subprocess.run(
        ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout else None


def sm_clock_mhz() -> str | None:
    return _nvidia_smi("clocks.sm")


def gpu_visible() -> bool:
    return bool(tvm.cuda(0).exist)


def gpu_arch() -> str:
    return "sm_" + str(tvm.cuda(0).compute_version).replace(".", "")


def capture(target) -> dict:
    """The machine and software a run measures on (the run folder's environment.json); on CUDA
    the GPU, its driver and runtime, and the SM clock before the run."""
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "tvm": tvm.__version__,
        "tvm_ffi": tvm_ffi.__version__,
        "target": str(target.export()) if hasattr(target, "export") else str(target),
        "target_kind": target.kind.name,
        "rule_sha256": rule_hash(),  # the window rule measured: PR.md cites only the shipped
    }
    torch = _installed("torch")
    if torch is not None:  # the PyTorch peers' version, read without importing it
        env["torch"] = torch
    if target.kind.name == "cuda":
        device = tvm.cuda(0)
        env.update(
            {
                "gpu": device.device_name,
                "compute_capability": device.compute_version,
                "driver": _nvidia_smi("driver_version"),
                "cuda_runtime": _cuda_runtime_version(),
                "sm_clock_before": sm_clock_mhz(),
            }
        )
    return env


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cuda_runtime_version() -> str | None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1] if out else None
