"""The PyTorch peers match the NumPy reference and are timed like an arm, in every figure
(where torch exists: it is an optional extra; the GPU machine has it). On the GPU machine:
`python3 -m pytest tests/test_torch_peer.py tests/test_capture.py tests/test_gpu_timer.py`."""

import numpy as np
import pytest
from conftest import DEFAULT

from pool_fusion_tuning.baselines.peers import PEERS, captured_peers
from pool_fusion_tuning.baselines.reference import random_input, reference
from pool_fusion_tuning.baselines.torch_peer import PeerArm, peer_arm
from pool_fusion_tuning.tuning.measure.harness import check
from pool_fusion_tuning.tuning.measure.protocol import Protocol

pytestmark = pytest.mark.torch
QUICK = Protocol(number=2, repeat=3, min_repeat_ms=1)
# max-autotune spends a while autotuning: the default Case only.
SLOW = "torch-compile-max-autotune"


def _times_every_figure(peer, case):
    x = np.zeros(case.input_shape, "float32")
    for timer in (peer.timer, peer.python_timer):
        samples = timer(x, QUICK)()
        assert len(samples) == 3 and all(s > 0 for s in samples)


def test_eager_peer_matches_the_reference_and_times(case):
    import torch

    kind = "cuda" if torch.cuda.is_available() else "llvm"
    peer = PeerArm("torch-eager", case, kind)
    assert check(case, peer, 2)["correct"]
    _times_every_figure(peer, case)


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n, p in PEERS.items() if p.compiles and not p.captured])
def test_compiled_peer_matches_the_reference(case, name):
    if name == SLOW and case != DEFAULT:
        pytest.skip("max-autotune: the default Case only")
    peer = PeerArm(name, case, "cuda")
    assert check(case, peer, 2)["correct"]
    _times_every_figure(peer, case)


@pytest.mark.gpu
@pytest.mark.parametrize("name", captured_peers())
def test_a_captured_peer_replays_the_right_answer_for_every_input(case, name):
    if name.startswith(SLOW) and case != DEFAULT:
        pytest.skip("max-autotune: the default Case only")
    peer = peer_arm(name, case, "cuda")
    import torch

    # Three inputs through one captured graph: each is copied into the static input.
    assert check(case, peer, 3)["correct"]
    x = random_input(case, 7)
    got = peer.python_call(torch.from_numpy(x).cuda())
    peer.sync()
    for g, w in zip(got, reference(case, x)):
        np.testing.assert_allclose(g.cpu().numpy(), w, rtol=2e-4, atol=2e-5)
    _times_every_figure(peer, case)
