"""OpenSpiel: the cell mapping and line sets against OpenSpiel's own boards, ttt's boards registered
as OpenSpiel games (random games agree with the ttt engine, MCTSBot plays them), and OpenSpiel's
MCTSBot as the ``openspiel_mcts`` player."""

from __future__ import annotations

import itertools
import re
import sys

import numpy as np
import pytest

from ttt.games import BOARDS, make_game
from ttt.players import make_player


def test_without_openspiel_the_player_fails_with_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # makes `import pyspiel` fail
    monkeypatch.delitem(sys.modules, "ttt.interop.openspiel", raising=False)
    with pytest.raises(ValueError, match=r"openspiel_mcts needs OpenSpiel \(pyspiel is not installed\): pip install"):
        make_player("openspiel_mcts", make_game("3x3"))


pyspiel = pytest.importorskip("pyspiel")
tos = pytest.importorskip("ttt.interop.openspiel")
from open_spiel.python.algorithms import mcts  # noqa: E402

NATIVE = list(tos.NATIVE_GAMES)


def random_game(game, rng) -> list[int]:
    s, moves = game.initial_state(), []
    while not s.is_terminal():
        moves.append(int(rng.choice(s.legal_actions())))
        s = s.apply(moves[-1])
    return moves


# ------------------------------------------------------------------ OpenSpiel's boards
@pytest.mark.parametrize("board", NATIVE)
def test_every_cell_has_the_same_coordinates_in_both_engines(board):
    game = make_game(board)
    native = tos.native_game(game)
    assert native.num_distinct_actions() == game.num_cells
    s = native.new_initial_state()
    for cell in range(game.num_cells):
        coords = tuple(int(x) for x in re.findall(r"\d+", s.action_to_string(0, cell)))
        assert coords == tuple(int(x) for x in game.coords[cell]), (board, cell)


def native_wins_on(native, cells: tuple[int, ...], others: list[int]) -> bool:
    """Whether OpenSpiel ends the game with a first-player win once x holds exactly ``cells``
    (o plays cells of ``others`` in between, too few to make a line of its own)."""
    s = native.new_initial_state()
    o = iter(others)
    for i, c in enumerate(cells):
        if s.is_terminal():
            return False
        s.apply_action(c)
        if i < len(cells) - 1 and not s.is_terminal():
            s.apply_action(next(o))
    return s.is_terminal() and s.returns() == [1.0, -1.0]


def candidate_sets(game, rng) -> list[tuple[int, ...]]:
    """Every k-set of cells on the 2D boards; on Qubic every arithmetic progression of cell numbers
    (where a mistake in wrapping rows or layers would show) and 20,000 random 4-sets."""
    k, cells = game.line_length, game.num_cells
    if game.d == 2:
        return list(itertools.combinations(range(cells), k))
    sets = {tuple(range(a, a + k * s, s)) for s in range(1, cells) for a in range(cells - (k - 1) * s)}
    sets |= {tuple(sorted(rng.choice(cells, k, replace=False).tolist())) for _ in range(20_000)}
    return sorted(sets)


@pytest.mark.parametrize("board", NATIVE)
def test_both_engines_win_on_exactly_the_same_lines(board):
    game = make_game(board)
    native = tos.native_game(game)
    lines = {tuple(int(c) for c in line) for line in game.lines}
    rng = np.random.default_rng(0)
    for line in lines:  # every ttt line wins in OpenSpiel
        assert native_wins_on(native, line, [c for c in range(game.num_cells) if c not in line])
    wins = set()
    for cells in candidate_sets(game, rng):
        if native_wins_on(native, cells, [c for c in range(game.num_cells) if c not in cells]):
            wins.add(cells)
    assert wins == {c for c in candidate_sets(game, np.random.default_rng(0)) if c in lines}
    if game.d == 2:  # exhaustive: OpenSpiel's line set is ttt's
        assert wins == lines and len(lines) == {"3x3": 8, "4x4": 10}[board]


