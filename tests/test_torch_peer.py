"""The PyTorch peer matches the NumPy reference and is timed like an arm (where torch exists:
it is an optional extra; the GPU machine has it)."""

import numpy as np
import pytest

from baselines.torch_peer import COMPILE_MODES, PeerArm
from tuning.harness import Protocol, check

torch = pytest.importorskip("torch")


def test_eager_peer_matches_the_reference_and_times(case):
    kind = "cuda" if torch.cuda.is_available() else "llvm"
    peer = PeerArm("torch-eager", case, kind)
    assert check(case, peer, 2)["correct"]
    samples = peer.timer(np.zeros(case.input_shape, "float32"),
                         Protocol(number=2, repeat=3, min_repeat_ms=1))()
    assert len(samples) == 3 and all(s > 0 for s in samples)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch.compile is timed on the GPU")
@pytest.mark.parametrize("name", COMPILE_MODES)
def test_compiled_peer_matches_the_reference(case, name):
    assert check(case, PeerArm(name, case, "cuda"), 2)["correct"]
