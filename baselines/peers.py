"""Every PyTorch peer, the one place a peer is listed: its name, report label, the function that
makes it, how its launches are issued, and the roles it plays.

A peer is another framework's version of what TVM compiles, checked and timed beside TVM's arms
(`torch_peer.py` holds the arm and timers). Everything that lists, defaults or pairs peers reads
this table. A new peer is one `Peer` in `PEERS` and one function that makes it
(`tests/test_peers.py` proves it with a toy peer). Nothing here imports PyTorch or TVM, so the
reports read it without either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A name's suffix for the whole call captured into one CUDA graph, for TVM's arms and the peers.
CAPTURE = "+capture"

Graph = Callable[..., Any]  # a function of torch tensors (a graph's tuple, a kernel's tensor)


class Treatment:
    """How a peer's launches are issued; a report holds a TVM arm against a peer only where
    both get the same (`reports/comparisons.py`)."""

    PLAIN = "plain"  # a call launches its kernels
    CAPTURED = "captured"  # the whole call captured once with torch.cuda.graph, replayed
    OWN_GRAPHS = "own CUDA graphs"  # the framework replays CUDA graphs it captured itself


class PeerRole:
    """What a peer takes part in (`Peer.roles`)."""

    CPU_DEFAULT = "cpu-default"  # a run on a CPU with PyTorch that names no arm times it
    CUDA_DEFAULT = "cuda-default"  # a run on CUDA with PyTorch that names no arm times it
    SWEEP = "sweep"  # `tune sweep` on a GPU with PyTorch times it on every Case
    MODEL = "model"  # `tune model --peers` may name it, and a model run naming none times it
    ROW_BENCH = "row-bench"  # `tuning.row_bench --peers` may name it, and times it by default
    INDUCTOR = "inductor"  # the reports hold TVM against its kernel (inductor's; one peer)


@dataclass(frozen=True)
class Peer:
    """One peer. `make` turns the graph into what the peer calls (importing PyTorch itself);
    `compiles`: its first call compiles with inductor (a build time, a warm-up worth taking
    early)."""

    name: str
    label: str
    make: Callable[[Graph], Graph]
    compiles: bool = False
    treatment: str = Treatment.PLAIN
    roles: frozenset[str] = frozenset()

    @property
    def captured(self) -> bool:
        """Whether the harness captures its whole call (`torch_peer.CapturedPeerArm`)."""
        return self.treatment == Treatment.CAPTURED


def eager(graph: Graph) -> Graph:
    """PyTorch eager: the graph as it is."""
    return graph


def _compiled(mode: str) -> Callable[[Graph], Graph]:
    def make(graph: Graph) -> Graph:
        import torch

        return torch.compile(graph, mode=mode)

    make.__doc__ = f"torch.compile in mode {mode!r}."
    return make


# torch.compile's modes: the default; "reduce-overhead", which replays CUDA graphs itself; and
# max-autotune without its CUDA graphs (those come from +capture, as for every arm).
compile_default = _compiled("default")
compile_reduce_overhead = _compiled("reduce-overhead")
compile_max_autotune = _compiled("max-autotune-no-cudagraphs")

PEERS: dict[str, Peer] = {
    peer.name: peer
    for peer in (
        Peer(
            "torch-eager",
            "PyTorch eager",
            eager,
            roles=frozenset({PeerRole.MODEL, PeerRole.ROW_BENCH}),
        ),
        Peer(
            "torch-compile",
            "torch.compile",
            compile_default,
            compiles=True,
            roles=frozenset(
                {
                    PeerRole.CPU_DEFAULT,
                    PeerRole.CUDA_DEFAULT,
                    PeerRole.SWEEP,
                    PeerRole.MODEL,
                    PeerRole.ROW_BENCH,
                    PeerRole.INDUCTOR,
                }
            ),
        ),
        Peer(
            "torch-compile-graphs",
            "torch.compile, reduce-overhead",
            compile_reduce_overhead,
            compiles=True,
            treatment=Treatment.OWN_GRAPHS,
        ),
        Peer(
            "torch-compile-max-autotune",
            "torch.compile, max-autotune",
            compile_max_autotune,
            compiles=True,
            roles=frozenset({PeerRole.CUDA_DEFAULT}),
        ),
        # PyTorch's counterparts of the TVM +capture arms: the whole call captured the same way.
        Peer(
            "torch-eager+capture",
            "PyTorch eager, captured whole",
            eager,
            treatment=Treatment.CAPTURED,
        ),
        Peer(
            "torch-compile+capture",
            "torch.compile, captured whole",
            compile_default,
            compiles=True,
            treatment=Treatment.CAPTURED,
            roles=frozenset({PeerRole.SWEEP}),
        ),
        Peer(
            "torch-compile-max-autotune+capture",
            "torch.compile, max-autotune, captured whole",
            compile_max_autotune,
            compiles=True,
            treatment=Treatment.CAPTURED,
        ),
    )
}


def peers_for(role: str) -> list[str]:
    """The peers that take part in `role` (a `PeerRole`), in the table's order."""
    return [name for name, peer in PEERS.items() if role in peer.roles]


def captured_peers() -> list[str]:
    """The peers whose whole call is captured: the counterparts of TVM's `+capture` arms."""
    return [name for name, peer in PEERS.items() if peer.captured]


def inductor_peer() -> str:
    """The peer the reports hold TVM's candidates against (its captured form: `+capture`)."""
    (name,) = peers_for(PeerRole.INDUCTOR)
    return name


def compiling(names) -> list[str]:
    """Those of `names` whose first call compiles (`Peer.compiles`), a warm-up worth taking
    before the trials."""
    return [name for name in names if name in PEERS and PEERS[name].compiles]
