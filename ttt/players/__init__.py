"""Players: one interface (``Player``) for fixed, search and learned players, and a registry by name."""

from __future__ import annotations

from collections.abc import Callable

from ttt.games import Game
from ttt.interop import openspiel_mcts
from ttt.players.base import BatchPlayer, Player
from ttt.players.fixed import BenchmarkPlayer, RandomPlayer

# name -> factory(game, **options). Search players register themselves here when their module is added.
PLAYERS: dict[str, Callable[..., Player]] = {
    "random": RandomPlayer,
    "benchmark": BenchmarkPlayer,
    "openspiel_mcts": openspiel_mcts,  # imports OpenSpiel when made (the openspiel extra)
}


def registered_players() -> dict[str, Callable[..., Player]]:
    """Every player that can be made by name (search players included), name -> factory."""
    _load_optional()
    return PLAYERS


def make_player(name: str, game: Game, **options) -> Player:
    """A fixed or search player by name, e.g. ``make_player("alphabeta", game, depth=2)``."""
    registered_players()
    if name not in PLAYERS:
        raise ValueError(f"unknown player {name!r}; choose one of {', '.join(sorted(PLAYERS))}")
    return PLAYERS[name](game, **options)


def _load_optional() -> None:
    # modules that add players to the registry on import
    import importlib

    for mod in ("ttt.players.search", "ttt.agents.mcts"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise


__all__ = ["PLAYERS", "BatchPlayer", "BenchmarkPlayer", "Player", "RandomPlayer", "make_player", "registered_players"]
