"""AlphaZero's policy-value network: the body every network here shares (``build_body``), then a
policy head (one logit per cell) and a Tanh value head."""

from __future__ import annotations

import torch
from torch import nn

from ttt.games import Game
from ttt.nets.structured import ACTIVATIONS, StructuredLayer, build_body, hidden_activation

POLICY_HEADS = ("dense", "lines")


class PolicyValueNet(nn.Module):
    """(N, cells) boards from the mover's view -> (N, cells) policy logits and (N,) values in [-1, 1].

    The trunk is ``ttt.nets.structured.build_body`` (PyTorch's default initialisation), then a policy
    head and a Tanh value head.

    ``policy_head="lines"`` (structured trunks only) adds to the policy logits a line layer run backwards:
    each line detector's activation reaches the cells of its own line through a (D x k) block of
    weights, the transpose of the detector layer's form (a second ``StructuredLayer``). What a line's
    detectors see (three of one player's pieces and an empty cell, say) then raises or lowers the logit
    of its cells directly, not through the fully connected layers.
    """

    def __init__(self, game: Game, kind: str = "mlp", hidden: list[int] | tuple[int, ...] = (64, 64),
                 detectors: int = 4, bias: bool = True, tie_orbits: bool = False, dense_forward: bool = False,
                 activation: str = "tanh", playable: bool = False, policy_head: str = "dense",
                 tie_lines: bool = False) -> None:
        super().__init__()
        if policy_head not in POLICY_HEADS:
            raise ValueError(f"unknown policy head {policy_head!r}; choose one of {', '.join(POLICY_HEADS)}")
        if policy_head == "lines" and kind != "structured":
            raise ValueError("policy_head='lines' needs a structured network (its line detectors)")
        network = {"kind": kind, "hidden": list(hidden), "detectors": detectors, "bias": bias,
                   "tie_orbits": tie_orbits, "dense_forward": dense_forward, "activation": activation,
                   "playable": playable, "tie_lines": tie_lines}
        first, layers, width = build_body(network, game, xavier=False)
        self.trunk = nn.Sequential(first, ACTIVATIONS[activation][1](), *layers)
        self.policy = nn.Linear(width, game.num_cells)  # heads keep their biases: priors and values need offsets
        self.value = nn.Linear(width, 1)
        self.line_policy = None
        if policy_head == "lines":  # unit (l, d) -> the cells of line l: the detector layer's blocks, transposed
            self.line_policy = StructuredLayer(torch.tensor(game.lines), game.num_cells, int(detectors), dense=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.line_policy is None:
            h = self.trunk(x)
            return self.policy(h), torch.tanh(self.value(h)).squeeze(-1)
        lines = self.trunk[1](self.trunk[0](x))  # the line detectors' activations
        h = self.trunk[2:](lines)
        logits = self.policy(h) + lines @ self.line_policy.dense_weight()
        return logits, torch.tanh(self.value(h)).squeeze(-1)


def build_policy_value_net(game: Game, network: dict, policy_head: str = "dense") -> PolicyValueNet:
    """The network a ``network`` config (kind, hidden, detectors, bias, tie_orbits, dense_forward,
    activation, playable, tie_lines: the keys of ``build_body``) describes, for ``game``, with the policy head
    ``policy_head`` (``PolicyValueNet``)."""
    return PolicyValueNet(game, str(network["kind"]), list(network["hidden"]), int(network.get("detectors", 4)),
                          bool(network.get("bias", True)), bool(network.get("tie_orbits", False)),
                          bool(network.get("dense_forward", False)), hidden_activation(network),
                          bool(network.get("playable", False)), policy_head, bool(network.get("tie_lines", False)))
