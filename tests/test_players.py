"""Fixed and search players: strength against known truths and published reference baselines."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest

from ttt.evaluation.evaluate import play_match
from ttt.games import make_game
from ttt.players import PLAYERS, make_player
from ttt.players.search import MATE, WIN, AlphaBetaPlayer, PerfectPlayer

# Random vs random, first-player and second-player win rates of the reference table (20,000 games each)
REFERENCE_RANDOM = {"3x3": (0.582, 0.291), "4x4": (0.314, 0.266), "3x3x3": (0.569, 0.431), "4x4x4": (0.529, 0.471)}
REFERENCE_GAMES = 20_000
# benchmark (first seat) vs random, win rate of the reference table (1,000 games)
REFERENCE_BENCHMARK = {"3x3": 0.899, "4x4": 0.623, "3x3x3": 0.993, "4x4x4": 0.998, "4x4x4_gravity": 0.998}


def close(rate: float, n: int, expected: float, n_expected: int | None = None, sigmas: float = 4.5) -> bool:
    """``rate`` measured on ``n`` games agrees with ``expected`` (itself a sample of ``n_expected``)."""
    p = min(max(expected, 1e-3), 1 - 1e-3)
    var = p * (1 - p) / n + (p * (1 - p) / n_expected if n_expected else 0.0)
    return abs(rate - expected) <= sigmas * math.sqrt(var)


def state_after(board: str, moves: list[int]):
    s = make_game(board).initial_state()
    for m in moves:
        s = s.apply(m)
    return s


# ------------------------------------------------------------------ registry
def test_registry_has_search_players():
    g = make_game("3x3")
    assert {"random", "benchmark", "alphabeta", "perfect", "mcts"} <= set(PLAYERS)
    assert isinstance(make_player("alphabeta", g, depth=2), AlphaBetaPlayer)
    assert isinstance(make_player("perfect", g), PerfectPlayer)
    with pytest.raises(ValueError, match="unknown player"):
        make_player("nobody", g)


def test_table_entries_by_path_are_imported_when_asked_for(monkeypatch):
    from ttt.harness.specs import parse_spec

    g = make_game("3x3")
    monkeypatch.setitem(PLAYERS, "later", "ttt.players.search:AlphaBetaPlayer")
    assert isinstance(make_player("later", g, depth=1), AlphaBetaPlayer)
    assert parse_spec("later:2") == ("player", "later", {"depth": 2})  # its options are its class's
    monkeypatch.setitem(PLAYERS, "missing", "ttt_no_such_package.bots:Bot")
    with pytest.raises(ValueError, match="player 'missing' needs the package 'ttt_no_such_package'"):
        make_player("missing", g)


def test_perfect_refuses_unsolved_boards_clearly():
    with pytest.raises(ValueError, match="perfect play is available on 3x3, 4x4, 3x3x3 only, not 4x4x4"):
        PerfectPlayer(make_game("4x4x4"))
    with pytest.raises(ValueError, match="not 4x4x4_gravity"):
        make_player("perfect", make_game("4x4x4_gravity"))


# ------------------------------------------------------------------ perfect play on 3x3
def test_perfect_knows_the_game_value_and_forced_lines():
    p = PerfectPlayer(make_game("3x3"))
    assert len(p.table) == 765  # every reachable position up to symmetry, finished ones included
    assert set(p.move_scores(state_after("3x3", [])).values()) == {0}  # every first move draws
    # X: 0, 4; O: 1 (the edge next to X's corner); O to move. X threatens 8 and wins by force:
    # blocking at 8 loses in 4 plies (X then makes a double threat), anything else in 2
    scores = p.move_scores(state_after("3x3", [0, 1, 4]))
    assert scores == {m: -(WIN - 4) if m == 8 else -(WIN - 2) for m in (2, 3, 5, 6, 7, 8)}
    assert p.act(state_after("3x3", [0, 1, 4]), np.random.default_rng(0)) == 8  # the slowest loss


def test_perfect_prefers_the_fastest_win():
    p = PerfectPlayer(make_game("3x3"))
    # X: 0, 1; O: 3, 5; X to move. 2 wins at once; 4 also wins, but only in 3 plies (double threat)
    s = state_after("3x3", [0, 3, 1, 5])
    scores = p.move_scores(s)
    assert scores[2] == WIN - 1 and scores[4] == WIN - 3
    rng = np.random.default_rng(0)
    assert {p.act(s, rng) for _ in range(20)} == {2}
    assert p.action_values(s)[2] == 1.0 and p.action_values(s)[4] == 1.0
    # X: 0, 1, 4; O: 3, 5, 6; X to move: 2, 7 and 8 all win at once, ties broken at random
    s = state_after("3x3", [0, 3, 1, 5, 4, 6])
    assert p.move_scores(s) == {2: WIN - 1, 7: WIN - 1, 8: WIN - 1}
    assert {p.act(s, rng) for _ in range(40)} == {2, 7, 8}


def test_perfect_vs_perfect_always_draws():
    g = make_game("3x3")
    r = play_match(g, PerfectPlayer(g), PerfectPlayer(g), 200, seed=0)
    assert r.both.draws == 200


@pytest.mark.parametrize("opponent", ["random", "benchmark"])
def test_perfect_never_loses_on_3x3(opponent):
    g = make_game("3x3")
    r = play_match(g, PerfectPlayer(g), make_player(opponent, g), 400, seed=1)
    assert r.first.losses == 0 and r.second.losses == 0
    assert r.first.wins > 0


def test_perfect_ties_broken_at_random():
    g = make_game("3x3")
    p, rng = PerfectPlayer(g), np.random.default_rng(2)
    first_moves = {p.act(g.initial_state(), rng) for _ in range(60)}
    assert len(first_moves) == 9  # every opening draws, so all are chosen


def test_perfect_3x3x3_only_the_centre_wins():
    g = make_game("3x3x3")
    p = PerfectPlayer(g)
    scores = p.move_scores(g.initial_state())
    # the centre wins in 7 plies; any other opening lets the second player take the centre and win
    assert scores[13] == WIN - 7
    assert all(v < -MATE for m, v in scores.items() if m != 13)
    assert p.action_values(g.initial_state())[0] == -1.0


def test_perfect_3x3x3_self_play_and_against_fixed_players():
    g = make_game("3x3x3")
    p = PerfectPlayer(g)
    r = play_match(g, p, p, 2, seed=12, seats="first")
    assert r.first.wins == 2
    for opponent in ("random", "benchmark"):
        r = play_match(g, p, make_player(opponent, g), 6, seed=13, seats="first")
        assert r.first.wins == 6, r.summary()


def test_alphabeta_full_depth_agrees_with_symmetry_on_3x3x3():
    g = make_game("3x3x3")
    ab, rng = AlphaBetaPlayer(g, depth=None), np.random.default_rng(14)
    for _ in range(4):
        s = state_after("3x3x3", [int(m) for m in rng.choice(27, size=3, replace=False)])
        if s.is_terminal():
            continue
        perm = g.symmetries[rng.integers(1, 48)]
        image = np.zeros(27, dtype=np.int8)
        image[perm] = s.array()
        best = max(ab.move_scores(s, all_exact=False).values())
        assert best == max(ab.move_scores(g.state_from_board(image), all_exact=False).values())


# ------------------------------------------------------------------ alphabeta
def test_alphabeta_full_depth_is_exact_on_3x3():
    g = make_game("3x3")
    perfect, ab = PerfectPlayer(g), AlphaBetaPlayer(g, depth=None)
    rng = np.random.default_rng(3)
    for _ in range(80):
        s = g.initial_state()
        for _ in range(rng.integers(0, 7)):
            if s.is_terminal():
                break
            s = s.apply(int(rng.choice(s.legal_actions())))
        if s.is_terminal():
            continue
        exact = perfect.move_scores(s)
        best = max(exact.values())
        chosen = ab.act(s, rng)
        assert exact[chosen] == best
        values = ab.action_values(s)
        assert set(values) == set(s.legal_actions())
        assert all(np.sign(values[m]) == np.sign(v) for m, v in exact.items())


def test_alphabeta_full_depth_never_loses_to_random_on_3x3():
    g = make_game("3x3")
    r = play_match(g, AlphaBetaPlayer(g, depth=None), make_player("random", g), 60, seed=4)
    assert r.both.losses == 0 and r.both.wins >= 40


def test_alphabeta_takes_wins_and_blocks_at_depth_one():
    g = make_game("4x4x4")
    ab, rng = AlphaBetaPlayer(g, depth=1), np.random.default_rng(5)
    # X holds 0, 1, 2 of the bottom row; O holds 16, 17, 18 above it. X to move wins at 3
    s = state_after("4x4x4", [0, 16, 1, 17, 2, 18])
    assert ab.act(s, rng) == 3
    # O to move must block X's 3 (O cannot win at once)
    s = state_after("4x4x4", [0, 16, 1, 17, 2])
    assert ab.act(s, rng) == 3


def test_alphabeta_depth_2_beats_benchmark_on_qubic():
    g = make_game("4x4x4")
    r = play_match(g, AlphaBetaPlayer(g, depth=2), make_player("benchmark", g), 30, seed=6)
    assert r.both.score >= 0.85, r.summary()


def test_alphabeta_rejects_bad_depth():
    with pytest.raises(ValueError, match="depth"):
        AlphaBetaPlayer(make_game("3x3"), depth=0)


# ------------------------------------------------------------------ reference baselines
@functools.cache
def exact_random_3x3(board: tuple[int, ...] = (0,) * 9, to_play: int = 1) -> tuple[Fraction, Fraction]:
    """P(first player wins), P(second wins) of uniform random play on 3x3; independent of the engine."""
    lines = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
    empty = [c for c in range(9) if board[c] == 0]
    p1 = p2 = Fraction(0)
    for c in empty:
        b = board[:c] + (to_play,) + board[c + 1:]
        if any(all(b[x] == to_play for x in line) for line in lines):
            w1, w2 = (Fraction(1), Fraction(0)) if to_play == 1 else (Fraction(0), Fraction(1))
        elif len(empty) == 1:
            w1 = w2 = Fraction(0)
        else:
            w1, w2 = exact_random_3x3(b, -to_play)
        p1 += w1 / len(empty)
        p2 += w2 / len(empty)
    return p1, p2


def test_random_vs_random_3x3_matches_exact_probabilities():
    p1, p2 = exact_random_3x3()
    assert (p1, p2) == (Fraction(737, 1260), Fraction(121, 420))
    g = make_game("3x3")
    r = play_match(g, make_player("random", g), make_player("random", g), 20_000, seed=7, seats="first")
    assert close(r.first.win_rate, 20_000, float(p1)) and close(r.first.loss_rate, 20_000, float(p2))
    # and the reference table's sampled figures agree with the exact ones
    assert close(REFERENCE_RANDOM["3x3"][0], REFERENCE_GAMES, float(p1))


@pytest.mark.parametrize("board", ["4x4", "3x3x3", "4x4x4"])
def test_random_vs_random_matches_facts(board):
    g = make_game(board)
    n = 20_000
    r = play_match(g, make_player("random", g), make_player("random", g), n, seed=8, seats="first")
    p1, p2 = REFERENCE_RANDOM[board]
    assert close(r.first.win_rate, n, p1, REFERENCE_GAMES), r.summary()
    assert close(r.first.loss_rate, n, p2, REFERENCE_GAMES), r.summary()
    if board in ("3x3x3", "4x4x4"):
        assert r.first.draws <= (0 if board == "3x3x3" else 20)  # 3x3x3 cannot end drawn


def independent_gravity_random_games(num_games: int, seed: int) -> np.ndarray:
    """Winners of random-vs-random Score Four, simulated without the engine.

    Columns with heights, a piece lands at the column's height, and a win is any of the 76 lines
    (from coordinates: each axis constant, rising or falling) full of one colour.
    """
    n = 4
    lines = []
    for per_axis in np.ndindex(6, 6, 6):  # 0..3: constant, 4: rising, 5: falling
        if max(per_axis) < 4:
            continue
        t = np.arange(n)
        coords = [np.full(n, v) if v < 4 else (t if v == 4 else n - 1 - t) for v in per_axis]
        lines.append(tuple(sorted((coords[0] * 16 + coords[1] * 4 + coords[2]).tolist())))
    lines = np.array(sorted(set(lines)))
    assert len(lines) == 76
    rng = np.random.default_rng(seed)
    board = np.zeros((num_games, 64), dtype=np.int8)
    height = np.zeros((num_games, 16), dtype=np.int64)
    winner = np.zeros(num_games, dtype=np.int8)
    live = np.ones(num_games, dtype=bool)
    rows = np.arange(num_games)
    for ply in range(64):
        player = 1 if ply % 2 == 0 else -1
        open_cols = height < n
        pick = np.where(open_cols, rng.random(open_cols.shape), -1.0).argmax(1)  # uniform open column
        idx = rows[live]
        col = pick[live]
        board[idx, height[idx, col] * 16 + col] = player
        height[idx, col] += 1
        won = (board[idx][:, lines].sum(-1) == 4 * player).any(1)
        winner[idx[won]] = player
        live[idx[won]] = False
    return winner


def test_random_vs_random_gravity_matches_an_independent_simulation():
    g = make_game("4x4x4_gravity")
    n_engine, n_indep = 40_000, 20_000
    r = play_match(g, make_player("random", g), make_player("random", g), n_engine, seed=9, seats="first")
    indep = independent_gravity_random_games(n_indep, seed=10)
    p_indep = float((indep == 1).mean())
    assert close(r.first.win_rate, n_engine, p_indep, n_indep), (r.first.win_rate, p_indep)
    assert close(r.first.loss_rate, n_engine, float((indep == -1).mean()), n_indep)
    # the reference table's 58.4% for the first player is not what either simulation gives (about 55.3%)
    assert not close(r.first.win_rate, n_engine, 0.584, REFERENCE_GAMES, sigmas=5)


@pytest.mark.parametrize("board", list(REFERENCE_BENCHMARK))
def test_benchmark_vs_random_matches_facts(board):
    g = make_game(board)
    n = 2000
    r = play_match(g, make_player("benchmark", g), make_player("random", g), n, seed=11, seats="first")
    assert close(r.first.win_rate, n, REFERENCE_BENCHMARK[board], 1000), r.summary()


def test_the_benchmark_player_does_not_play_under_the_opponents_win():
    # Score Four, X to move: O's three 28, 29, 30 on layer 1 wins at 31, which rests on the empty 15.
    # X has no win and O no playable one, so the third step decides: playing 15 lifts 31 into O's reach
    from ttt.games import BatchedGames
    from ttt.players.fixed import BenchmarkPlayer

    game = make_game("4x4x4_gravity")
    games = BatchedGames(game, 1)
    games.board[0, [12, 14, 0, 5]], games.board[0, [13, 29, 28, 30]] = 1, -1
    games.num_moves[0] = 8
    legal = set(np.flatnonzero(games.legal_mask()[0]).tolist())
    assert 15 in legal
    safe = set(np.flatnonzero(BenchmarkPlayer(game).choices(games)[0]).tolist())
    assert safe == legal - {15}
