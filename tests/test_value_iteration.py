"""Minimax value iteration: exact counts and values on 3x3, the greedy policy, self-play, checkpoints."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ttt.agents import load_player
from ttt.agents.value_iteration import (
    ValueIterationPlayer,
    enumerate_positions,
    solve,
    table_arrays,
    worst_result,
)
from ttt.evaluation.evaluate import play_match
from ttt.games import make_game
from ttt.players import make_player


@pytest.fixture(scope="module")
def solved():
    game = make_game("3x3")
    levels, sweeps = solve(game)
    hashes, values = table_arrays(levels)
    return game, levels, sweeps, ValueIterationPlayer(game, hashes, values)


def value_of(player: ValueIterationPlayer, board) -> int:
    h = player.game.ternary_hash(np.array(board))
    return int(player.values[np.searchsorted(player.hashes, h)])


def test_3x3_has_5478_positions_765_up_to_symmetry(solved):
    game, levels, _, player = solved
    assert sum(len(lv.hashes) for lv in levels) == 5478
    assert [len(lv.hashes) for lv in levels[:3]] == [1, 9, 72]
    boards = ((player.hashes[:, None] // 3 ** np.arange(9)) % 3).astype(np.int8)
    boards[boards == 2] = -1
    assert len({game.canonical_key(b) for b in boards}) == 765


def test_start_is_a_draw_and_hand_checked_positions(solved):
    _, levels, _, player = solved
    assert levels[0].values[0] == 0
    # X to move with two in a row: X wins
    assert value_of(player, [1, 1, 0, -1, -1, 0, 0, 0, 0]) == 1
    # O to move with two in a row and X unable to stop it: O wins
    assert value_of(player, [1, 1, 0, -1, -1, 0, 1, 0, 0]) == -1
    # X opened in a corner, O answered on an edge next to it: X wins (a known trap)
    assert value_of(player, [1, -1, 0, 0, 0, 0, 0, 0, 0]) == 1
    # X in a corner, O in the centre: a draw
    assert value_of(player, [1, 0, 0, 0, -1, 0, 0, 0, 0]) == 0
    # finished games are worth their winner
    assert value_of(player, [1, 1, 1, -1, -1, 0, 0, 0, 0]) == 1


def test_sweeps_stop_when_nothing_changes_and_both_orders_agree(solved):
    game, levels, sweeps, player = solved
    assert sweeps == 6  # synchronous: the last sweep changes nothing
    levels2, sweeps2 = solve(game, in_place=True)
    assert sweeps2 == 2  # last ply first: one sweep solves, one confirms
    h2, v2 = table_arrays(levels2)
    assert np.array_equal(h2, player.hashes) and np.array_equal(v2, player.values)


def test_greedy_policy_never_loses(solved):
    game, _, _, player = solved
    perfect = make_player("perfect", game)
    for seat in (1, -1):
        assert worst_result(player, perfect, seat, opponent="any") == 0  # no opponent beats it
        assert worst_result(perfect, player, seat, opponent="optimal") == 0  # and it agrees with the perfect player
    r = play_match(game, player, perfect, 200, seed=3)
    assert r.both.losses == 0 and r.both.draws == 200


def test_enumeration_follows_the_engine_rules():
    game = make_game("3x3")
    levels = enumerate_positions(game)
    rng = np.random.default_rng(0)
    for _ in range(50):  # random games: every position is in its level, terminal exactly when the engine says
        s = game.initial_state()
        while True:
            lv = levels[s.num_moves]
            i = np.searchsorted(lv.hashes, game.ternary_hash(s.array()))
            assert lv.hashes[i] == game.ternary_hash(s.array())
            assert lv.terminal[i] == s.is_terminal()
            if s.is_terminal():
                assert lv.values[i] == s.winner()
                break
            s = s.apply(int(rng.choice(s.legal_actions())))


def test_train_vi_33_selfplay_and_checkpoint(compose_train, tmp_path):
    from ttt.train import train

    cfg = compose_train(["+experiment=vi_33", "eval_games=20", "agent.selfplay_games=400"])
    out = train(cfg)
    assert out["positions"] == 5478 and out["sweeps"] == 6 and out["start_value"] == 0
    greedy, explore = out["selfplay"]["greedy"], out["selfplay"]["epsilon_0.1"]
    assert greedy["draws"] == 400
    assert explore["first_wins"] > explore["second_wins"] > 0
    for row in out["results"]:
        assert row["losses"] == 0
    final = json.loads((tmp_path / "run" / "final_eval.json").read_text())
    assert final["sweeps"] == 6 and final["episodes"] == 0  # no training games, whatever cfg.episodes says
    player = load_player(tmp_path / "run" / "checkpoint.npz")
    assert isinstance(player, ValueIterationPlayer)
    s = make_game("3x3").initial_state().apply(0)
    assert player.action_values(s)[4] == 0 and player.action_values(s)[1] == -1
    with np.load(tmp_path / "run" / "checkpoint.npz", allow_pickle=False) as z:
        assert z["hashes"].dtype == np.int64 and len(z["values"]) == 5478
