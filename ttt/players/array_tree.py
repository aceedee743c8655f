"""The PUCT search of ``ttt.players.tree``, written over arrays: the trees of many roots searched in
lock step with numpy operations over all of them at once, where the node tree walks each in Python.

It is the same search, step for step: every simulation walks down each live root's tree by the
``PUCT`` rule (``Q + c_puct * P * sqrt(max(N_s, 1)) / (1 + N)``, ``Q`` of an unvisited move 0, equal
scores to the first legal move in cell order), stops at a node that is new or whose result is known,
scores all the new leaves with one call of the evaluator, and adds the result to every move on the
path with the sign of the player who chose it. With the same evaluator the visit counts are those of
``ttt.players.tree.simulate`` bit for bit (tested), so AlphaZero's self-play and player use this one;
the node tree stays for UCT with random rollouts (``mcts``) and for reading a single tree.

Layout: ``B`` roots, at most ``M = simulations + 1`` nodes each (a simulation adds at most one),
node 0 the root. Per node: ``board`` (cells, int8), ``to_play``, ``num_moves``, ``value`` (the known
result on the first player's scale, NaN while unknown) and ``expanded``; per node and cell: ``legal``,
``prior`` (0 off the legal cells), ``N`` and ``W`` (visits and summed results from the mover's view)
and ``child`` (the node a move leads to, -1 before it is first chosen). New nodes are made by the
batched engine (``BatchedGames.play``), so the rules are the engine's.

The evaluator is ``evaluate(boards, to_play, legal) -> (priors, values)``: for n positions, their
(n, cells) int8 boards, (n,) players to move and (n, cells) legal masks; it returns (n, cells) move
probabilities (0 off the legal cells) and (n,) values on the first player's scale.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ttt.games import BatchedGames, Game, State
from ttt.games.threats import completing_moves
from ttt.players.stop import check_stop

ArrayEvaluator = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


class ArrayTrees:
    """The search trees of ``len(boards)`` roots, with room for ``simulations`` simulations each: their
    (B, cells) int8 ``boards``, (B,) ``to_play`` and ``num_moves``, and where some are over, ``done``
    and ``winner`` (as ``BatchedGames`` holds them)."""

    def __init__(self, game: Game, boards, to_play, num_moves, simulations: int, done=None, winner=None,
                 decisive: bool = False) -> None:
        b, cells = len(boards), game.num_cells
        m = int(simulations) + 1
        self.game, self.simulations = game, int(simulations)
        self.decisive = bool(decisive)
        self.board = np.zeros((b, m, cells), dtype=np.int8)
        self.to_play = np.zeros((b, m), dtype=np.int8)
        self.num_moves = np.zeros((b, m), dtype=np.int16)
        self.value = np.full((b, m), np.nan)
        self.expanded = np.zeros((b, m), dtype=bool)
        self.legal = np.zeros((b, m, cells), dtype=bool)
        self.prior = np.zeros((b, m, cells))
        self.N = np.zeros((b, m, cells))
        self.W = np.zeros((b, m, cells))
        self.child = np.full((b, m, cells), -1, dtype=np.int32)
        self.size = np.ones(b, dtype=np.int64)  # nodes in use per tree
        games = _games(game, boards, to_play, num_moves)
        if done is not None:
            games.done[:] = done
            games.winner[:] = winner
        self.board[:, 0] = games.board
        self.to_play[:, 0] = games.to_play
        self.num_moves[:, 0] = games.num_moves
        self._set_known(np.arange(b), np.zeros(b, dtype=np.int64), games)

    @classmethod
    def from_states(cls, states: list[State], simulations: int, decisive: bool = False) -> ArrayTrees:
        """The trees of single-game ``states`` (of one board), read through the batched engine."""
        g = BatchedGames.from_states(states)
        return cls(g.game, g.board, g.to_play, g.num_moves, simulations, done=g.done, winner=g.winner,
                   decisive=decisive)

    def _set_known(self, rows, nodes, games: BatchedGames) -> None:
        """Record the legal moves of the nodes (rows, nodes), whose positions ``games`` holds, and the
        result of those where the game is over; with ``decisive``, of the new nodes (not the roots, which
        are searched) whose result the next move decides too, as ``mcts``'s decisive check has it: a win
        for the mover if it can complete a line at once, else a loss if the opponent can complete lines
        at two different cells."""
        legal = games.legal_mask()
        self.legal[rows, nodes] = legal
        done = games.done
        self.value[rows[done], nodes[done]] = games.winner[done]
        if self.decisive:
            mover = games.to_play
            new = ~done & (nodes > 0)
            won = new & completing_moves(games.board, mover, legal, self.game).any(1)
            lost = new & ~won & (completing_moves(games.board, -mover, legal, self.game).sum(1) >= 2)
            self.value[rows[won], nodes[won]] = mover[won]
            self.value[rows[lost], nodes[lost]] = -mover[lost]

    # ------------------------------------------------------------------ the search
    def expand_roots(self, evaluate: ArrayEvaluator) -> np.ndarray:
        """Score the unfinished roots (one evaluator call); returns their row indices."""
        rows = np.flatnonzero(np.isnan(self.value[:, 0]))
        self._expand(rows, np.zeros(len(rows), dtype=np.int64), evaluate)
        return rows

    def _expand(self, rows, nodes, evaluate: ArrayEvaluator) -> np.ndarray:
        """Score the nodes (rows, nodes), whose results are unknown; returns their values."""
        if not len(rows):
            return np.zeros(0)
        priors, values = evaluate(self.board[rows, nodes], self.to_play[rows, nodes], self.legal[rows, nodes])
        self.prior[rows, nodes] = priors
        self.expanded[rows, nodes] = True
        return np.asarray(values, dtype=np.float64)

    def add_root_noise(self, rows, rng: np.random.Generator, alpha: float, epsilon: float) -> None:
        """``P = (1 - epsilon) P + epsilon Dir(alpha)`` over each root's legal moves, root by root in order
        (the draws of the node tree's self-play)."""
        for r in rows:
            legal = self.legal[r, 0]
            noise = rng.dirichlet(np.full(int(legal.sum()), alpha))
            self.prior[r, 0, legal] = (1 - epsilon) * self.prior[r, 0, legal] + epsilon * noise

    def simulate(self, rows, c_puct: float, evaluate: ArrayEvaluator) -> None:
        """The trees' simulations (the room made for them) from each root of ``rows`` (expanded, result
        unknown), in lock step: one evaluator call per simulation for all their new leaves."""
        rows = np.asarray(rows, dtype=np.int64)
        for _ in range(self.simulations if len(rows) else 0):
            check_stop()
            self._simulation(rows, float(c_puct), evaluate)

    def _simulation(self, rows, c_puct: float, evaluate: ArrayEvaluator) -> None:
        nodes = np.zeros(len(rows), dtype=np.int64)
        path: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (which, rows, nodes, moves)
        walking = np.arange(len(rows))
        leaf = np.zeros(len(rows), dtype=np.int64)
        while len(walking):
            r, n = rows[walking], nodes[walking]
            stop = ~self.expanded[r, n] | ~np.isnan(self.value[r, n])
            leaf[walking[stop]] = n[stop]
            walking, r, n = walking[~stop], r[~stop], n[~stop]
            if not len(walking):
                break
            a = self._select(r, n, c_puct)
            path.append((walking, r, n, a))
            nxt = self.child[r, n, a].astype(np.int64)
            new = nxt < 0
            if new.any():
                nxt[new] = self._new_nodes(r[new], n[new], a[new])
            nodes[walking] = nxt
        # the leaves: known results, or scored by the evaluator in one call
        result = self.value[rows, leaf].copy()
        open_ = np.flatnonzero(np.isnan(result))
        result[open_] = self._expand(rows[open_], leaf[open_], evaluate)
        self._backup(path, result)

    def _backup(self, path, result: np.ndarray) -> None:
        """Add each root's ``result`` (first player's scale) to every move on its path, signed for its mover."""
        for which, r, n, a in path:
            self.N[r, n, a] += 1.0
            self.W[r, n, a] += result[which] * self.to_play[r, n]

    def _select(self, r, n, c_puct: float) -> np.ndarray:
        """The PUCT move of each node (r, n), the first of equal scores in cell order."""
        visits, w = self.N[r, n], self.W[r, n]
        q = np.divide(w, visits, out=np.zeros_like(w), where=visits > 0)
        total = np.sqrt(np.maximum(visits.sum(1), 1.0))
        u = q + c_puct * self.prior[r, n] * total[:, None] / (1.0 + visits)
        u[~self.legal[r, n]] = -np.inf
        return u.argmax(1)

    def _new_nodes(self, r, n, a) -> np.ndarray:
        """Make the nodes that moves ``a`` from nodes (r, n) lead to; returns their indices."""
        new = self.size[r].copy()
        self.size[r] += 1
        games = _games(self.game, self.board[r, n], self.to_play[r, n], self.num_moves[r, n])
        games.play(a, check=False)
        self.board[r, new] = games.board
        self.to_play[r, new] = games.to_play
        self.num_moves[r, new] = games.num_moves
        self.child[r, n, a] = new
        self._set_known(r, new, games)
        return new

    # ------------------------------------------------------------------ reading the roots
    def root_visits(self) -> np.ndarray:
        """(B, cells) visits of each root move (0 off the legal cells)."""
        return self.N[:, 0]

    def most_visited(self) -> np.ndarray:
        """Each root's most visited legal move, the first of equal counts in cell order (-1 if none)."""
        visits = np.where(self.legal[:, 0], self.N[:, 0], -1.0)
        return np.where(self.legal[:, 0].any(1), visits.argmax(1), -1)


def _games(game: Game, boards, to_play, num_moves) -> BatchedGames:
    """A batched engine holding the given unfinished positions."""
    games = BatchedGames(game, len(boards))
    games.board[:] = boards
    games.to_play[:] = to_play
    games.num_moves[:] = num_moves
    return games

