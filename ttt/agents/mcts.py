"""Monte Carlo tree search (UCT) with random rollouts: the ``mcts`` player.

Every simulation walks down the tree from the current position, choosing at each node the move
with the largest

    U(s, a) = Q(s, a) + c * sqrt(ln(sum_b N(s, b)) / (1 + N(s, a)))      (c = sqrt(2) by default)

where ``Q`` is the mean result of the move from the view of the player to move at ``s``. A node
with moves never tried expands one of them (in a random order) instead; the new position is
scored by a rollout (uniformly random moves to the end, or the benchmark player's moves with
``rollout="benchmark"``) and the result is added to every move on the path, with the sign of the
player who chose it. The move played is the most visited one.

With ``decisive=True`` (the default) a new node is first checked for "decisive" positions, using
the rules' own line tables (``completing_moves``): if the player to move can complete a line at
once the position is a win for them, and if they cannot but the opponent can complete two
different lines, it is a loss; such nodes take that value without a rollout. The root plays a
winning move at once when it has one. ``decisive=False`` is plain UCT.

Speed: ``act_batch`` searches every live game of a batch in lock step, so the rollouts of all
games run as one ``BatchedGames`` (one numpy step per ply for the whole batch). ``act`` is the
same search for a batch of one.
"""

from __future__ import annotations

import math

import numpy as np

from ttt.games import BatchedGames, Game, State, random_legal_actions
from ttt.games.threats import completing_moves
from ttt.players import PLAYERS
from ttt.players.base import Player
from ttt.players.fixed import BenchmarkPlayer


def uct_scores(q: np.ndarray, n: np.ndarray, c: float) -> np.ndarray:
    """U(s, a) = Q(s, a) + c * sqrt(ln(sum_b N(s, b)) / (1 + N(s, a))) for every move a of a node."""
    total = max(float(n.sum()), 1.0)  # ln(1) = 0: a node visited once only compares Q
    return q + c * np.sqrt(math.log(total) / (1.0 + n))


class _Node:
    """A position in the tree; statistics are kept per move, from the view of ``to_play``."""

    __slots__ = ("state", "to_play", "actions", "N", "W", "children", "untried", "value")

    def __init__(self, state: State, rng: np.random.Generator) -> None:
        self.state = state
        self.to_play = state.to_play()
        self.actions = np.array(state.legal_actions(), dtype=np.int64)
        self.N = np.zeros(len(self.actions))
        self.W = np.zeros(len(self.actions))
        self.children: list[_Node | None] = [None] * len(self.actions)
        self.untried = list(rng.permutation(len(self.actions)))
        # the known result (+1 first player won, -1 second, 0 draw), or None while unknown
        self.value: float | None = float(state.winner()) if state.is_terminal() else None

    def q(self) -> np.ndarray:
        return np.divide(self.W, self.N, out=np.zeros_like(self.W), where=self.N > 0)


