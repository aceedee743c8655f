"""Match play: seeds, seats, signs of results, and the statistics reported."""

from __future__ import annotations

import numpy as np
import pytest

from ttt.evaluation.evaluate import MatchResult, SeatResult, play_match, wilson_interval
from ttt.games import State, make_game
from ttt.players import Player, make_player


class FirstLegal(Player):
    """Always the lowest-numbered legal cell: on 3x3 the first player then wins on the 2-4-6 diagonal."""

    name = "first_legal"

    def act(self, state: State, rng: np.random.Generator) -> int:
        return state.legal_actions()[0]


def test_same_seed_same_result_and_seeds_matter():
    g = make_game("4x4")
    a, b = make_player("benchmark", g), make_player("random", g)
    r1, r2 = play_match(g, a, b, 300, seed=5), play_match(g, a, b, 300, seed=5)
    assert (r1.first, r1.second) == (r2.first, r2.second)
    others = {(r.first.wins, r.second.wins, r.first.draws)
              for r in (play_match(g, a, b, 300, seed=s) for s in range(6, 10))}
    assert len(others) > 1


def test_seat_split_and_result_signs():
    g = make_game("3x3")
    r = play_match(g, FirstLegal(g), FirstLegal(g), 5, seed=0, agent_name="a", opponent_name="b")
    # the first seat always wins: the agent wins its 3 first-seat games and loses its 2 second-seat ones
    assert (r.first.games, r.first.wins, r.first.losses) == (3, 3, 0)
    assert (r.second.games, r.second.wins, r.second.losses) == (2, 0, 2)
    assert (r.both.games, r.both.wins, r.both.losses, r.both.draws) == (5, 3, 2, 0)
    assert r.summary().startswith("a vs b on 3x3: 3W 0D 2L of 5")
    assert [s.seat for s in r.seats()] == ["first", "second", "both"]
    only_second = play_match(g, FirstLegal(g), FirstLegal(g), 4, seats="second")
    assert (only_second.first.games, only_second.second.losses) == (0, 4)
    assert [s.seat for s in only_second.seats()] == ["second", "both"]
    assert play_match(g, FirstLegal(g), FirstLegal(g), 4, seats="first").first.wins == 4


def test_bad_arguments():
    g = make_game("3x3")
    p = FirstLegal(g)
    with pytest.raises(ValueError, match="num_games"):
        play_match(g, p, p, 0)
    with pytest.raises(ValueError, match="seats"):
        play_match(g, p, p, 2, seats="left")


def test_wilson_interval_hand_computed():
    # centre (p + z^2/2n) / (1 + z^2/n), half-width z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n), z = 1.96
    assert wilson_interval(8, 10) == pytest.approx((0.490162, 0.943318), abs=1e-6)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 3.841459 / 13.841459), abs=1e-6)
    assert wilson_interval(50, 100) == pytest.approx((0.403832, 0.596168), abs=1e-6)
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_score_counts_draws_half():
    r = SeatResult("both", games=10, wins=3, draws=4, losses=3)
    assert r.score == 0.5 and r.win_rate == 0.3 and r.draw_rate == 0.4 and r.loss_rate == 0.3
    d = r.as_dict()
    assert d["score"] == 0.5 and d["win_rate_ci"] == list(wilson_interval(3, 10))
    m = MatchResult("a", "b", "3x3", SeatResult("first", 4, 4, 0, 0), SeatResult("second", 4, 0, 4, 0))
    assert m.both.score == 0.75  # (4 + 4/2) / 8
    assert SeatResult("first").score == 0.0


def test_perfect_self_play_scores_half():
    g = make_game("3x3")
    r = play_match(g, make_player("perfect", g), make_player("perfect", g), 20, seed=1)
    assert r.both.draws == 20 and r.both.score == 0.5 and r.games_per_sec > 0
    # every drawn game lasts 9 moves: 5 for the first seat, 4 for the second, 10 games in each seat
    assert r.agent_moves == r.opponent_moves == 10 * 5 + 10 * 4
    assert r.agent_ms_per_move > 0 and r.opponent_ms_per_move > 0
    assert r.rows()[2]["agent_ms_per_move"] == r.agent_ms_per_move


def test_rows_give_each_seat_then_both_with_the_match_figures():
    game = make_game("3x3")
    r = play_match(game, make_player("benchmark", game), make_player("random", game), 30, seed=4)
    rows = r.rows("rnd")
    assert [x["seat"] for x in rows] == ["first", "second", "both"]
    assert all(x["opponent"] == "rnd" and x["games_per_sec"] == r.games_per_sec for x in rows)
    assert [(x["games"], x["wins"], x["draws"], x["losses"]) for x in rows] == [
        (s.games, s.wins, s.draws, s.losses) for s in (r.first, r.second, r.both)]
    assert rows[2]["score"] == pytest.approx((r.both.wins + r.both.draws / 2) / 30)
    assert r.rows()[0]["opponent"] == "random"
