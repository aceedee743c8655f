"""Q-learning: the min-max switch, the adaptive learning rate, schedules, storage, determinism,
checkpoints, and the 3x3 bar."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ttt.agents import load_player
from ttt.agents.q_learning import Config, QPlayer, make_store, next_value, play_episode, q_update
from ttt.agents.tabular import BoardKeys, DenseRows, SparseRows, exponential_epsilon, step_epsilon
from ttt.agents.value_iteration import worst_result
from ttt.evaluation.evaluate import play_match
from ttt.games import make_game
from ttt.players import make_player

G3 = make_game("3x3")


def test_min_max_switch_picks_each_seats_extremum_over_legal_actions_only():
    store = make_store(G3)
    # first player to move (two pieces each): cells 0, 1, 3, 4 are occupied
    s_first = G3.state_from_board([1, -1, 0, -1, 1, 0, 0, 0, 0])
    h = G3.ternary_hash(s_first.array())
    store.values[h] = [9.0, -9.0, 0.3, 9.0, -9.0, -0.5, 0.1, 0.2, 0.0]  # occupied cells hold decoys
    identity = np.arange(9)
    assert next_value(store, s_first, h, identity, gamma=0.9) == pytest.approx(0.9 * 0.3)
    # second player to move: the min over legal actions
    s_second = G3.state_from_board([1, -1, 0, 0, 1, 0, 0, 0, 0])
    h2 = G3.ternary_hash(s_second.array())
    store.values[h2] = [-9.0, 9.0, 0.3, -0.4, -9.0, 0.5, 0.1, 0.2, 0.0]
    assert next_value(store, s_second, h2, identity, gamma=0.9) == pytest.approx(0.9 * -0.4)
    # a finished game is worth its winner, never bootstrapped
    won = G3.state_from_board([1, 1, 1, -1, -1, 0, 0, 0, 0])
    assert next_value(store, won, G3.ternary_hash(won.array()), identity, gamma=0.9) == 1.0


def test_adaptive_learning_rate_hand_computed():
    store = make_store(G3)
    s = G3.state_from_board([1, 1, 0, -1, -1, 0, 0, 0, 0])
    h = G3.ternary_hash(s.array())
    nxt = s.apply(2)  # the first player completes the top row
    target = next_value(store, nxt, G3.ternary_hash(nxt.array()), np.arange(9), gamma=0.9)
    assert target == 1.0
    q_update(store, h, 2, target, alpha0=0.5, adapt_rate=0.5)
    assert store.values[h, 2] == pytest.approx(0.5)  # alpha = 0.5 / (1 + 0 * 0.5)
    q_update(store, h, 2, target, alpha0=0.5, adapt_rate=0.5)
    assert store.values[h, 2] == pytest.approx(0.5 + 0.5 / 1.5 * 0.5)  # alpha = 0.5 / (1 + 1 * 0.5)
    assert store.counts[h, 2] == 2


def test_exploration_schedules():
    assert exponential_epsilon(1.0, 1e-4, 0) == 1.0
    assert exponential_epsilon(0.8, 1e-4, 20000) == pytest.approx(0.8 * math.exp(-2))
    assert step_epsilon(1.0, 0.9, 10000, 9999) == 1.0
    assert step_epsilon(1.0, 0.9, 10000, 10000) == pytest.approx(0.9)
    assert step_epsilon(1.0, 0.9, 10000, 25000) == pytest.approx(0.81)


def test_dense_for_3x3_sparse_for_4x4_holding_only_visited_states():
    assert isinstance(make_store(G3), DenseRows) and make_store(G3).values.shape == (3**9, 9)
    g4 = make_game("4x4")
    store = make_store(g4)
    assert isinstance(store, SparseRows)
    rng = np.random.default_rng(0)
    moves = sum(play_episode(g4, BoardKeys(g4, symmetric=False), store, 1.0, Config(), rng)[1] for _ in range(50))
    assert 16 <= len(store) <= moves  # one row per state a move was taken from (the start is shared)
    assert store.nbytes() < 2 * 2**20


def test_symmetric_keys_store_symmetric_states_once_with_actions_mapped():
    g4 = make_game("4x4")
    player = QPlayer(g4, make_store(g4), symmetric=True)
    moves = [0, 5, 3, 10, 6]
    for perm in g4.symmetries:  # the same game under all 32 symmetries
        states = [g4.initial_state()]
        for a in moves:
            states.append(states[-1].apply(int(perm[a])))
        player.learn_from_game(states)
    assert len(player.store) == len(moves)  # one row per position, not 32
    s = g4.initial_state().apply(0)
    for perm in g4.symmetries:  # every image of a position sees the same values on the mapped cells
        image = g4.initial_state().apply(int(perm[0]))
        values, image_values = player.action_values(s), player.action_values(image)
        assert all(values[a] == image_values[int(perm[a])] for a in values)
    assert int(player.store.counts.sum()) == 32 * len(moves)  # every update landed in those rows


def test_save_load_round_trip_and_learning_from_play(compose_train, tmp_path):
    from ttt.train import train

    train(compose_train(["+experiment=qlearn_33", "episodes=500", "eval_every=250", "eval_games=10"]))
    player = load_player(tmp_path / "run" / "checkpoint.npz")
    assert isinstance(player, QPlayer) and player.meta["episode"] == 500
    s = G3.initial_state().apply(4).apply(0)
    values = player.action_values(s)
    assert set(values) == set(s.legal_actions())
    states = [G3.initial_state()]
    for a in (4, 0, 8, 2, 1, 7, 6, 3, 5):  # a draw
        states.append(states[-1].apply(a))
    before = int(player.store.counts.sum())
    assert player.learn_from_game(states)
    assert int(player.store.counts.sum()) == before + 9  # one update per move
    player.save(tmp_path / "again.npz")
    again = load_player(tmp_path / "again.npz")
    assert again.action_values(s) == player.action_values(s)
    rng = np.random.default_rng(0)
    assert again.act(s, rng) == player.act(s, np.random.default_rng(0))


def test_reduced_budget_learns_to_beat_random(compose_train):
    from ttt.train import train

    # an eighth of the default budget, epsilon decaying at eight times the rate
    out = train(compose_train(["+experiment=qlearn_33", "episodes=12000", "agent.kappa=4e-4",
                               "eval_every=0", "eval_games=200", "eval_opponents=[random]"]))
    rows = {r["seat"]: r for r in out["results"]}
    assert rows["first"]["win_rate"] >= 0.85 and rows["both"]["score"] >= 0.85


@pytest.mark.slow
def test_default_run_never_loses_to_perfect_and_beats_random(compose_train, tmp_path):
    from ttt.train import train

    train(compose_train(["+experiment=qlearn_33", "eval_every=0", "eval_games=10"]))
    player = load_player(tmp_path / "run" / "checkpoint.npz")
    perfect = make_player("perfect", G3)
    for seat in (1, -1):  # every line a randomised perfect player can take, every tie of the agent
        assert worst_result(player, perfect, seat, opponent="optimal") == 0
    assert play_match(G3, player, perfect, 200, seed=5).both.losses == 0
    vs_random = play_match(G3, player, make_player("random", G3), 1000, seed=5, seats="first")
    assert vs_random.first.win_rate >= 0.90
