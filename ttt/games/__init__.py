"""The game layer: rules, lines and symmetries of the five boards, one game or a batch at a time.

Learners reach a board only through this package: ``make_game(name)`` and the ``Game``,
``State`` and ``BatchedGames`` it returns. ``ttt.games.boards`` is the one table of the boards: their
geometry, what the package offers on each (OpenSpiel's game, exploitability, perfect play, tactics
suites) and the default board of each entry point.
"""

from __future__ import annotations

from ttt.games.batched import BatchedGames, random_legal_actions
from ttt.games.boards import BOARD_TABLE
from ttt.games.rules import FIRST, SECOND, Game, IllegalMoveError, State, opening_name, render_board

# name -> Game's keyword arguments; the boards, their geometry and what each offers: ttt.games.boards
BOARDS: dict[str, dict] = {name: board.geometry() for name, board in BOARD_TABLE.items()}

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
