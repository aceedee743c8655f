"""Exact tables by retrograde analysis: class counts, game values, distances checked against
full-depth alpha-beta and value iteration, and the disk cache."""

from __future__ import annotations

import numpy as np
import pytest

from ttt.evaluation.evaluate import play_match
from ttt.games import make_game, solved
from ttt.games.solved import decode, encode, solve_table, solved_table
from ttt.players import make_player
from ttt.players.search import AlphaBetaPlayer, PerfectPlayer


def random_position(game, rng, plies: int):
    s = game.initial_state()
    for _ in range(plies):
        if s.is_terminal():
            break
        s = s.apply(int(rng.choice(s.legal_actions())))
    return s


def test_image_weights_give_the_canonical_key_and_move_values_the_children():
    rng = np.random.default_rng(0)
    for board in ("3x3", "4x4"):
        game = make_game(board)
        t = solved_table(game)
        for _ in range(30):
            s = random_position(game, rng, int(rng.integers(0, 8)))
            if s.is_terminal():
                continue
            assert int(((s.array().astype(np.int64) % 3) @ solved.image_weights(game)).min()) == \
                game.canonical_key(s.array())
            assert t.move_values(s) == {m: t.value(s.apply(m).array()) for m in s.legal_actions()}


def test_encoding_round_trips_and_orders_outcomes():
    assert decode(encode(1, 5, 9), 9) == (1, 5) and decode(encode(-1, 6, 9), 9) == (-1, 6)
    assert decode(0, 16) == (0, 16)
    # for the first player: a fast win > a slow win > a draw > a slow loss > a fast loss
    assert encode(1, 5, 9) > encode(1, 7, 9) > 0 > encode(-1, 8, 9) > encode(-1, 6, 9)


def test_3x3_has_765_classes_and_is_a_draw():
    t = solve_table(make_game("3x3"))
    assert len(t) == 765  # FACTS: 5,478 positions, 765 up to symmetry
    assert t.outcome([0] * 9) == (0, 9)
    assert t.outcome([1, 1, 0, -1, -1, 0, 0, 0, 0]) == (1, 5)  # X completes the top row at once
    assert t.outcome([1, -1, 0, 0, 0, 0, 0, 0, 0]) == (1, 7)  # corner, adjacent edge: X forks and wins
    with pytest.raises(KeyError, match="not reachable"):
        t.value([1, 1, 1, 1, 0, 0, 0, 0, 0])


def test_3x3_agrees_with_value_iteration_on_all_5478_positions():
    from ttt.agents.value_iteration import solve, table_arrays

    game = make_game("3x3")
    hashes, values = table_arrays(solve(game)[0])
    boards = ((hashes[:, None] // 3 ** np.arange(9)) % 3).astype(np.int8)
    boards[boards == 2] = -1
    t = solve_table(game)
    assert len(hashes) == 5478
    assert [t.outcome(b)[0] for b in boards] == values.tolist()


@pytest.mark.parametrize("board, plies", [("3x3", range(0, 8)), ("4x4", range(8, 14))])
def test_distances_match_full_depth_alphabeta(board, plies):
    game = make_game(board)
    perfect, ab = PerfectPlayer(game), AlphaBetaPlayer(game, depth=None)
    rng = np.random.default_rng(5)
    checked = decisive = 0
    for i in range(60):
        s = random_position(game, rng, int(plies[i % len(plies)]))
        if s.is_terminal():
            continue
        scores = perfect.move_scores(s)
        assert scores == ab.move_scores(s, all_exact=True)
        checked += 1
        decisive += any(v != 0 for v in scores.values())
    assert checked >= 40 and decisive >= 10


def test_4x4_is_a_draw_and_perfect_holds_it():
    game = make_game("4x4")
    t = solved_table(game)
    assert 300_000 < len(t) < 320_000  # 9.7 million positions, about 1/32 of them up to symmetry
    assert t.outcome([0] * 16) == (0, 16)  # FACTS: 4x4 is a draw
    p = PerfectPlayer(game)
    assert set(p.move_scores(game.initial_state()).values()) == {0}
    r = play_match(game, p, PerfectPlayer(game), 20, seed=0)
    assert r.both.draws == 20
    for opponent in ("random", "benchmark"):
        r = play_match(game, p, make_player(opponent, game), 40, seed=1)
        assert r.both.losses == 0 and r.both.wins > 0


def test_cache_is_written_read_back_and_rebuilt_when_stale(monkeypatch, tmp_path):
    monkeypatch.setenv("TTT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(solved, "_TABLES", {})
    game = make_game("3x3")
    first = solved_table(game)
    path = tmp_path / "solved_table_3x3.npz"
    assert path.is_file() and first.seconds > 0
    monkeypatch.setattr(solved, "_TABLES", {})
    again = solved_table(game)
    assert again.seconds == 0  # read, not solved
    assert np.array_equal(again.keys, first.keys) and np.array_equal(again.values, first.values)
    for content in (b"not a table", None):
        if content is None:  # a table of another board under this name: its fingerprint differs
            monkeypatch.setattr(solved, "_TABLES", {})
            solved_table(make_game("4x4"))
            (tmp_path / "solved_table_4x4.npz").replace(path)
        else:
            path.write_bytes(content)
        monkeypatch.setattr(solved, "_TABLES", {})
        rebuilt = solved_table(game)
        assert rebuilt.seconds > 0 and np.array_equal(rebuilt.values, first.values)


def test_boards_beyond_16_cells_are_refused():
    with pytest.raises(ValueError, match="at most 16 cells"):
        solve_table(make_game("3x3x3"))


@pytest.mark.slow
def test_4x4_agrees_with_value_iteration_on_all_positions():
    """Value iteration over the 9.7 million positions (about a minute, 1 GB) against the table."""
    from ttt.agents.value_iteration import solve, table_arrays

    game = make_game("4x4")
    hashes, values = table_arrays(solve(game, in_place=True)[0])
    t = solved_table(game)
    weights = solved.image_weights(game)
    for lo in range(0, len(hashes), 500_000):
        h = hashes[lo:lo + 500_000]
        digits = (h[:, None] // 3 ** np.arange(16, dtype=np.int64)) % 3
        keys = (digits @ weights).min(axis=1)
        idx = np.searchsorted(t.keys, keys)
        assert np.array_equal(t.keys[idx], keys)
        assert np.array_equal(np.sign(t.values[idx]), values[lo:lo + 500_000])
