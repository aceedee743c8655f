"""Fixed players: uniform random, and the benchmark player of van de Steeg, Drugan & Wiering (2015)."""

from __future__ import annotations

import numpy as np

from ttt.games import BatchedGames, State, random_legal_actions
from ttt.games.threats import completing_moves
from ttt.players.base import BatchPlayer, Player


class RandomPlayer(Player):
    """Uniform over the legal moves."""

    name = "random"

    def act(self, state: State, rng: np.random.Generator) -> int:
        legal = state.legal_actions()
        return int(legal[rng.integers(len(legal))])

    def act_batch(self, games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        return random_legal_actions(games.legal_mask(), rng)


class BenchmarkPlayer(BatchPlayer):
    """Win if possible, else block, else (gravity) avoid giving a win on top, else random.

    The steps shuffle the legal moves and take the first that qualifies; taking a uniformly random
    qualifying move is the same distribution. Loses to double threats.
    """

    name = "benchmark"

    def act_batch(self, games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        legal = games.legal_mask()
        me = games.to_play
        win = completing_moves(games.board, me, legal, self.game)
        # every empty cell that would complete an opponent's line; the playable ones are the blocks
        opp_threat = completing_moves(games.board, -me, games.board == 0, self.game)
        block = opp_threat & legal
        choice = legal.copy()
        if self.game.gravity:
            # a move is unsafe when the cell above it would complete the opponent's line
            above = self.game.above
            unsafe = np.zeros_like(legal)
            has_above = above >= 0
            unsafe[:, has_above] = opp_threat[:, above[has_above]]
            safe = legal & ~unsafe
            choice = np.where(safe.any(1, keepdims=True), safe, choice)
        choice = np.where(block.any(1, keepdims=True), block, choice)
        choice = np.where(win.any(1, keepdims=True), win, choice)
        return random_legal_actions(choice, rng)
