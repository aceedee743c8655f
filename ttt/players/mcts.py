"""Monte Carlo tree search (UCT) with rollouts: the ``mcts`` player.

The search is the one of ``ttt.players.tree`` with the ``UCT`` rule: every simulation walks down
the tree choosing, at each node, a move never tried (in a random order) or else the move with the
largest

    U(s, a) = Q(s, a) + c * sqrt(ln(sum_b N(s, b)) / (1 + N(s, a)))      (c = sqrt(2) by default)

where ``Q`` is the mean result of the move from the view of the player to move at ``s``. The new
position is scored by a rollout (uniformly random moves to the end, or the benchmark player's moves
with ``rollout="benchmark"``) and the result is added to every move on the path, with the sign of
the player who chose it. The move played is the most visited one (ties by Q).

With ``decisive=True`` (the default) a new node is first checked for "decisive" positions, using
the rules' own line tables: if the player to move can complete a line at once the position is a
win for them, and if they cannot but the opponent can complete two different lines, it is a loss;
such nodes take that value without a rollout. The root plays a winning move at once when it has
one. ``decisive=False`` is plain UCT.

Speed: random rollouts run on the bitboards of ``ttt.games.bitboard`` (Python integers, a few
microseconds per ply). ``act_batch`` searches every live game of a batch in lock step; benchmark
rollouts of all those games run as one ``BatchedGames`` (one numpy step per ply for the batch).
"""

from __future__ import annotations

import math

import numpy as np

from ttt.games import BatchedGames, Game, State
from ttt.games.bitboard import bitboards
from ttt.players.base import Player
from ttt.players.fixed import BenchmarkPlayer
from ttt.players.tree import UCT, Node, simulate

ROLLOUTS = ("random", "benchmark")


class RolloutEvaluator:
    """Leaf evaluator of ``mcts``: the decisive check (when on), then one rollout per leaf.

    Returns results on the first player's scale; a leaf found decisive gets that result as its value.
    """

    def __init__(self, game: Game, rollout: str = "random", decisive: bool = True) -> None:
        self.game = game
        self.bits = bitboards(game)
        self.rollout = rollout
        self.decisive = decisive
        self._benchmark = BenchmarkPlayer(game)

    def __call__(self, leaves: list[Node], rng: np.random.Generator) -> list[float]:
        bits = self.bits
        results: list[float] = []
        open_: list[int] = []  # leaves that need a rollout
        for i, leaf in enumerate(leaves):
            first, second = bits.masks(leaf.state.board)
            if self.decisive:
                value = self.decided(first, second, leaf.to_play)
                if value is not None:
                    leaf.value = value
                    results.append(value)
                    continue
            if self.rollout == "random":
                results.append(float(bits.random_playout(first, second, leaf.to_play, rng)))
            else:
                results.append(0.0)
                open_.append(i)
        if open_:
            for i, winner in zip(open_, self._benchmark_rollouts([leaves[i].state for i in open_], rng), strict=True):
                results[i] = float(winner)
        return results

    def decided(self, first: int, second: int, to_play: int) -> float | None:
        """+-1 (first player's scale) when the player to move wins at once, or cannot and faces two
        different winning cells of the opponent; None otherwise."""
        bits = self.bits
        mine, theirs = (first, second) if to_play == 1 else (second, first)
        playable = bits.playable(first, second)
        if bits.completing(mine, theirs) & playable:
            return float(to_play)
        if (bits.completing(theirs, mine) & playable).bit_count() >= 2:  # blocking one leaves the other
            return float(-to_play)
        return None

    def winning_moves(self, state: State) -> list[int]:
        """The moves that complete a line of the player to move, ascending."""
        first, second = self.bits.masks(state.board)
        mine, theirs = (first, second) if state.to_play() == 1 else (second, first)
        wins = self.bits.completing(mine, theirs) & self.bits.playable(first, second)
        return [c for c in range(self.game.num_cells) if wins >> c & 1]

    def _benchmark_rollouts(self, states: list[State], rng: np.random.Generator) -> np.ndarray:
        games = BatchedGames.from_states(states)
        while not games.done.all():
            games.play(self._benchmark.act_batch(games, rng))
        return games.winner


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
        if not 0 <= c < math.inf:  # NaN fails too
            raise ValueError(f"mcts: c must be a finite number >= 0, got {c}")
        if rollout not in ROLLOUTS:
            raise ValueError(f"mcts: rollout must be 'random' or 'benchmark', got {rollout!r}")
        self.simulations = int(simulations)
        self.c = float(c)
        self.rollout = rollout
        self.decisive = bool(decisive)
        self._rng = np.random.default_rng(seed)
        self.evaluator = RolloutEvaluator(game, rollout, self.decisive)
        self.last_roots: list[Node] = []  # the trees of the latest search (for tests and hints)

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
            wins = set(self.evaluator.winning_moves(root.state))
            return {int(a): (1.0 if int(a) in wins else 0.0) for a in root.actions}
        return {int(a): float(q) for a, q in zip(root.actions, root.q(), strict=True)}

    # ------------------------------------------------------------------ search
    def search(self, states: list[State], rng: np.random.Generator | None = None) -> np.ndarray:
        """One UCT search per state (all in lock step); returns the chosen move of each."""
        rng = self._rng if rng is None else rng
        roots = [Node(s) for s in states]
        self.last_roots = roots
        chosen = np.full(len(roots), -1, dtype=np.int64)
        if self.decisive:
            for i, root in enumerate(roots):
                wins = self.evaluator.winning_moves(root.state)
                if wins:
                    chosen[i] = int(rng.choice(wins))
        todo = [r for i, r in enumerate(roots) if chosen[i] < 0]
        for root in todo:
            root.expanded = True  # a rollout from the root would inform no move
        simulate(todo, self.simulations, UCT(self.c), self.evaluator, rng)
        for i, root in enumerate(roots):
            if chosen[i] < 0:
                best = np.lexsort((root.q(), root.N))[-1]  # most visits, ties by Q
                chosen[i] = root.actions[best]
        return chosen

    def __repr__(self) -> str:
        return (f"MCTSPlayer({self.game.name}, simulations={self.simulations}, c={self.c:.3g}, "
                f"rollout={self.rollout}, decisive={self.decisive})")