@pytest.mark.parametrize("board", NATIVE)
def test_random_games_play_out_identically(board):
    game = make_game(board)
    native = tos.native_game(game)
    rng = np.random.default_rng(1)
    for _ in range(300):
        moves = random_game(game, rng)
        s, t = native.new_initial_state(), game.initial_state()
        for m in moves:
            assert not s.is_terminal() and sorted(s.legal_actions()) == t.legal_actions()
            s.apply_action(m)
            t = t.apply(m)
        assert s.is_terminal() and s.returns() == [float(t.winner()), float(-t.winner())]


def test_native_state_rebuilds_a_position():
    game = make_game("4x4x4")
    native = tos.native_game(game)
    t = game.initial_state()
    for m in random_game(game, np.random.default_rng(2))[:-1]:
        t = t.apply(m)
        s = tos.native_state(native, t)
        assert sorted(s.legal_actions()) == t.legal_actions()
        assert s.current_player() == (0 if t.to_play() == 1 else 1)


# ------------------------------------------------------------------ ttt's boards in OpenSpiel
def test_all_five_boards_are_registered_with_a_parameter_and_under_the_old_names():
    names = set(pyspiel.registered_names())
    assert {"ttt", *(f"ttt_{b}" for b in BOARDS)} <= names
    tos.register_games()  # again: a no-op
    for board in BOARDS:
        g = pyspiel.load_game(f"ttt(board={board})")
        assert str(g) == tos.game_name(board) == f"ttt(board={board})"
        assert g.get_parameters() == {"board": board} and g.get_type().short_name == "ttt"
        assert g.num_distinct_actions() == make_game(board).num_cells
        old = pyspiel.load_game(f"ttt_{board}")
        assert old.get_type().short_name == f"ttt_{board}" and old.num_distinct_actions() == g.num_distinct_actions()
    assert pyspiel.load_game("ttt").get_parameters() == {"board": "3x3"}  # the default board
    with pytest.raises(ValueError, match="ttt: unknown board '5x5'; choose one of"):
        pyspiel.load_game("ttt(board=5x5)")


@pytest.mark.parametrize("name", ["ttt(board=3x3)", "ttt(board=4x4x4_gravity)", "ttt_3x3x3"])
def test_games_pickle_and_round_trip(name):
    import pickle

    game = pyspiel.load_game(name)
    again = pickle.loads(pickle.dumps(game))
    assert str(again) == str(game) and again.get_type().short_name == game.get_type().short_name
    s = again.new_initial_state()
    s.apply_action(0)
    assert s.legal_actions() == pyspiel.load_game(name).new_initial_state().child(0).legal_actions()


def test_a_pickled_game_loads_in_a_process_that_never_imported_ttt():
    import pickle
    import subprocess

    blob = pickle.dumps(pyspiel.load_game("ttt(board=4x4x4)"))
    code = "import pickle, sys; g = pickle.loads(sys.stdin.buffer.read()); print(g, g.num_distinct_actions())"
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True)
    assert out.stdout.decode().split() == ["ttt(board=4x4x4)", "64"]


@pytest.mark.parametrize("board", list(BOARDS))
def test_registered_games_agree_with_the_engine_on_random_games(board):
    game = make_game(board)
    os_game = pyspiel.load_game(f"ttt(board={board})")
    rng = np.random.default_rng(3)
    for _ in range(30):
        s, t = os_game.new_initial_state(), game.initial_state()
        while not t.is_terminal():
            assert s.legal_actions() == t.legal_actions()
            assert s.current_player() == (0 if t.to_play() == 1 else 1)
            m = int(rng.choice(s.legal_actions()))
            s.apply_action(m)
            t = t.apply(m)
        assert s.is_terminal() and s.current_player() == pyspiel.PlayerId.TERMINAL
        assert s.returns() == [float(t.winner()), float(-t.winner())]
    pyspiel.random_sim_test(os_game, num_sims=5, serialize=False, verbose=False)  # OpenSpiel's own checks


