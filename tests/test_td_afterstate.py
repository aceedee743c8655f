"""Afterstate TD: symmetry keys, the two update rules by hand, rewards, seats, checkpoints, bars."""

from __future__ import annotations

import numpy as np
import pytest

from ttt.agents import load_player
from ttt.agents.tabular import BoardKeys, boltzmann_index, progress_epsilon
from ttt.agents.td_afterstate import (
    AfterstateLearner,
    Config,
    TDPlayer,
    centre_cells,
    final_reward,
    move_reward,
    opening_classes,
)
from ttt.agents.value_iteration import worst_result
from ttt.evaluation.evaluate import play_match
from ttt.games import make_game
from ttt.games.threats import blocks_line
from ttt.players import make_player

G3 = make_game("3x3")


@pytest.mark.parametrize("board", ["3x3", "4x4", "3x3x3"])
def test_board_keys_match_the_engines_canonical_key(board):
    game = make_game(board)
    keys = BoardKeys(game)
    rng = np.random.default_rng(1)
    for _ in range(20):
        s = game.initial_state()
        for _ in range(int(rng.integers(0, game.num_cells // 2))):
            if s.is_terminal():
                break
            s = s.apply(int(rng.choice(s.legal_actions())))
        if s.is_terminal():
            continue
        legal = np.array(s.legal_actions())
        got = keys.afterstate_keys(keys.images(s.array()), s.to_play(), legal)
        want = [game.canonical_key(s.apply(int(a)).array()) for a in legal]
        assert got.tolist() == want
        assert keys.key(s.array()) == game.canonical_key(s.array())


def test_symmetric_afterstates_share_one_table_entry():
    player = TDPlayer(G3, [{}], Config())
    moves = [4, 0, 8, 2, 1, 7, 6, 3, 5]
    game_states = [G3.initial_state()]
    for a in moves:
        game_states.append(game_states[-1].apply(a))
    player.learn_from_game(game_states)
    entries = len(player.tables[0])
    assert entries == 9
    for perm in G3.symmetries[1:]:  # the same game under each of the other 7 symmetries
        states = [G3.initial_state()]
        for a in moves:
            states.append(states[-1].apply(int(perm[a])))
        player.learn_from_game(states)
        assert len(player.tables[0]) == entries
    # the four corner openings are one afterstate
    assert len(opening_classes(G3, BoardKeys(G3))) == 3
    assert sorted(opening_classes(G3, BoardKeys(G3))) == [0, 1, 4]
    assert len(opening_classes(make_game("3x3x3"), BoardKeys(make_game("3x3x3")))) == 4


def test_backward_update_by_hand():
    table: dict[int, float] = {}
    learner = AfterstateLearner(table, Config(update="backward", lr=0.5, gamma=0.9))
    learner.moved(10)
    learner.moved(20)
    learner.end(1.0)
    assert table[20] == pytest.approx(0.5 * 0.9 * 1.0)  # 0.45
    assert table[10] == pytest.approx(0.5 * 0.9 * 0.45)  # r <- V(20), then 0.2025
    assert learner.visited == []


def test_td0_update_by_hand():
    table = {10: 0.2, 20: 0.6}
    learner = AfterstateLearner(table, Config(update="td0", lr=0.5, gamma=1.0))
    learner.moved(10)
    learner.moved(20)  # V(10) <- 0.2 + 0.5 * (0.6 - 0.2)
    assert table[10] == pytest.approx(0.4)
    learner.end(-1.0)  # the last afterstate moves toward the final reward
    assert table[20] == pytest.approx(0.6 + 0.5 * (-1.0 - 0.6))
    assert table[10] == pytest.approx(0.4)


def test_rewards_plain_and_shaped():
    plain, shaped = Config(rewards="plain"), Config(rewards="shaped")
    assert [final_reward(w, 1, plain) for w in (1, -1, 0)] == [1.0, -1.0, 0.0]
    assert [final_reward(w, -1, plain) for w in (1, -1, 0)] == [-1.0, 1.0, 0.0]
    assert [final_reward(w, 1, shaped) for w in (1, -1, 0)] == [1.0, -0.1, 0.5]
    assert [final_reward(w, -1, shaped) for w in (1, -1, 0)] == [-0.1, 1.0, 1.0]
    start = G3.initial_state()
    assert move_reward(G3, start, 4, shaped) == 0.8 and move_reward(G3, start, 0, shaped) == 0.0
    assert move_reward(G3, start, 4, plain) == 0.0
    assert centre_cells(G3) == {4} and centre_cells(make_game("3x3x3")) == {13}
    assert centre_cells(make_game("4x4")) == {5, 6, 9, 10}
    # X holds 0 and 1; O at 2 blocks the top row, O at 5 does not
    s = G3.state_from_board([1, 1, 0, 0, -1, 0, 0, 0, 0])
    assert s.to_play() == -1
    assert blocks_line(G3, s.board, 2, -1) and move_reward(G3, s, 2, shaped) == 0.8
    assert not blocks_line(G3, s.board, 5, -1) and move_reward(G3, s, 5, shaped) == 0.0


def test_unseen_afterstates_are_worth_init_value():
    keys = BoardKeys(G3)
    opening = keys.afterstate_keys(np.zeros(8, dtype=np.int64), 1, np.arange(9))
    player = TDPlayer(G3, [{int(opening[0]): 0.1, int(opening[4]): -0.1}], Config(init_value=0.2))
    values = player.action_values(G3.initial_state())
    assert values[0] == values[2] == 0.1 and values[4] == -0.1
    assert values[1] == values[3] == 0.2  # edges: never seen
    assert player.act(G3.initial_state(), np.random.default_rng(0)) in (1, 3, 5, 7)


def test_schedules_and_boltzmann():
    assert progress_epsilon(0.3, 0.0) == 1.0 and progress_epsilon(0.3, 1.0) == pytest.approx(0.3)
    assert progress_epsilon(0.3, 0.5) == pytest.approx(0.65)
    rng = np.random.default_rng(0)
    picks = np.bincount([boltzmann_index(np.array([0.0, np.log(3.0)]), 1.0, rng) for _ in range(4000)], minlength=2)
    assert abs(picks[1] / 4000 - 0.75) < 0.03  # P proportional to exp(V / tau): 1 : 3


def test_two_learner_checkpoint_is_one_player_using_its_seats_table(tmp_path):
    keys = BoardKeys(G3)
    opening = keys.afterstate_keys(np.zeros(8, dtype=np.int64), 1, np.arange(9))
    first_table = {int(opening[4]): 1.0}  # the first seat likes the centre
    s = G3.initial_state().apply(4)
    replies = keys.afterstate_keys(keys.images(s.array()), -1, np.array([0, 1]))
    second_table = {int(replies[1]): 1.0, int(opening[0]): 5.0}  # the second seat likes the edge
    player = TDPlayer(G3, [first_table, second_table], Config(learners=2))
    player.save(tmp_path / "two.npz")
    loaded = load_player(tmp_path / "two.npz")
    assert isinstance(loaded, TDPlayer) and len(loaded.tables) == 2
    rng = np.random.default_rng(0)
    assert loaded.act(G3.initial_state(), rng) == 4
    assert loaded.act(s, rng) in (1, 3, 5, 7)
    assert loaded.action_values(s)[1] == 1.0


def test_learn_from_play_then_save_and_load(compose_train, tmp_path):
    from ttt.train import train

    out = train(compose_train(["+experiment=td_333_shaped", "episodes=300", "eval_every=150", "eval_games=10"]))
    assert len(out["states"]) == 2
    player = load_player(tmp_path / "run" / "checkpoint.npz")
    assert player.meta["episode"] == 300 and player.settings.rewards == "shaped"
    game = player.game
    states = [game.initial_state()]
    rng = np.random.default_rng(0)
    while not states[-1].is_terminal():
        states.append(states[-1].apply(player.act(states[-1], rng)))
    before = [dict(t) for t in player.tables]
    assert player.learn_from_game(states)
    assert player.tables != before  # the game moved some values
    assert all(len(t) >= len(b) for t, b in zip(player.tables, before, strict=True))  # entries are never dropped
    player.save(tmp_path / "played.npz")
    again = load_player(tmp_path / "played.npz")
    assert again.tables == player.tables


def test_td_33_boltzmann_reduced_never_loses_to_perfect_and_ranks_the_centre_first(compose_train, tmp_path):
    from ttt.train import train

    out = train(compose_train(["+experiment=td_33_boltzmann", "episodes=10000", "eval_every=0", "eval_games=20",
                               "eval_opponents=[random]"]))
    assert out["states"] == [764]  # every 3x3 afterstate up to symmetry (765 positions less the empty board)
    opening = out["opening_values"]
    assert opening["cell_4"] > max(opening["cell_0"], opening["cell_1"]) + 0.05
    player = load_player(tmp_path / "run" / "checkpoint.npz")
    perfect = make_player("perfect", G3)
    for seat in (1, -1):  # every line a randomised perfect player can take, every tie of the agent
        assert worst_result(player, perfect, seat, opponent="optimal") == 0
    assert play_match(G3, player, perfect, 200, seed=11).both.losses == 0


@pytest.mark.slow
def test_td_33_boltzmann_default_run_never_loses_to_perfect(compose_train, tmp_path):
    from ttt.train import train

    out = train(compose_train(["+experiment=td_33_boltzmann", "eval_every=0", "eval_games=20"]))
    assert out["opening_values"]["cell_4"] > max(out["opening_values"]["cell_0"], out["opening_values"]["cell_1"])
    player = load_player(tmp_path / "run" / "checkpoint.npz")
    perfect = make_player("perfect", G3)
    for seat in (1, -1):
        assert worst_result(player, perfect, seat, opponent="optimal") == 0


@pytest.mark.slow
def test_td_333_shaped_first_seat_against_the_benchmark(compose_train, tmp_path):
    from ttt.train import train

    train(compose_train(["+experiment=td_333_shaped", "eval_every=0", "eval_games=10"]))
    player = load_player(tmp_path / "run" / "checkpoint.npz")
    game = player.game
    assert player.settings.init_value == 0.2
    r = play_match(game, player, make_player("benchmark", game), 1000, seed=2, seats="first")
    # the bar is 0.95; measured 1000/1000 with training seed 0; half of seeds 0-7 reach it (docs/tabular.md)
    assert r.first.win_rate >= 0.95
