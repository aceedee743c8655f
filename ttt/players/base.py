"""The interface every player implements: fixed players, search players and learned agents."""

from __future__ import annotations

import numpy as np

from ttt.games import BatchedGames, Game, State


class Player:
    """Chooses moves. Subclasses implement ``act`` and may override ``act_batch`` for speed.

    Randomness comes only from the ``rng`` passed in, so a seeded match is reproducible.
    """

    name: str = "player"
    # True when ``act_batch`` also takes games on a device with a ``torch.Generator`` (ttt.games.arrays)
    batched_on_device: bool = False
    epsilon: float = 0.0  # > 0: the player explores, epsilon-greedy over its action_values (exploitability)

    def __init__(self, game: Game) -> None:
        self.game = game

    def act(self, state: State, rng: np.random.Generator) -> int:
        """The move to play in ``state`` (which is not terminal)."""
        raise NotImplementedError

    def act_batch(self, games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        """One move per game of ``games``; entries for finished games are ignored (-1 here)."""
        actions = np.full(len(games), -1, dtype=np.int64)
        for i in np.flatnonzero(~games.done):
            actions[i] = self.act(games.state(int(i)), rng)
        return actions

    def action_values(self, state: State) -> dict[int, float] | None:
        """The player's value of each legal move from the mover's view, if it has one (for hints)."""
        return None

    def greedy_values(self, state: State) -> dict[int, float] | None:
        """When ``act`` plays a best move of these values with ties broken at random: the values (any
        best move is one it may play; ``ttt.evaluation.exploitability`` follows them all). None otherwise (default)."""
        return None

    # ---- optional, for learners that keep learning while they play (``ttt.play learn=true``)
    def learn_from_game(self, states: list[State]) -> bool:
        """Learn from one finished game, given every position from the start to the end.

        Returns False when this player does not learn (the default).
        """
        return False

    def save(self, path) -> None:
        """Save the player as a checkpoint that ``ttt.agents.load_player`` reads back."""
        raise NotImplementedError(f"{type(self).__name__} cannot be saved")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.game.name})"


class BatchPlayer(Player):
    """A player written for batches: ``act`` plays ``act_batch`` on a batch of one game."""

    def act(self, state: State, rng: np.random.Generator) -> int:
        return int(self.act_batch(BatchedGames.from_states([state]), rng)[0])

    def act_batch(self, games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


def has_rules(player: Player) -> bool:
    """Whether ``player`` plays with move-selection rules it can switch off (``without_rules()``)."""
    return callable(getattr(player, "without_rules", None))


def without_rules(player: Player) -> Player:
    """``player`` without its move-selection rules (the network alone); ``player`` itself if it has none."""
    return player.without_rules() if has_rules(player) else player
