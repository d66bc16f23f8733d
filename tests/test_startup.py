"""What makes a process of the project start fast does not change what it computes."""

import inspect
import subprocess
import sys

import pytest

from pool_fusion_tuning.baselines.script_frames import PSEUDO_FILES
from pool_fusion_tuning.tuning.base.children import process_pool
from pool_fusion_tuning.tuning.cli.main import _runs_no_pytorch


def _frames_seen_from(filename: str) -> list[tuple]:
    """`inspect.stack()` as TVMScript's parser takes it, from code whose file is `filename`."""
    code = compile("stack = inspect.stack()", filename, "exec")
    scope = {"inspect": inspect}
    exec(code, scope)
    stack = scope["stack"]
    return [(f.lineno, f.function, f.code_context) for f in stack if f.filename == filename]


def test_known_pseudo_files_give_the_frames_inspects_own_scan_gives():
    known = {name: inspect.modulesbyfile.pop(name) for name in PSEUDO_FILES}
    try:
        scanned = {name: _frames_seen_from(name) for name in PSEUDO_FILES}
    finally:
        inspect.modulesbyfile.update(known)
    for name in PSEUDO_FILES:
        assert _frames_seen_from(name) == scanned[name]
        frame = sys._getframe()
        assert inspect.getmodule(frame, name) is None


def _torch_state() -> str:
    if "torch" not in sys.modules:
        return "not imported"
    return "marked absent" if sys.modules["torch"] is None else "imported"


def _torch_and_tvm() -> tuple:
    import tvm

    from pool_fusion_tuning.baselines.torch_peer import torch_available

    return _torch_state(), torch_available(), tvm.__version__


def test_a_pool_that_runs_no_pytorch_starts_without_it_and_has_tvm():
    import tvm

    from pool_fusion_tuning.baselines.torch_peer import torch_available

    here = (_torch_state(), torch_available())
    for torch, want in ((False, ("marked absent", False)), (True, here)):
        with process_pool(1, torch=torch) as pool:
            assert pool.submit(_torch_and_tvm).result(timeout=300) == (*want, tvm.__version__)


_WITHOUT_TORCH = """
import sys
from pool_fusion_tuning.tuning.base.children import import_tvm
import_tvm(without_torch=True)
import tvm
from scipy import stats  # looks for PyTorch among the imported modules
print("torch" in sys.modules, round(float(stats.t.ppf(0.975, 3)), 3), bool(tvm.__version__))
print("ml_dtypes" in sys.modules)
from tvm import relax  # its constants import ml_dtypes when made
print(relax.const(1.5, "float16").value.numpy().item(), "ml_dtypes" in sys.modules)
"""


def test_tvm_imported_without_pytorch_and_ml_dtypes_imports_them_when_used():
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TORCH], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "3.182", "True", "False", "1.5", "True"]


@pytest.mark.parametrize(
    "argv, without",
    [
        (["--target", "llvm", "--budget", "0"], True),
        (["sweep", "--target=llvm"], True),
        (["worker", "--storage", "sqlite:///s.db", "--target", "llvm"], True),
        (["--target", "llvm", "--arms", "on,torch-eager"], False),
        (["--target", "llvm", "--arms=fixed+capture"], False),
        (["--budget", "0"], False),  # auto: CUDA where a GPU is visible
        (["--target", "cuda"], False),
        (["model", "torchvision:resnet18", "--target", "llvm"], False),
        (["report", "--target", "llvm"], False),
        ([], False),
    ],
)
def test_a_study_sweep_or_worker_on_llvm_naming_no_pytorch_arm_starts_without_it(argv, without):
    assert _runs_no_pytorch(argv) is without


# MetaSchedule's design spaces of a float16 matmul for CUDA (where the tensor-core rules ask for
# TVM's intrinsics by name) and of the same matmul for llvm, one trace per line.
_DESIGN_SPACES = """
import sys
import pool_fusion_tuning.baselines
if sys.argv[1] == "every":  # the package's __init__, as TVM ships it
    frames = "pool_fusion_tuning.baselines.script_frames"
    sys.meta_path = [f for f in sys.meta_path if type(f).__module__ != frames]
    import tvm.s_tir.tensor_intrin
import tvm
from tvm import te
from tvm.s_tir import meta_schedule as ms
from pool_fusion_tuning.baselines.pipeline import make_target
from pool_fusion_tuning.baselines.script_frames import import_intrinsics_for
a = te.placeholder((64, 64), "float16", name="a")
b = te.placeholder((64, 64), "float16", name="b")
k = te.reduce_axis((0, 64), name="k")
c = te.compute(
    (64, 64), lambda i, j: te.sum(a[i, k].astype("float32") * b[k, j].astype("float32"), axis=k)
)
for target in (make_target("cuda"), tvm.target.Target({"kind": "llvm", "num-cores": 2})):
    if sys.argv[1] == "on-demand":
        import_intrinsics_for(target)
    context = ms.TuneContext(te.create_prim_func([a, b, c]), target=target,
                             space_generator="post-order-apply", task_name="main", rand_state=1)
    for design in context.space_generator.generate_design_space(context.mod):
        print(str(design.trace).replace("\\n", " "))
print(sorted(m for m in sys.modules if m.startswith("tvm.s_tir.tensor_intrin.")))
"""


def test_tensor_intrinsics_imported_per_target_give_metaschedule_the_same_design_spaces():
    out = {}
    for intrinsics in ("every", "on-demand"):
        done = subprocess.run(
            [sys.executable, "-c", _DESIGN_SPACES, intrinsics],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        *out[intrinsics], out[f"{intrinsics} modules"] = done.stdout.splitlines()
    assert out["on-demand"] == out["every"]
    assert any("wmma" in trace for trace in out["every"])  # the tensor-core rules applied
    assert out["on-demand modules"] == "['tvm.s_tir.tensor_intrin.cuda']"
    assert "x86" in out["every modules"]
