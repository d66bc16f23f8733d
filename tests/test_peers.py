"""One way in to the PyTorch peers: a new peer is one function and one entry of
`baselines.peers.PEERS`. A toy peer (tests/fixtures/toy_peer.py: eager under inference mode),
registered so, is seen by the command line's choices and defaults, the sweep, model runs, the
row bench, the harness and the reports' pairing; no other file names it."""

import numpy as np
import pytest
from fixtures.toy_peer import TOY

from pool_fusion_tuning.baselines.peers import PEERS, PeerRole, inductor_peer, peers_for
from pool_fusion_tuning.baselines.row_report import row_bench_markdown
from pool_fusion_tuning.reports.comparisons import ratio_pairs
from pool_fusion_tuning.tuning.cli import choices
from pool_fusion_tuning.tuning.cli.commands import Parser
from pool_fusion_tuning.tuning.cli.model_options import add_shared
from pool_fusion_tuning.tuning.cli.options import parser
from pool_fusion_tuning.tuning.models.model_plan import ModelPlan
from pool_fusion_tuning.tuning.sweep import sweep_arms

pytestmark = pytest.mark.torch
NAME = TOY.name


@pytest.fixture
def with_toy(monkeypatch):
    """The table with the toy's entry, after every peer already there."""
    monkeypatch.setitem(PEERS, NAME, TOY)
    monkeypatch.setattr(choices, "torch_available", lambda: True)


def test_the_command_line_takes_it_and_runs_it_by_default(with_toy):
    assert choices.arm_names(f"serial,{NAME}") == ["serial", NAME]
    assert NAME in parser("tune").format_help()
    assert choices.default_arms("llvm")[-1] == NAME
    assert choices.default_arms("cuda")[-1] == NAME


def test_the_sweep_times_it_on_a_gpu(with_toy):
    assert sweep_arms("cuda")[-1] == NAME
    assert NAME not in sweep_arms("llvm")  # the sweep's peers are a GPU's, as inductor's


def test_a_model_run_times_it_unless_told_otherwise(with_toy):
    model = Parser(prog="tune model")
    add_shared(model, trials=3)
    assert model.parse_args([]).peers.split(",") == peers_for(PeerRole.MODEL)
    assert NAME in peers_for(PeerRole.MODEL)
    assert ModelPlan.__dataclass_fields__["peers"].default_factory()[-1] == NAME  # type: ignore


def test_the_harness_makes_it_and_it_is_right(with_toy, case):
    from pool_fusion_tuning.baselines.torch_peer import peer_arm
    from pool_fusion_tuning.tuning.measure.harness import check

    assert check(case, peer_arm(NAME, case, "llvm"), 2)["correct"]


def test_the_row_bench_times_it_and_its_report_labels_it(with_toy):
    from pool_fusion_tuning.baselines.row_kernels import SOFTMAX, RowKernel
    from pool_fusion_tuning.tuning.row_bench import measure

    row = measure(RowKernel("softmax-2x3x49", "", SOFTMAX, (2, 3, 49)), "llvm", [NAME])
    peer = row["schedules"][NAME]
    assert peer["correct"] and peer["median_us"] > 0
    result = {
        "environment": {"run_on": "llvm", "date": "today", "tvm": "0.27", "torch": "2"},
        "tolerance": 1e-4,
        "kernels": [row],
    }
    assert f"warp / {TOY.label} |" in row_bench_markdown(result)


def test_the_reports_pair_it_like_for_like(with_toy):
    timed = ["off", "on", "fixed", "fixed+capture", inductor_peer(), NAME]
    pairs = ratio_pairs(timed, [inductor_peer(), NAME], {})
    assert ("fixed", NAME) in pairs and ("fixed+capture", NAME) not in pairs
    assert ("off", NAME) not in pairs  # the baselines are not candidates


def test_without_the_entry_nothing_knows_it():
    assert NAME not in PEERS and NAME not in choices.default_arms("cuda")
    with pytest.raises(Exception, match="unknown arm"):
        choices.arm_names(NAME)
    assert np.all([NAME not in peers_for(role) for role in vars(PeerRole) if role.isupper()])
