"""Exact values the rules give to afterstates, for many boards at once.

A winning move's afterstate is worth +1, a move that lets the opponent win at once -1, a fork (two
winning cells the opponent cannot both block) ``gamma``, and a move that wins through a chain of d
forcing threats ending in a fork ``gamma**(d+1)``; the same values with the sign turned for the
opponent's. ``Rules`` says which of them a player puts in place of its estimates when it chooses a
move; ``rule_values`` computes them, with the discount ``gamma`` of the learner whose estimates they
replace (``ttt.games.threats`` answers the one- and two-move questions).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ttt.games.arrays import arrays_of
from ttt.games.rules import Game
from ttt.games.threats import MoveTactics, completing_moves, move_tactics, playable, threat_depths

GAMMA = 0.9  # the discount by default: of the dqn learner (ttt.agents.dqn.Config.gamma), whose rules' values use it


@dataclass(frozen=True)
class Rules:
    """Exact values the rules give, used in move selection in place of a value network's estimates.

    ``wins``: a move that completes a line scores its reward, +1 (a tanh output only approaches 1, and
    a position one move from a win is worth gamma, so the estimate alone ranks them too close).
    ``losses``: a move after which the opponent can complete a line scores -1. ``forks``: a move that
    makes two winning cells the opponent cannot both block scores ``gamma`` (a win on the next move),
    and one after which the opponent has such a move scores ``-gamma``. ``threats`` = D: a move that wins
    through a chain of d <= D threats (each block forced) ending in a fork scores ``gamma**(d+1)``, and
    one after which the opponent has such a move ``-gamma**(d+1)`` (``threat_forks``). All off: the network alone.
    ``gamma`` is not a rule's: it is the discount of the learner whose estimates the values replace
    (``Config.gamma``), given where the values are computed (``rule_values``; ``DQNPlayer.gamma``).
    """

    wins: bool = True
    losses: bool = False
    forks: bool = False
    threats: int = 0

    def needs_tactics(self) -> bool:
        """Whether these rules need ``move_tactics`` of the position (all but exact wins do)."""
        return self.losses or self.forks or self.threats > 0


NO_RULES = Rules(wins=False)


def exact_values(board, to_play, legal, game: Game, rules: Rules, gamma: float = GAMMA,
                 tactics: MoveTactics | None = None):
    """``(value, known)``, both (B, cells): the exact values ``rules`` give the legal moves of the boards
    (``to_play`` moves; +1 a win, -1 a move after which the opponent can win at once, ``gamma`` a fork, a
    threat chain ``gamma**(d+1)``, the opponent's forks and chains the same values negated: ``rule_values``
    with every other legal move checked for the opponent's), and where they give one. ``tactics``
    (``move_tactics`` of these boards) is computed when needed and not given. numpy arrays or tensors on
    one device, alike. Move selection puts these values in place of its estimates: the dqn player's
    (``ttt.agents.dqn.moves``) and the alphazero player's search (``ttt.agents.alphazero``)."""
    xp = arrays_of(board)
    value, known = xp.zeros(tuple(legal.shape), "float32"), xp.zeros(tuple(legal.shape), "bool")
    if rules.needs_tactics():
        t = move_tactics(board, to_play, legal, game) if tactics is None else tactics
        if rules.forks or rules.threats > 0:
            value, known = rule_values(board * to_play[:, None], t, gamma, game, defence=game.num_cells,
                                       threats=rules.threats)
        if rules.losses:
            value[t.loss] = -1.0
            known |= t.loss
    if rules.wins:
        win = completing_moves(board, to_play, legal, game)
        value[win] = 1.0
        known |= win
    return value, known


DEFENCE_SLICE = 512  # afterstates searched for threat chains at once (bounds memory)


def rule_values(views: np.ndarray, tactics: MoveTactics, gamma: float, game: Game, defence: int = 0,
                rng: np.random.Generator | None = None, threats: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Exact values the rules give for afterstates of the boards ``views`` (mover's view, +1 own):
    ``(value, known)``, both (B, cells).

    A winning move's afterstate is worth +1, a move that lets the opponent win at once -1, and a fork
    (two winning cells the opponent cannot both block) ``gamma``, a win on the mover's next move. With
    ``defence`` > 0, up to that many other legal afterstates per board (drawn by ``rng`` when fewer
    than all) are checked for a fork of the opponent: one there is a loss in two of the opponent's
    moves, worth ``-gamma``. With ``threats`` = D > 0, a move that wins through a chain of d <= D
    threats, each block forced, ending in a fork (``threat_forks``) is worth ``gamma**(d+1)``, and,
    among the afterstates checked, one where the opponent has such a move ``-gamma**(d+1)``. numpy
    arrays or tensors on one device (``rng`` then a ``torch.Generator`` there), alike.
    """
    xp = arrays_of(views)
    value = xp.zeros(tuple(tactics.win.shape), "float32")
    value[tactics.fork] = gamma
    value[tactics.loss] = -1.0
    value[tactics.win] = 1.0
    known = tactics.win | tactics.loss | tactics.fork
    boards = xp.astype(views, "int8")
    reachable = playable(boards, game)
    if threats:  # the shortest chain of threats gives the value
        chain = threat_depths(boards, xp.full(len(boards), 1, "int8"), reachable, game, tactics, threats)
        for d in range(1, threats + 1):
            attack = (chain == d) & ~known
            value[attack] = gamma ** (d + 1)
            known |= attack
    if defence > 0:
        rest = reachable & ~known
        if defence < rest.shape[1]:
            # a random subset of at most ``defence`` unlabelled moves per board: the smallest random keys
            keys = xp.where(rest, xp.random(rng, tuple(rest.shape)), 2.0)
            rest &= keys <= xp.kth_smallest(keys, defence)
        e_all, cell_all = xp.nonzero(rest)
        # in slices of afterstates: the threat chains search every reply of every afterstate, and one
        # pass over a whole evaluation batch would hold gigabytes at once
        for start in range(0, len(e_all), DEFENCE_SLICE if threats else max(len(e_all), 1)):
            e, cell = e_all[start: start + DEFENCE_SLICE], cell_all[start: start + DEFENCE_SLICE]
            after = xp.astype(views[e], "int8")
            after[xp.arange(len(e)), cell] = 1
            them = xp.full(len(e), -1, "int8")
            reach = playable(after, game)
            reply = move_tactics(after, them, reach, game)
            lost = reply.fork.any(1)
            value[e[lost], cell[lost]] = -gamma
            known[e[lost], cell[lost]] = True
            if threats:
                open_ = xp.flatnonzero(~known[e, cell])  # afterstates whose value is not known yet
                e, cell = e[open_], cell[open_]
                sub = MoveTactics(reply.win[open_], reply.loss[open_], reply.fork[open_])
                chain = threat_depths(after[open_], them[open_], reach[open_], game, sub, threats)
                longer = xp.where(chain > 0, chain, threats + 1)
                shortest = xp.amin(longer, 1)
                for d in range(1, threats + 1):
                    later = shortest == d
                    value[e[later], cell[later]] = -gamma ** (d + 1)
                    known[e[later], cell[later]] = True
    return value, known

