"""The one table of the boards (ttt.games.boards): its facts pinned, and the modules that use them
reading them from it (OpenSpiel's games, exact exploitability, perfect play, tactics suites, the
default boards)."""

from __future__ import annotations

import pytest

from ttt.games import BOARDS, make_game
from ttt.games.boards import BOARD_TABLE, DEFAULT_BOARDS, boards_with, native_games


def test_the_table_holds_every_board_and_its_geometry():
    assert list(BOARD_TABLE) == list(BOARDS) == ["3x3", "4x4", "3x3x3", "4x4x4", "4x4x4_gravity"]
    assert BOARDS["3x3"] == {"n": 3, "d": 2} and BOARDS["4x4x4_gravity"] == {"n": 4, "d": 3, "gravity": True}
    for name in BOARDS:
        game = make_game(name)
        assert (game.n, game.d, game.gravity) == (BOARD_TABLE[name].n, BOARD_TABLE[name].d, BOARD_TABLE[name].gravity)


def test_the_facts_of_the_table():
    assert boards_with("perfect") == ("3x3", "4x4", "3x3x3")
    assert boards_with("exploitability") == ("3x3", "4x4")
    assert boards_with("tactics") == ("4x4x4", "4x4x4_gravity")
    assert native_games() == {"3x3": "tic_tac_toe", "4x4": "mnk(m=4,n=4,k=4)",
                              "4x4x4": "gomoku(size=4,dims=3,connect=4)"}
    assert DEFAULT_BOARDS == {"openspiel": "3x3", "web": "4x4x4", "players": "4x4x4"}
    assert set(DEFAULT_BOARDS.values()) <= set(BOARDS)
    with pytest.raises(ValueError, match="unknown board fact"):
        boards_with("perfct")


def test_the_modules_read_their_boards_from_the_table():
    from ttt import perf
    from ttt.evaluation import exploitability, suites
    from ttt.harness import specs
    from ttt.players import search

    assert search.PERFECT_BOARDS == boards_with("perfect")
    assert exploitability.EXPLOIT_BOARDS == boards_with("exploitability")
    assert suites.BOARDS == boards_with("tactics")
    assert perf.OPENSPIEL_GAMES == native_games()
    assert specs.DEFAULT_GAME == DEFAULT_BOARDS["players"]


def test_the_web_default_board_is_the_tables():
    app = pytest.importorskip("ttt.web.app")
    assert app.DEFAULT_BOARD == DEFAULT_BOARDS["web"]


@pytest.mark.parametrize("board", list(BOARDS))
def test_perfect_play_exactly_where_the_table_says(board):
    from ttt.players.search import PerfectPlayer

    if BOARD_TABLE[board].perfect:
        PerfectPlayer(make_game(board))
    else:
        with pytest.raises(ValueError, match="perfect play is available on 3x3, 4x4, 3x3x3 only"):
            PerfectPlayer(make_game(board))


@pytest.mark.parametrize("board", list(BOARDS))
def test_exploitability_exactly_where_a_solved_table_exists(board):
    from ttt.evaluation.exploitability import check_board
    from ttt.games.solved import SOLVABLE_CELLS

    game = make_game(board)
    assert BOARD_TABLE[board].exploitability == (game.num_cells <= SOLVABLE_CELLS)
    if BOARD_TABLE[board].exploitability:
        check_board(game)
    else:
        with pytest.raises(ValueError, match="exploitability is computed on 3x3 and 4x4 only"):
            check_board(game)


@pytest.mark.parametrize("board", list(BOARDS))
def test_tactics_suites_ship_exactly_where_the_table_says(board):
    from ttt.evaluation.suites import has_suites

    assert has_suites(board) == BOARD_TABLE[board].tactics


def test_openspiel_has_exactly_the_native_games_of_the_table():
    pytest.importorskip("pyspiel")
    tos = pytest.importorskip("ttt.interop.openspiel")

    assert tos.NATIVE_GAMES == native_games() and tos.DEFAULT_BOARD == DEFAULT_BOARDS["openspiel"]
    for board in BOARDS:
        game = make_game(board)
        if BOARD_TABLE[board].openspiel is None:
            with pytest.raises(ValueError, match=f"OpenSpiel has no {board} board"):
                tos.native_game(game)
        else:
            native = tos.native_game(game)
            assert native.num_distinct_actions() == game.num_cells