def test_gravity_game_refuses_a_floating_piece_and_observes_planes():
    g = pyspiel.load_game("ttt_4x4x4_gravity")
    s = g.new_initial_state()
    assert s.legal_actions() == list(range(16))  # the bottom layer only
    s.apply_action(5)
    assert 21 in s.legal_actions() and 22 not in s.legal_actions()
    s.apply_action(21)
    obs = np.array(s.observation_tensor(0)).reshape(3, 64)  # planes: empty, o, x
    assert obs[2, 5] == 1 and obs[1, 21] == 1 and obs[0].sum() == 62
    assert s.action_to_string(0, 37) == "x(2,1,1)"


@pytest.mark.parametrize("board", NATIVE)
def test_registered_games_match_openspiels_own_boards(board):
    game = make_game(board)
    ours, theirs = pyspiel.load_game(f"ttt(board={board})"), tos.native_game(game)
    rng = np.random.default_rng(4)
    for _ in range(20):
        a, b = ours.new_initial_state(), theirs.new_initial_state()
        while not a.is_terminal():
            assert a.legal_actions() == sorted(b.legal_actions())
            m = int(rng.choice(a.legal_actions()))
            a.apply_action(m)
            b.apply_action(m)
        assert b.is_terminal() and a.returns() == b.returns()


def test_mctsbot_plays_a_full_game_of_score_four():
    g = pyspiel.load_game("ttt_4x4x4_gravity")
    bots = [mcts.MCTSBot(g, 2.0, 20, mcts.RandomRolloutEvaluator(1, np.random.RandomState(i)),
                         random_state=np.random.RandomState(10 + i)) for i in range(2)]
    s = g.new_initial_state()
    t = make_game("4x4x4_gravity").initial_state()
    while not s.is_terminal():
        m = bots[s.current_player()].step(s)
        s.apply_action(m)
        t = t.apply(m)  # every move the bot chose is legal in the ttt engine
    assert t.is_terminal() and s.returns() == [float(t.winner()), float(-t.winner())]


# ------------------------------------------------------------------ the openspiel_mcts player
def test_player_is_in_the_registry_and_parses_as_a_spec():
    from ttt.harness.specs import parse_spec

    assert parse_spec("openspiel_mcts:200") == ("player", "openspiel_mcts", {"simulations": 200})
    p = make_player("openspiel_mcts", make_game("4x4"), simulations=10)
    assert isinstance(p, tos.OpenSpielMCTSPlayer) and p.simulations == 10


def test_player_refuses_boards_openspiel_lacks_in_one_line():
    for board in ("3x3x3", "4x4x4_gravity"):
        with pytest.raises(ValueError, match=f"OpenSpiel has no {board} board; it has 3x3 \\(tic_tac_toe\\)") as e:
            make_player("openspiel_mcts", make_game(board))
        assert "\n" not in str(e.value)


def test_player_takes_a_win_blocks_and_repeats_with_a_seed():
    game = make_game("3x3")
    p = make_player("openspiel_mcts", game, simulations=200)
    win = game.state_from_board([1, 1, 0, -1, -1, 0, 0, 0, 0])  # X to move: 2 wins
    assert p.act(win, np.random.default_rng(0)) == 2
    block = game.state_from_board([1, 0, 0, -1, -1, 0, 1, 0, 0])  # X to move: O threatens 5
    assert p.act(block, np.random.default_rng(0)) == 5
    s = game.initial_state()
    assert p.act(s, np.random.default_rng(7)) == p.act(s, np.random.default_rng(7))


def test_player_plays_matches_through_the_evaluator():
    from ttt.evaluation.evaluate import play_match

    game = make_game("4x4x4")
    r = play_match(game, make_player("openspiel_mcts", game, simulations=30), make_player("random", game), 4, seed=0)
    assert r.both.wins + r.both.draws + r.both.losses == 4 and r.both.wins >= 3
