"""AlphaZero's policy-value network: the body every network here shares (``build_body``), then a
policy head (one logit per cell) and a Tanh value head."""

from __future__ import annotations

import torch
from torch import nn

from ttt.games import Game
from ttt.nets.structured import ACTIVATIONS, build_body, hidden_activation


class PolicyValueNet(nn.Module):
    """(N, cells) boards from the mover's view -> (N, cells) policy logits and (N,) values in [-1, 1].

    The trunk is ``ttt.nets.structured.build_body`` (PyTorch's default initialisation), then a policy
    head and a Tanh value head.
    """

    def __init__(self, game: Game, kind: str = "mlp", hidden: list[int] | tuple[int, ...] = (64, 64),
                 detectors: int = 4, bias: bool = True, tie_orbits: bool = False, dense_forward: bool = False,
                 activation: str = "tanh", playable: bool = False) -> None:
        super().__init__()
        network = {"kind": kind, "hidden": list(hidden), "detectors": detectors, "bias": bias,
                   "tie_orbits": tie_orbits, "dense_forward": dense_forward, "activation": activation,
                   "playable": playable}
        first, layers, width = build_body(network, game, xavier=False)
        self.trunk = nn.Sequential(first, ACTIVATIONS[activation][1](), *layers)
        self.policy = nn.Linear(width, game.num_cells)  # heads keep their biases: priors and values need offsets
        self.value = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)


def build_policy_value_net(game: Game, network: dict) -> PolicyValueNet:
    """The network a ``network`` config (kind, hidden, detectors, bias, tie_orbits, dense_forward,
    activation, playable: the keys of ``build_body``) describes, for ``game``."""
    return PolicyValueNet(game, str(network["kind"]), list(network["hidden"]), int(network.get("detectors", 4)),
                          bool(network.get("bias", True)), bool(network.get("tie_orbits", False)),
                          bool(network.get("dense_forward", False)), hidden_activation(network),
                          bool(network.get("playable", False)))