class MCTSPlayer(Player):
    """UCT with rollouts. Options: ``simulations`` per move, exploration ``c``, ``rollout``
    (``"random"`` or ``"benchmark"``), ``decisive`` (see the module docstring) and ``seed``
    (used by ``act``/``act_batch`` only when they are given no generator)."""

    name = "mcts"

    def __init__(self, game: Game, simulations: int = 1000, c: float = math.sqrt(2), rollout: str = "random",
                 decisive: bool = True, seed: int | None = None) -> None:
        super().__init__(game)
        if simulations < 1:
            raise ValueError(f"mcts: simulations must be >= 1, got {simulations}")
        if rollout not in ("random", "benchmark"):
            raise ValueError(f"mcts: rollout must be 'random' or 'benchmark', got {rollout!r}")
        self.simulations = int(simulations)
        self.c = float(c)
        self.rollout = rollout
        self.decisive = bool(decisive)
        self._rng = np.random.default_rng(seed)
        self._benchmark = BenchmarkPlayer(game)
        self.last_roots: list[_Node] = []  # the trees of the latest search (for tests and hints)

    # ------------------------------------------------------------------ Player interface
    def act(self, state: State, rng: np.random.Generator | None = None) -> int:
        return int(self.search([state], rng)[0])

    def act_batch(self, games: BatchedGames, rng: np.random.Generator | None = None) -> np.ndarray:
        actions = np.full(len(games), -1, dtype=np.int64)
        live = np.flatnonzero(~games.done)
        if len(live):
            actions[live] = self.search([games.state(int(i)) for i in live], rng)
        return actions

    def action_values(self, state: State) -> dict[int, float]:
        """The mean rollout result Q of each legal move from the mover's view, after a search."""
        self.search([state], self._rng)
        root = self.last_roots[0]
        if not root.N.any():  # decided at the root without a simulation: the winning moves win
            wins = set(self._winning_moves([root])[0])
            return {int(a): (1.0 if int(a) in wins else 0.0) for a in root.actions}
        return {int(a): float(q) for a, q in zip(root.actions, root.q(), strict=True)}

    # ------------------------------------------------------------------ search
    def search(self, states: list[State], rng: np.random.Generator | None = None) -> np.ndarray:
        """One UCT search per state (all in lock step); returns the chosen move of each."""
        rng = self._rng if rng is None else rng
        roots = [_Node(s, rng) for s in states]
        self.last_roots = roots
        chosen = np.full(len(roots), -1, dtype=np.int64)
        if self.decisive:
            for i, wins in enumerate(self._winning_moves(roots)):
                if wins:
                    chosen[i] = int(rng.choice(wins))
        todo = [r for i, r in enumerate(roots) if chosen[i] < 0]
        rollouts = BatchedGames(self.game, max(len(todo), 1))
        for _ in range(self.simulations if todo else 0):
            paths, leaves = [], []
            for root in todo:
                path, leaf = self._select(root, rng)
                paths.append(path)
                leaves.append(leaf)
            if self.decisive:
                self._decide(leaves)
            results = self._rollouts(leaves, rollouts, rng)
            for path, r in zip(paths, results, strict=True):
                for node, idx in path:  # each move is scored from the view of the player who chose it
                    node.N[idx] += 1.0
                    node.W[idx] += r * node.to_play
        for i, root in enumerate(roots):
            if chosen[i] < 0:
                best = np.lexsort((root.q(), root.N))[-1]  # most visits, ties by Q
                chosen[i] = root.actions[best]
        return chosen

    def _select(self, node: _Node, rng: np.random.Generator) -> tuple[list[tuple[_Node, int]], _Node]:
        """Walk down by UCT to a leaf: a decided node or a newly expanded one."""
        path: list[tuple[_Node, int]] = []
        while node.value is None:
            if node.untried:
                idx = int(node.untried.pop())
                child = _Node(node.state.apply(int(node.actions[idx])), rng)
                node.children[idx] = child
                path.append((node, idx))
                return path, child
            idx = int(np.argmax(uct_scores(node.q(), node.N, self.c)))
            path.append((node, idx))
            node = node.children[idx]
        return path, node

    @staticmethod
    def _arrays(nodes: list[_Node]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(boards, legal masks, players to move) of ``nodes``, the arrays ``completing_moves`` takes."""
        boards = np.array([n.state.board for n in nodes], dtype=np.int8).reshape(len(nodes), -1)
        legal = np.zeros(boards.shape, dtype=bool)
        for i, n in enumerate(nodes):
            legal[i, n.actions] = True
        return boards, legal, np.array([n.to_play for n in nodes], dtype=np.int8)

    def _winning_moves(self, nodes: list[_Node]) -> list[list[int]]:
        """The moves that complete a line of the player to move, per (non-terminal) node."""
        boards, legal, me = self._arrays(nodes)
        win = completing_moves(boards, me, legal, self.game)
        return [list(map(int, np.flatnonzero(w))) for w in win]

    def _decide(self, leaves: list[_Node]) -> None:
        """Give new leaves their known value when the mover wins at once or faces two threats."""
        # a leaf without a value is always newly expanded (``_select`` stops only there or at a value)
        new = [n for n in leaves if n.value is None]
        if not new:
            return
        boards, legal, me = self._arrays(new)
        win = completing_moves(boards, me, legal, self.game).any(1)
        # two different cells that would complete an opponent line: blocking one leaves the other
        lost = completing_moves(boards, -me, legal, self.game).sum(1) >= 2
        for n, w, lo in zip(new, win, lost, strict=True):
            if w:
                n.value = float(n.to_play)
            elif lo:
                n.value = float(-n.to_play)

    def _rollouts(self, leaves: list[_Node], games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        """The result of every leaf (+1 first player won, -1 second, 0 draw): its known value or a rollout."""
        results = np.zeros(len(leaves))
        open_ = []
        for i, leaf in enumerate(leaves):
            if leaf.value is not None:
                results[i] = leaf.value
            else:
                games.set_state(len(open_), leaf.state)
                open_.append(i)
        if not open_:
            return results
        games.done[len(open_):] = True  # spare rows take no part
        while not games.done.all():
            if self.rollout == "benchmark":
                games.step(self._benchmark.act_batch(games, rng))
            else:
                games.step(random_legal_actions(games.legal_mask(), rng))
        results[open_] = games.winner[: len(open_)]
        return results

    def __repr__(self) -> str:
        return (f"MCTSPlayer({self.game.name}, simulations={self.simulations}, c={self.c:.3g}, "
                f"rollout={self.rollout}, decisive={self.decisive})")


PLAYERS["mcts"] = MCTSPlayer
