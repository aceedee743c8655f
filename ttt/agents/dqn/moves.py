"""Move selection by afterstate values: one forward pass over every legal afterstate of a batch of
games, the rules' exact values in place of the estimates they know (``ttt.games.exact.Rules``), and
epsilon-greedy choice. The trainer, its frozen opponents and the trained player all choose this way.
A network with a rank head (``agent.parts.labels.rank_head``) moves by that head's order where the rules are silent
(``move_scores``); its values are still the value head's."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ttt.device import module_device
from ttt.games import BatchedGames, random_legal_actions
from ttt.games.arrays import NUMPY
from ttt.games.exact import GAMMA, Rules, exact_values
from ttt.games.threats import MoveTactics
from ttt.nets.structured import ValueNet


@torch.inference_mode()
def selection_values(net: ValueNet, games: BatchedGames, rows: np.ndarray, rules: Rules = Rules(),
                     tactics: MoveTactics | None = None, *, gamma: float = GAMMA) -> torch.Tensor:
    """(len(rows), cells) values of every legal afterstate of the games ``rows`` as move selection sees
    them: the network's ``afterstate_values`` with the rules' exact values in place, -inf where illegal.

    A tensor where the games are: on the CPU for numpy games, else on their device.

    One forward pass, no autograd; the board is seen from the player to move, whose piece is +1.
    ``rules`` replace the estimates of the afterstates the rules value exactly; ``tactics``
    (``move_tactics`` of these rows) is computed when needed and not given; ``gamma``, the learner's
    discount, values the forks and threat chains. The values are the value head's; move selection takes
    its order from ``move_scores``.
    """
    return move_scores(net, games, rows, rules, tactics, gamma=gamma)[1]


@torch.inference_mode()
def move_scores(net: ValueNet, games: BatchedGames, rows: np.ndarray, rules: Rules = Rules(),
                tactics: MoveTactics | None = None, *, gamma: float = GAMMA) -> tuple[torch.Tensor, torch.Tensor]:
    """``(order, values)`` of every legal afterstate of the games ``rows``, each (len(rows), cells),
    -inf where illegal: move selection takes the argmax of ``order``; ``values`` are the value head's
    with the rules' exact values in place (``selection_values``), what the TD(0) targets bootstrap from.

    Without a rank head ``order`` is ``values``. With one (``ValueNet.rank``) the rules still decide
    what they know and the rank head orders the rest: an afterstate the rules value exactly above 0 (a
    win, a fork, a threat chain) ranks above every other, by its value; one below 0 (a loss, an
    opponent's fork) below every other; the rest by the rank head's score.
    """
    xp = games.xp
    board, to_play, legal = games.board[rows], games.to_play[rows], games.legal_mask()[rows]
    views = board * to_play[:, None]
    device = module_device(net)

    def tensor(x):  # the games' arrays as tensors where the network is
        return xp.to_tensor(x).to(device)

    values, ranks = net.afterstate_scores(tensor(xp.astype(views, "float32")), tensor(legal))
    rule, known = exact_values(board, to_play, legal, games.game, rules, gamma, tactics)
    known = tensor(known)
    exact = torch.where(known, tensor(rule), torch.full_like(values, float("nan")))  # the rules' values, else NaN
    values = torch.where(known, exact, values)
    if ranks is None:
        order = values
    else:  # exact values beyond +-2, the rank head's scores squashed into (-1, 1) between them
        order = torch.where(known, exact + 2 * exact.sign(), F.softsign(ranks)).masked_fill(ranks == float("-inf"),
                                                                                             float("-inf"))
    device = games.device or "cpu"
    return order.to(device), values.to(device)


def epsilon_greedy(values: torch.Tensor, epsilon: float, rng, xp=NUMPY):
    """Argmax of each row (illegal entries are -inf), or with probability epsilon a random legal move.

    numpy actions and a numpy ``rng`` by default; with ``xp`` a device's arrays, tensors there and a
    ``torch.Generator``.
    """
    return epsilon_greedy_parts(values, [(slice(None), epsilon, rng)], xp)


def epsilon_greedy_parts(values: torch.Tensor, parts, xp=NUMPY):
    """``epsilon_greedy`` of each part of the rows, the argmax of every row taken at once: ``parts`` are
    ``(rows, epsilon, rng)``, ``rows`` a slice (the games of one run), each part drawing from its own
    ``rng`` as ``epsilon_greedy`` of its rows alone would."""
    values = xp.from_tensor(values)
    actions = values.argmax(1)
    for rows, epsilon, rng in parts:
        mine = actions[rows]  # a view: writing into it writes the actions
        if epsilon > 0:
            explore = xp.random(rng, len(mine)) < epsilon
            if explore.any():
                mine[explore] = random_legal_actions(values[rows][explore] > float("-inf"), rng)
    return actions

