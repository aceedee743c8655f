"""Move selection by afterstate values: one forward pass over every legal afterstate of a batch of
games, the rules' exact values in place of the estimates they know (``ttt.games.exact.Rules``), and
epsilon-greedy choice. The trainer, its frozen opponents and the trained player all choose this way."""

from __future__ import annotations

import numpy as np
import torch

from ttt.device import module_device
from ttt.games import BatchedGames, random_legal_actions
from ttt.games.arrays import NUMPY
from ttt.games.exact import Rules, rule_values
from ttt.games.threats import MoveTactics, completing_moves, move_tactics
from ttt.nets.structured import ValueNet


@torch.inference_mode()
def afterstate_values(net: ValueNet, games: BatchedGames, rows: np.ndarray, rules: Rules = Rules(),
                      tactics: MoveTactics | None = None) -> torch.Tensor:
    """(len(rows), cells) values of every legal afterstate of the games ``rows``, -inf where illegal.

    A tensor where the games are: on the CPU for numpy games, else on their device.

    One forward pass, no autograd; the board is seen from the player to move, whose piece is +1.
    ``rules`` replace the estimates of the afterstates the rules value exactly; ``tactics``
    (``move_tactics`` of these rows) is computed when needed and not given.
    """
    xp = games.xp
    board, to_play, legal = games.board[rows], games.to_play[rows], games.legal_mask()[rows]
    views = board * to_play[:, None]
    device = module_device(net)

    def tensor(x):  # the games' arrays as tensors where the network is
        return xp.to_tensor(x).to(device)

    values = net.afterstate_values(tensor(xp.astype(views, "float32")), tensor(legal))
    if rules.needs_tactics():
        t = move_tactics(board, to_play, legal, games.game) if tactics is None else tactics
        if rules.forks or rules.threats > 0:
            exact, known = rule_values(views, t, rules.gamma, games.game, defence=games.game.num_cells,
                                       threats=rules.threats)
            values = torch.where(tensor(known), tensor(exact), values)
        if rules.losses:
            values.masked_fill_(tensor(t.loss), -1.0)
    if rules.wins:
        values.masked_fill_(tensor(completing_moves(board, to_play, legal, games.game)), 1.0)
    return values.to(games.device or "cpu")


def epsilon_greedy(values: torch.Tensor, epsilon: float, rng, xp=NUMPY):
    """Argmax of each row (illegal entries are -inf), or with probability epsilon a random legal move.

    numpy actions and a numpy ``rng`` by default; with ``xp`` a device's arrays, tensors there and a
    ``torch.Generator``.
    """
    values = xp.from_tensor(values)
    actions = values.argmax(1)
    if epsilon > 0:
        explore = xp.random(rng, len(actions)) < epsilon
        if explore.any():
            actions[explore] = random_legal_actions(values[explore] > float("-inf"), rng)
    return actions

