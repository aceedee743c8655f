"""Players: one interface (``Player``) for fixed, search and learned players, and the table of the
players that can be made by name.

``PLAYERS`` is the one place a name is bound to a player. Each entry is the player's factory (its
class), called as ``factory(game, **options)``; a player whose module needs an optional package is
written as the string ``"module:attribute"`` and imported only when it is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ttt.games import Game
from ttt.players.base import BatchPlayer, Player, has_rules, without_rules
from ttt.players.fixed import BenchmarkPlayer, RandomPlayer
from ttt.players.mcts import MCTSPlayer
from ttt.players.search import AlphaBetaPlayer, PerfectPlayer

# name -> factory(game, **options), or "module:attribute" of a factory imported on first use
PLAYERS: dict[str, Callable[..., Player] | str] = {
    "random": RandomPlayer,
    "benchmark": BenchmarkPlayer,
    "alphabeta": AlphaBetaPlayer,
    "perfect": PerfectPlayer,
    "mcts": MCTSPlayer,
    "openspiel_mcts": "ttt.interop:openspiel_mcts",  # imports OpenSpiel when made (the openspiel extra)
}


def player_factory(name: str) -> Callable[..., Player]:
    """The factory registered as ``name`` (imported now if it was registered by its path).

    Raises a one-line ValueError for an unknown name, or for a player whose optional package is missing.
    """
    if name not in PLAYERS:
        raise ValueError(f"unknown player {name!r}; choose one of {', '.join(sorted(PLAYERS))}")
    entry = PLAYERS[name]
    if isinstance(entry, str):
        module, _, attribute = entry.partition(":")
        try:
            entry = getattr(importlib.import_module(module), attribute)
        except ModuleNotFoundError as e:
            raise ValueError(f"player {name!r} needs the package {e.name!r}, which is not installed") from None
    return entry


def make_player(name: str, game: Game, **options) -> Player:
    """A fixed or search player by name, e.g. ``make_player("alphabeta", game, depth=2)``."""
    return player_factory(name)(game, **options)


__all__ = ["PLAYERS", "BatchPlayer", "BenchmarkPlayer", "Player", "RandomPlayer", "has_rules", "make_player",
           "player_factory", "without_rules"]
