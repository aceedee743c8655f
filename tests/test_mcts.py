"""UCT with rollouts: the selection rule, signs of the backup, true values of ended games, tactics
on every board, determinism, and the strength bars (slow)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ttt.evaluation.evaluate import play_match
from ttt.games import BOARDS, make_game
from ttt.games.threats import completing_moves
from ttt.players import PLAYERS, make_player
from ttt.players.mcts import MCTSPlayer
from ttt.players.tree import Node, uct_scores


def tactic_position(name: str, block: bool):
    """A position on board ``name`` with one line of the first player one piece short (cells
    0..k-2 of row 0 on the bottom layer; its last cell k-1 completes it) and a few second-player
    pieces in the last row of that layer. ``block=False``: the first player is to move and wins at
    k-1. ``block=True``: the second player is to move and must take k-1."""
    game = make_game(name)
    n, k = game.n, game.line_length
    board = np.zeros(game.num_cells, dtype=np.int8)
    board[: k - 1] = 1
    far_row = (n - 1) * n  # row n-1 of layer 0 (the bottom layer with gravity)
    board[far_row: far_row + k - (2 if block else 1)] = -1
    state = game.state_from_board(board)
    assert state.to_play() == (-1 if block else 1)
    return game, state, k - 1


@pytest.mark.parametrize("name", list(BOARDS))
def test_tactic_positions_are_what_they_claim(name):
    game, state, cell = tactic_position(name, block=False)
    b = np.array(state.board, dtype=np.int8)[None]
    legal = state.legal_mask()[None]
    assert list(np.flatnonzero(completing_moves(b, np.array([1], np.int8), legal, game)[0])) == [cell]
    game, state, cell = tactic_position(name, block=True)
    b = np.array(state.board, dtype=np.int8)[None]
    legal = state.legal_mask()[None]
    assert list(np.flatnonzero(completing_moves(b, np.array([1], np.int8), legal, game)[0])) == [cell]
    assert not completing_moves(b, np.array([-1], np.int8), legal, game).any()


def test_uct_scores_hand_computed():
    # Q = (0.5, 0, 0.9), N = (2, 1, 1): ln 4 = 1.3863
    q, n = np.array([0.5, 0.0, 0.9]), np.array([2.0, 1.0, 1.0])
    c = math.sqrt(2)
    expected = [0.5 + c * math.sqrt(math.log(4) / 3), c * math.sqrt(math.log(4) / 2),
                0.9 + c * math.sqrt(math.log(4) / 2)]
    np.testing.assert_allclose(uct_scores(q, n, c), expected)
    assert int(np.argmax(uct_scores(q, n, c))) == 2
    # with little exploration the larger mean still wins; with a lot the less visited move does
    assert int(np.argmax(uct_scores(np.array([0.5, 0.3]), np.array([10.0, 2.0]), 0.1))) == 0
    assert int(np.argmax(uct_scores(np.array([0.5, 0.3]), np.array([10.0, 2.0]), 2.0))) == 1


def test_terminal_node_has_its_true_value():
    game = make_game("3x3")
    won = game.state_from_board([1, 1, 1, -1, -1, 0, 0, 0, 0])
    lost = game.state_from_board([-1, -1, -1, 1, 1, 0, 1, 0, 0])
    full = game.state_from_board([1, -1, 1, 1, -1, -1, -1, 1, 1])
    assert Node(won).value == 1.0 and Node(lost).value == -1.0 and Node(full).value == 0.0


@pytest.mark.parametrize("name", list(BOARDS))
def test_finds_win_in_one(name):
    game, state, cell = tactic_position(name, block=False)
    player = MCTSPlayer(game, simulations=200, seed=0)
    assert player.act(state) == cell


def test_action_values_of_a_win_in_one():
    # the root plays the win without simulating: the hint still says which move wins
    game, state, cell = tactic_position("3x3", block=False)
    values = MCTSPlayer(game, simulations=50, seed=0).action_values(state)
    assert sorted(values) == state.legal_actions()
    assert values[cell] == 1.0 and all(v == 0.0 for a, v in values.items() if a != cell)


@pytest.mark.parametrize("name", list(BOARDS))
def test_blocks_loss_in_one(name):
    game, state, cell = tactic_position(name, block=True)
    player = MCTSPlayer(game, simulations=200, seed=0)
    assert player.act(state) == cell
    root = player.last_roots[0]
    # every other move was scored as the loss it is, from the view of the player to move
    others = root.actions != cell
    np.testing.assert_array_equal(root.q()[others], -1.0)


@pytest.mark.parametrize("block", [False, True])
def test_plain_uct_tactics_on_3x3(block):
    game, state, cell = tactic_position("3x3", block=block)
    player = MCTSPlayer(game, simulations=300, decisive=False, seed=0)
    assert player.act(state) == cell
    if not block:  # the winning move ends the game: its value is the true +1 on every visit
        root = player.last_roots[0]
        assert root.q()[list(root.actions).index(cell)] == 1.0


def test_backup_flips_sign_between_plies():
    game = make_game("3x3")
    player = MCTSPlayer(game, simulations=400, decisive=False, seed=1)
    player.act(game.initial_state())
    root = player.last_roots[0]
    checked = 0
    for idx, child in enumerate(root.children):
        if child is None or child.value is not None:
            continue
        # every visit but the child's own first rollout passed through one of its moves, which
        # are scored for the other player: with the sign flipped, the sums cancel to one result
        assert root.N[idx] == child.N.sum() + 1
        assert abs(root.W[idx] + child.W.sum()) <= 1.0
        checked += 1
    assert checked == 9


def test_same_seed_same_moves_and_registry():
    game = make_game("4x4x4")
    assert PLAYERS["mcts"] is MCTSPlayer
    a = make_player("mcts", game, simulations=50, seed=5)
    b = make_player("mcts", game, simulations=50, seed=5)
    r1 = play_match(game, a, make_player("random", game), 4, seed=3)
    r2 = play_match(game, b, make_player("random", game), 4, seed=3)
    assert (r1.both.wins, r1.both.draws) == (r2.both.wins, r2.both.draws)
    s = game.initial_state().apply(21)
    assert MCTSPlayer(game, 100, seed=9).act(s) == MCTSPlayer(game, 100, seed=9).act(s)
    values = MCTSPlayer(game, 100, seed=9).action_values(s)
    assert sorted(values) == s.legal_actions() and all(-1 <= v <= 1 for v in values.values())


def test_benchmark_rollouts_block_too():
    game, state, cell = tactic_position("4x4x4_gravity", block=True)
    assert MCTSPlayer(game, simulations=100, rollout="benchmark", seed=0).act(state) == cell


def test_never_loses_to_perfect_on_3x3_short():
    game = make_game("3x3")
    r = play_match(game, make_player("mcts", game, simulations=1000), make_player("perfect", game), 20, seed=0)
    assert r.both.losses == 0, r.summary()


@pytest.mark.slow
def test_never_loses_to_perfect_on_3x3_200_games():
    game = make_game("3x3")
    r = play_match(game, make_player("mcts", game, simulations=1000), make_player("perfect", game), 200, seed=0)
    assert r.both.losses == 0, r.summary()


@pytest.mark.slow
def test_beats_benchmark_on_4x4x4():
    game = make_game("4x4x4")
    r = play_match(game, make_player("mcts", game, simulations=1000), make_player("benchmark", game), 40, seed=1)
    assert r.both.score > 0.75, r.summary()


def test_player_spec_for_benchmark_and_play():
    from ttt.harness.specs import load_agents

    game, [(label, player)] = load_agents(["mcts:200"], "4x4x4")
    assert isinstance(player, MCTSPlayer) and player.simulations == 200 and game.name == "4x4x4"
    _, [(_, player)] = load_agents(["mcts:simulations=50:c=1.0:rollout=benchmark"], "3x3")
    assert (player.simulations, player.c, player.rollout) == (50, 1.0, "benchmark")
