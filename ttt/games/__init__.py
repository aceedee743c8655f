"""The game layer: rules, lines and symmetries of the five boards, one game or a batch at a time.

Learners reach a board only through this package: ``make_game(name)`` and the ``Game``,
``State`` and ``BatchedGames`` it returns.
"""

from __future__ import annotations

from ttt.games.batched import BatchedGames, random_legal_actions
from ttt.games.rules import FIRST, SECOND, Game, IllegalMoveError, State, opening_name, render_board

BOARDS: dict[str, dict] = {
    "3x3": dict(n=3, d=2),
    "4x4": dict(n=4, d=2),
    "3x3x3": dict(n=3, d=3),
    "4x4x4": dict(n=4, d=3),
    "4x4x4_gravity": dict(n=4, d=3, gravity=True),
}

_GAMES: dict[str, Game] = {}


def make_game(name: str) -> Game:
    """The named board (``3x3``, ``4x4``, ``3x3x3``, ``4x4x4``, ``4x4x4_gravity``); cached."""
    if name not in BOARDS:
        raise ValueError(f"unknown board {name!r}; choose one of {', '.join(BOARDS)}")
    if name not in _GAMES:
        _GAMES[name] = Game(name, **BOARDS[name])
    return _GAMES[name]


__all__ = ["BOARDS", "FIRST", "SECOND", "BatchedGames", "Game", "IllegalMoveError", "State",
           "make_game", "opening_name", "random_legal_actions", "render_board"]
