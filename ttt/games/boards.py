"""The boards and what each offers, in one table: its geometry (``ttt.games.make_game``), OpenSpiel's own
implementation of it (``ttt.interop.openspiel``, ``ttt.perf``), exact exploitability
(``ttt.evaluation.exploitability``), perfect play (``ttt.players.search.PerfectPlayer``) and shipped tactics suites
(``ttt.evaluation.suites``); and, per entry point, the board it plays when none is named (``DEFAULT_BOARDS``).

The modules that use a fact read it here: ``ttt.games.BOARDS``, ``ttt.interop.openspiel.NATIVE_GAMES``,
``ttt.perf.OPENSPIEL_GAMES``, ``ttt.evaluation.exploitability.EXPLOIT_BOARDS``, ``ttt.players.search.PERFECT_BOARDS``,
``ttt.evaluation.suites.BOARDS`` and the default boards (``ttt.interop.openspiel.DEFAULT_BOARD``,
``ttt.web.app.DEFAULT_BOARD``, ``ttt.harness.specs.DEFAULT_GAME``) are views of this table. Pure data: it
imports nothing of the package, so every layer can read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Board:
    """One board: ``n`` cells a side in ``d`` dimensions (``gravity``: a piece falls to the lowest free
    cell of its column), and what the package offers on it."""

    n: int
    d: int
    gravity: bool = False
    openspiel: str | None = None  # OpenSpiel's native game of the board (pyspiel.load_game), None: it has none
    exploitability: bool = False  # exact exploitability is computed (the solved table of every position)
    perfect: bool = False  # perfect play, the ``perfect`` player (a solved table or an exact full-depth search)
    tactics: bool = False  # tactics suites ship (ttt/data/tactics/<board>.npz)

    def geometry(self) -> dict:
        """The keyword arguments of ``Game`` for this board: ``n``, ``d``, and ``gravity`` where it is set."""
        return dict(n=self.n, d=self.d, **({"gravity": True} if self.gravity else {}))


BOARD_TABLE: dict[str, Board] = {
    "3x3": Board(3, 2, openspiel="tic_tac_toe", exploitability=True, perfect=True),
    "4x4": Board(4, 2, openspiel="mnk(m=4,n=4,k=4)", exploitability=True, perfect=True),
    "3x3x3": Board(3, 3, perfect=True),
    "4x4x4": Board(4, 3, openspiel="gomoku(size=4,dims=3,connect=4)", tactics=True),
    "4x4x4_gravity": Board(4, 3, gravity=True, tactics=True),
}

# the board each entry point plays when none is named
DEFAULT_BOARDS: dict[str, str] = {
    "openspiel": "3x3",  # the ttt game's ``board`` parameter in OpenSpiel (ttt.interop.openspiel)
    "web": "4x4x4",  # the board the browser page starts on (ttt.web.app)
    "players": "4x4x4",  # players built when neither game= nor a checkpoint names the board
    # (ttt.harness.specs.load_agents: ttt.benchmark, ttt.play, ttt.calibration, ttt.tactics)
}


def boards_with(fact: str) -> tuple[str, ...]:
    """The boards on which ``fact`` (``exploitability``, ``perfect``, ``tactics``, ``openspiel``) holds, in
    the table's order."""
    if fact not in ("openspiel", "exploitability", "perfect", "tactics"):
        raise ValueError(f"unknown board fact {fact!r}")
    return tuple(name for name, board in BOARD_TABLE.items() if getattr(board, fact))


def native_games() -> dict[str, str]:
    """Board name -> OpenSpiel's native game string, for the boards OpenSpiel has."""
    return {name: board.openspiel for name, board in BOARD_TABLE.items() if board.openspiel is not None}
