"""Values averaged over a board's symmetries (``ValueNet.average_over``, the player spec's ``symmetries``):
invariant under the whole group, the one-pass afterstate scores equal to valuing each afterstate's images
one by one, the network as trained when switched off, and nothing of it in the weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from ttt.agents.dqn import DQNPlayer
from ttt.games import make_game
from ttt.games.symmetry import symmetry_sample
from ttt.harness.specs import load_agents
from ttt.nets.structured import build_value_net

SHIPPED = "checkpoints/dqn_444_value_d16"


def _net(board: str, rank_head: bool = False, **network):
    torch.manual_seed(0)
    cfg = {"kind": "structured", "detectors": 4, "hidden": [16], "bias": True, **network}
    game = make_game(board)
    return game, build_value_net(OmegaConf.create(cfg), game, rank_head=rank_head)


def _boards(game, n: int, seed: int = 0) -> torch.Tensor:
    """n boards of random play from the mover's view (pieces +1 and -1, the rest empty)."""
    rng = np.random.default_rng(seed)
    boards = np.zeros((n, game.num_cells), dtype=np.float32)
    for row in boards:
        for ply, cell in enumerate(rng.permutation(game.num_cells)[:rng.integers(0, game.num_cells // 2)]):
            row[cell] = 1 if ply % 2 else -1
    return torch.as_tensor(boards)


@pytest.mark.parametrize("board", ["3x3", "4x4"])
def test_averaged_over_the_whole_group_the_value_is_the_same_on_every_image(board):
    game, net = _net(board)
    x = _boards(game, 50)
    assert not torch.allclose(net(x), net(x[:, torch.tensor(game.symmetries[1])]), atol=1e-3)  # as trained: not
    net.average_over(game.symmetries)
    for perm in game.symmetries:
        assert torch.allclose(net(x), net(x[:, torch.tensor(perm)]), atol=1e-6)


@pytest.mark.parametrize("network, rank_head", [
    ({}, False), ({}, True), ({"hidden": []}, True), ({"tie_orbits": True}, False),
    ({"kind": "mlp", "hidden": [32]}, True),
])
def test_the_afterstate_scores_are_those_of_each_afterstate_valued_through_its_images(network, rank_head):
    game, net = _net("4x4x4", rank_head, **network)
    net.average_over(symmetry_sample(game.symmetries, 5))
    x = _boards(game, 6, seed=1)
    legal = x == 0
    values, ranks = net.afterstate_scores(x, legal)
    e, c = torch.nonzero(legal, as_tuple=True)
    after = x[e].clone()
    after[torch.arange(len(e)), c] = 1.0
    assert torch.allclose(values[e, c], net(after), atol=1e-5)
    assert torch.isinf(values[~legal]).all()
    assert torch.allclose(net.afterstate_values(x, legal)[e, c], net(after), atol=1e-5)
    if rank_head:
        assert torch.allclose(ranks[e, c], net.rank_logit(after), atol=1e-5)


def test_switched_off_it_is_the_network_as_trained_and_the_weights_do_not_hold_it():
    game, net = _net("4x4x4", rank_head=True)
    x = _boards(game, 20)
    legal = x == 0
    plain, plain_scores = net(x), net.afterstate_scores(x, legal)
    keys = set(net.state_dict())
    net.average_over(symmetry_sample(game.symmetries, 8))
    assert set(net.state_dict()) == keys  # a way of playing, not weights: checkpoints are unchanged
    assert not torch.allclose(net(x), plain, atol=1e-4)
    net.average_over(symmetry_sample(game.symmetries, 1))  # the identity alone
    assert torch.allclose(net(x), plain, atol=1e-6)
    net.average_over(None)
    assert torch.equal(net(x), plain)
    assert all(torch.equal(a, b) for a, b in zip(net.afterstate_scores(x, legal), plain_scores, strict=True))


def test_images_that_are_not_permutations_are_refused():
    game, net = _net("3x3")
    with pytest.raises(ValueError, match="permutations of the cells"):
        net.average_over(np.zeros((2, 9), dtype=np.int64))


def test_the_sample_is_the_identity_and_distinct_symmetries_the_same_every_time():
    group = make_game("4x4x4").symmetries
    sample = symmetry_sample(group, 16)
    assert sample.shape == (16, 64) and np.array_equal(sample[0], np.arange(64))
    assert len({tuple(row) for row in sample}) == 16 and {tuple(r) for r in sample} <= {tuple(r) for r in group}
    assert np.array_equal(sample, symmetry_sample(group, 16)) and np.array_equal(symmetry_sample(group, 192), group)
    with pytest.raises(ValueError, match="between 1 and the board's 192"):
        symmetry_sample(group, 193)


def test_the_player_spec_option():
    _, [(label, player)] = load_agents([{"checkpoint": SHIPPED, "symmetries": 16}], None)
    assert isinstance(player, DQNPlayer) and player.symmetries == 16 and player.without_rules().symmetries == 16
    assert "symmetries=16" in label
    with pytest.raises(ValueError, match="player spec .*between 1 and the board's 192"):
        load_agents([{"checkpoint": SHIPPED, "symmetries": 500}], None)
    with pytest.raises(ValueError, match="symmetries is an option of a value learner"):
        load_agents([{"checkpoint": "checkpoints/alphazero_444", "symmetries": 4}], None)
