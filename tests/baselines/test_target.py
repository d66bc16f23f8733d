"""The target in one form: what run.json has stored reads back into a `TargetSpec` and writes
out the same, the committed H200 run's included; a wrong target is refused on construction."""

import pickle
import tarfile

import pytest
from conftest import ROOT, read_json

from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.tuning.plan import RunPlan


def test_the_committed_h200_run_reads_back_and_writes_the_same_target(tmp_path):
    with tarfile.open(ROOT / "reports" / "h200" / "run.tar.xz") as stored:
        stored.extractall(tmp_path)
    meta = read_json(tmp_path / "run" / "run.json")
    plan = RunPlan.of(meta)
    assert plan.target == TargetSpec("cuda", "sm_90", meta["identity"]["device"])
    assert plan.meta()["target_spec"] == meta["target_spec"]
    assert plan.identity == meta["identity"]


def test_json_form_and_tvm_target():
    cuda = TargetSpec.of_json({"kind": "cuda", "arch": "sm_80"}, "A100 sm_80")
    assert cuda.is_cuda and cuda.to_json() == {"kind": "cuda", "arch": "sm_80"}
    assert cuda.tvm().kind.name == "cuda" and cuda.tvm().arch == "sm_80"
    assert cuda.tvm() is cuda.tvm()  # made once per (kind, arch)
    llvm = TargetSpec("llvm", device="cpu x86_64")
    assert not llvm.is_cuda and llvm.to_json() == {"kind": "llvm"}
    assert llvm.tvm().kind.name == "llvm"
    assert TargetSpec("cuda").arch == "sm_90"  # the arch every run on the H200 stored
    assert pickle.loads(pickle.dumps(llvm)) == llvm  # it crosses into child processes


@pytest.mark.parametrize(
    "kind, arch, message",
    [("rocm", None, "unknown target 'rocm'"), ("llvm", "sm_90", "is for a cuda target")],
)
def test_a_wrong_target_is_refused(kind, arch, message):
    with pytest.raises(ValueError, match=message):
        TargetSpec(kind, arch)
