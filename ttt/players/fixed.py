"""Fixed players: uniform random, and the benchmark player of van de Steeg, Drugan & Wiering (2015)."""

from __future__ import annotations

import numpy as np

from ttt.games import BatchedGames, Game, State, random_legal_actions
from ttt.games.arrays import arrays_for
from ttt.games.threats import completing_moves
from ttt.players.base import BatchPlayer, Player


class RandomPlayer(Player):
    """Uniform over the legal moves."""

    name = "random"
    batched_on_device = True

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
    batched_on_device = True

    def __init__(self, game: Game) -> None:
        super().__init__(game)
        # with gravity, the cells that have a cell directly above them, and those cells above
        self._has_above = np.flatnonzero(game.above >= 0)
        self._above = game.above[self._has_above]

    def act_batch(self, games: BatchedGames, rng) -> np.ndarray:
        """numpy games and a numpy generator, or games on a device and a ``torch.Generator``."""
        return random_legal_actions(self.choices(games), rng)

    def choices(self, games: BatchedGames):
        """(B, cells) bool: the moves the steps allow in each game (the player draws one at random)."""
        xp = arrays_for(games.device)
        legal = games.legal_mask()
        me = games.to_play
        win = completing_moves(games.board, me, legal, self.game)
        # every empty cell that would complete an opponent's line; the playable ones are the blocks
        opp_threat = completing_moves(games.board, -me, games.board == 0, self.game)
        block = opp_threat & legal
        choice = legal
        if self.game.gravity:
            # a move is unsafe when the cell above it would complete the opponent's line
            has_above, above = self._has_above, self._above
            if xp.is_torch:
                has_above, above = xp.table(has_above), xp.table(above)
            unsafe = xp.zeros(tuple(legal.shape), "bool")
            unsafe[:, has_above] = opp_threat[:, above]
            safe = legal & ~unsafe
            choice = xp.where(safe.any(1)[:, None], safe, choice)
        choice = xp.where(block.any(1)[:, None], block, choice)
        return xp.where(win.any(1)[:, None], win, choice)
