"""Rules engine: lines, winner detection, gravity, illegal moves, rendering, and the batched face."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt.games import BOARDS, BatchedGames, Game, IllegalMoveError, make_game, random_legal_actions

LINE_COUNTS = {"3x3": 8, "4x4": 10, "3x3x3": 49, "4x4x4": 76, "4x4x4_gravity": 76}


@functools.cache
def brute_force_lines(n: int, d: int) -> frozenset[frozenset[int]]:
    """Every line of an n^d board, enumerated independently of the engine.

    Along a line each coordinate is constant, runs 0..n-1, or runs n-1..0 (not all constant);
    a line and its reverse are the same set of cells.
    """
    choices = [("const", v) for v in range(n)] + [("up", None), ("down", None)]
    lines = set()
    for per_axis in itertools.product(choices, repeat=d):
        if all(kind == "const" for kind, _ in per_axis):
            continue
        cells = []
        for t in range(n):
            coord = [v if kind == "const" else (t if kind == "up" else n - 1 - t) for kind, v in per_axis]
            cells.append(sum(x * n ** (d - 1 - axis) for axis, x in enumerate(coord)))
        lines.add(frozenset(cells))
    return frozenset(lines)


def brute_force_winner(board, n: int, d: int) -> int:
    """+1 / -1 when that player holds a whole line (independent line set), else 0."""
    for line in brute_force_lines(n, d):
        vals = {board[c] for c in line}
        if len(vals) == 1 and 0 not in vals:
            return vals.pop()
    return 0


# ------------------------------------------------------------------ lines
@pytest.mark.parametrize("board", BOARDS)
def test_line_count_exact_and_formula(board):
    g = make_game(board)
    n, d = g.n, g.d
    assert len(g.lines) == LINE_COUNTS[board]
    assert len(g.lines) == ((n + 2) ** d - n**d) // 2


@pytest.mark.parametrize("board", BOARDS)
def test_lines_equal_brute_force_enumeration(board):
    g = make_game(board)
    engine = [frozenset(int(c) for c in line) for line in g.lines]
    assert all(len(line) == g.n for line in engine)  # distinct cells in every line
    assert len(set(engine)) == len(engine)  # no line twice
    assert set(engine) == brute_force_lines(g.n, g.d)


def test_qubic_line_split():
    g = make_game("4x4x4")
    moving_axes = [int((np.ptp(g.coords[line], axis=0) > 0).sum()) for line in g.lines]
    assert np.bincount(moving_axes).tolist() == [0, 48, 24, 4]  # straight, planar diagonal, space diagonal


@pytest.mark.parametrize("board", BOARDS)
def test_incidence_and_cell_lines_agree(board):
    g = make_game(board)
    for cell, lids in enumerate(g.cell_lines):
        assert set(np.flatnonzero(g.incidence[cell])) == set(lids)
        assert all(cell in g.lines[lid] for lid in lids)
    assert g.incidence.sum() == len(g.lines) * g.n


def test_numbering_row_major_and_layer_major():
    g2, g3 = make_game("4x4"), make_game("4x4x4_gravity")
    assert g2.cell_label(1 * 4 + 2) == "1,2"
    assert g3.cell_label(2 * 16 + 1 * 4 + 3) == "2,1,3"
    assert g3.below[2 * 16 + 1 * 4 + 3] == 1 * 16 + 1 * 4 + 3
    assert (g3.below[:16] == -1).all()
    assert g3.above[1 * 16 + 1 * 4 + 3] == 2 * 16 + 1 * 4 + 3 and (g3.above[48:] == -1).all()
    assert all(g3.above[g3.below[c]] == c for c in range(16, 64))
    assert (make_game("4x4x4").above == -1).all()


# ------------------------------------------------------------------ winner, gravity
@pytest.mark.parametrize("board", BOARDS)
def test_winner_agrees_with_brute_force(board):
    g = make_game(board)
    rng = np.random.default_rng(1)
    for _ in range(60 if g.num_cells > 27 else 150):
        s = g.initial_state()
        while not s.is_terminal():
            s = s.apply(int(rng.choice(s.legal_actions())))
            # the game stops at the first completed line, so the brute-force winner is unique
            assert s.winner() == brute_force_winner(s.board, g.n, g.d)
        assert s.winner() != 0 or s.num_moves == g.num_cells


def test_gravity_only_lowest_empty_cell_of_each_column_is_legal():
    g = make_game("4x4x4_gravity")
    rng = np.random.default_rng(2)
    for _ in range(40):
        s = g.initial_state()
        while not s.is_terminal():
            expected = []
            for row, col in itertools.product(range(4), range(4)):
                column = [layer * 16 + row * 4 + col for layer in range(4)]
                empty = [c for c in column if s.board[c] == 0]
                if empty:
                    expected.append(empty[0])
            assert sorted(s.legal_actions()) == sorted(expected)
            s = s.apply(int(rng.choice(s.legal_actions())))


# ------------------------------------------------------------------ illegal moves, both faces
ILLEGAL = [(-1, "out of range"), (9, "out of range"), (True, "not an integer"), (1.0, "not an integer"),
           ("4", "not an integer"), (0, "occupied")]


@pytest.mark.parametrize(("action", "why"), ILLEGAL)
def test_illegal_action_on_state_raises_and_leaves_state(action, why):
    g = make_game("3x3")
    s = g.initial_state().apply(0)
    board = s.board
    assert not s.is_legal(action) and s.is_legal(4)
    with pytest.raises(IllegalMoveError, match=why) as err:
        s.apply(action)
    assert repr(action) in str(err.value) or str(action) in str(err.value)
    assert "3x3" in str(err.value)
    assert s.board == board and s.num_moves == 1


def test_illegal_moves_gravity_and_game_over():
    g = make_game("4x4x4_gravity")
    s = g.initial_state()
    assert not s.is_legal(16) and s.is_legal(0)
    with pytest.raises(IllegalMoveError, match=r"action 16 on 4x4x4_gravity: .*not reachable"):
        s.apply(16)
    won = make_game("3x3").initial_state()
    for a in (0, 3, 1, 4, 2):
        won = won.apply(a)
    assert won.winner() == 1
    assert not won.is_legal(8)
    with pytest.raises(IllegalMoveError, match="game is over"):
        won.apply(8)


@pytest.mark.parametrize("board", ["3x3", "4x4x4_gravity"])
def test_illegal_action_on_batch_raises_and_changes_nothing(board):
    g = make_game(board)
    games = BatchedGames(g, 3)
    games.play(np.array([0, 1, 2]))
    before = [a.copy() for a in (games.board, games.to_play, games.done, games.winner, games.num_moves)]
    bad_actions = [np.array([4, 1, 5]), np.array([4, 5, g.num_cells]), np.array([4, 5, -3])]
    if g.gravity:
        bad_actions.append(np.array([4, 5, 40]))  # nothing below it yet
    for actions in bad_actions:
        with pytest.raises(IllegalMoveError, match=rf"action -?\d+ on {board}"):
            games.play(actions)
        after = (games.board, games.to_play, games.done, games.winner, games.num_moves)
        assert all((x == y).all() for x, y in zip(before, after, strict=True))
    for wrong in (np.array([4.0, 5.0, 6.0]), np.array([True, False, True]), np.array([4, 5])):
        with pytest.raises(IllegalMoveError):
            games.play(wrong)


def test_finished_games_ignore_their_action():
    g = make_game("3x3")
    games = BatchedGames(g, 2)
    for a in (0, 3, 1, 4):
        games.play(np.array([a, a]))
    ended = np.flatnonzero(games.play(np.array([2, 8])))  # game 0 completes the top row, game 1 does not
    assert ended.tolist() == [0] and games.winner.tolist() == [1, 0]
    games.play(np.array([-1, 2]))  # game 0 is over: its entry is ignored
    assert games.board[0].tolist() == [1, 1, 1, -1, -1, 0, 0, 0, 0]


def test_render_shows_coordinates():
    s = make_game("3x3").initial_state().apply(4)
    assert s.render().splitlines() == ["   0 1 2", " 0 . . .", " 1 . X .", " 2 . . ."]
    r3 = make_game("4x4x4").initial_state().apply(16 + 5).render()
    assert "layer 0" in r3 and "layer 3" in r3 and r3.count("X") == 1
    assert r3.splitlines()[1].split()[:4] == ["0", "1", "2", "3"]
    assert r3.splitlines()[3].split()[5:8] == ["1", ".", "X"]  # layer 1, row 1, column 1 (cell 21)
    assert all(line == line.rstrip() for line in r3.splitlines())


# ------------------------------------------------------------------ the two faces agree
def play_batched(board: str, num_games: int, seed: int):
    """Random games in the batched engine; returns (actions per ply, legal masks per ply, games)."""
    g = make_game(board)
    games = BatchedGames(g, num_games)
    rng = np.random.default_rng(seed)
    actions, masks = [], []
    while not games.done.all():
        legal = games.legal_mask()
        a = random_legal_actions(legal, rng)
        masks.append(legal)
        actions.append(a)
        games.play(a)
    return np.array(actions), np.array(masks), games


@pytest.mark.parametrize("board", BOARDS)
def test_batched_and_state_agree_on_random_games(board):
    g = make_game(board)
    num_games = 2000 if g.num_cells <= 27 else 1000
    actions, masks, games = play_batched(board, num_games, seed=3)
    for i in range(num_games):
        s = g.initial_state()
        for t in range(len(actions)):
            if s.is_terminal():
                assert not masks[t, i].any()
                continue
            assert np.array_equal(masks[t, i], s.legal_mask())
            s = s.apply(int(actions[t, i]))
        assert games.state(i).board == s.board
        assert (games.winner[i], games.num_moves[i], bool(games.done[i])) == (s.winner(), s.num_moves, True)


def test_batched_and_state_agree_beyond_64_cells():
    # 125 cells do not fit the 64-bit line masks: the batched engine sums the lines through the move
    g = Game("5x5x5", n=5, d=3)
    games, rng = BatchedGames(g, 300), np.random.default_rng(6)
    states = [g.initial_state()] * 300
    while not games.done.all():
        a = random_legal_actions(games.legal_mask(), rng)
        games.play(a)
        states = [s if s.is_terminal() else s.apply(int(x)) for s, x in zip(states, a, strict=True)]
    assert [games.state(i) for i in range(300)] == states
    assert games.winner.tolist() == [s.winner() for s in states]
    assert games.num_moves.tolist() == [s.num_moves for s in states]
    assert all(s.winner() == brute_force_winner(s.board, 5, 3) for s in states)
    assert {-1, 1} <= set(games.winner.tolist())


def test_random_legal_actions_uniform_and_legal():
    rng = np.random.default_rng(4)
    legal = np.zeros((60000, 9), dtype=bool)
    legal[:, [1, 4, 7]] = True
    legal[-1] = False
    a = random_legal_actions(legal, rng)
    assert a[-1] == -1
    counts = np.bincount(a[:-1], minlength=9)
    assert counts[[0, 2, 3, 5, 6, 8]].sum() == 0
    assert np.all(np.abs(counts[[1, 4, 7]] - 20000) < 5 * np.sqrt(20000 * 2 / 3))
    # two legal cells of 64: most rows go past the rejection rounds to the fallback
    legal = np.zeros((40000, 64), dtype=bool)
    legal[:, [5, 60]] = True
    legal[::2, 33] = True  # half the rows have a third legal cell
    a = random_legal_actions(legal, rng)
    assert legal[np.arange(40000), a].all()
    odd, even = np.bincount(a[1::2], minlength=64), np.bincount(a[::2], minlength=64)
    assert abs(odd[5] - 10000) < 5 * np.sqrt(10000 / 2) and odd[5] + odd[60] == 20000
    assert all(abs(even[c] - 20000 / 3) < 5 * np.sqrt(20000 * 2 / 9) for c in (5, 33, 60))


def test_reset_and_set_state_round_trip():
    g = make_game("4x4x4_gravity")
    _, _, games = play_batched("4x4x4_gravity", 8, seed=5)
    other = BatchedGames(g, 8)
    for i in range(8):
        other.set_state(i, games.state(i))
    assert all((getattr(other, k) == getattr(games, k)).all()
               for k in ("board", "to_play", "done", "winner", "num_moves", "last_action"))
    mask = np.arange(8) % 2 == 0
    other.reset(mask)
    assert not other.board[mask].any() and not other.done[mask].any() and (other.to_play[mask] == 1).all()
    assert (other.board[~mask] == games.board[~mask]).all()


def test_observation_and_afterstates_from_the_movers_view():
    g = make_game("3x3")
    games = BatchedGames(g, 1)
    games.play(np.array([4]))  # X in the centre; O to move
    assert games.observation()[0].tolist() == [0, 0, 0, 0, -1, 0, 0, 0, 0]
    obs, legal = games.afterstates()
    assert legal[0].sum() == 8 and obs[0, 0].tolist() == [1, 0, 0, 0, -1, 0, 0, 0, 0]
    assert obs[0, 4].tolist() == [0, 0, 0, 0, -1, 0, 0, 0, 0]  # illegal: unchanged board


# ------------------------------------------------------------------ properties
@settings(max_examples=40, deadline=None)
@given(board=st.sampled_from(list(BOARDS)), seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 64))
def test_property_random_sequences(board, seed, plies):
    g = make_game(board)
    rng = np.random.default_rng(seed)
    games = BatchedGames(g, 1)
    s = g.initial_state()
    for _ in range(plies):
        if s.is_terminal():
            break
        a = int(rng.choice(s.legal_actions()))
        old_board, old_moves = s.board, s.num_moves
        t = s.apply(a)
        assert s.board == old_board and s.num_moves == old_moves  # apply leaves the old state unchanged
        games.play(np.array([a]))
        s = t
        assert games.state(0).board == s.board and games.winner[0] == s.winner()
        assert bool(games.done[0]) == s.is_terminal()
        assert np.array_equal(games.legal_mask()[0], s.legal_mask())
        n1, n2 = s.board.count(1), s.board.count(-1)
        assert n1 - n2 == (s.num_moves % 2) and n1 + n2 == s.num_moves  # pieces alternate
        assert s.to_play() == (1 if s.num_moves % 2 == 0 else -1)
        assert s.is_terminal() == (s.winner() != 0 or s.num_moves == g.num_cells)
        assert s.winner() == brute_force_winner(s.board, g.n, g.d)


def test_from_states_copies_each_state_into_its_row():
    game = make_game("4x4x4_gravity")
    s0 = game.initial_state()
    s1 = s0.apply(5).apply(21)
    games = BatchedGames.from_states([s0, s1])
    assert games.state(0) == s0 and games.state(1) == s1
    assert games.num_moves.tolist() == [0, 2] and games.to_play.tolist() == [1, 1]
    assert games.legal_mask()[1, 37] and not games.legal_mask()[0, 37]
