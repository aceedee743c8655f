"""Values averaged over a board's symmetries (``SymmetryAveraged``, the player spec's ``symmetries``):
invariant under the whole group, the one-pass afterstate scores equal to valuing each afterstate's images
one by one, the network as trained through the identity alone, and nothing of it in the network: two
players on one network, each with its own symmetries, value boards as each would alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from ttt.agents.dqn import DQNPlayer
from ttt.games import BatchedGames, make_game, random_legal_actions
from ttt.games.symmetry import symmetry_sample
from ttt.harness.specs import load_agents
from ttt.nets.averaged import SymmetryAveraged
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
    averaged = SymmetryAveraged(net, game.symmetries)
    for perm in game.symmetries:
        assert torch.allclose(averaged(x), averaged(x[:, torch.tensor(perm)]), atol=1e-6)


@pytest.mark.parametrize("network, rank_head", [
    ({}, False), ({}, True), ({"hidden": []}, True), ({"tie_orbits": True}, False),
    ({"kind": "mlp", "hidden": [32]}, True),
])
def test_the_afterstate_scores_are_those_of_each_afterstate_valued_through_its_images(network, rank_head):
    game, plain = _net("4x4x4", rank_head, **network)
    net = SymmetryAveraged(plain, symmetry_sample(game.symmetries, 5))
    x = _boards(game, 6, seed=1)
    legal = x == 0
    values, ranks = net.afterstate_scores(x, legal)
    e, c = torch.nonzero(legal, as_tuple=True)
    after = x[e].clone()
    after[torch.arange(len(e)), c] = 1.0
    assert torch.allclose(values[e, c], net(after), atol=1e-5)
    assert torch.isinf(values[~legal]).all()
    assert torch.allclose(net.afterstate_values(x, legal)[e, c], net(after), atol=1e-5)
    assert torch.allclose(net.afterstate_logits(x, legal)[e, c], net.logit(after), atol=1e-5)
    if rank_head:
        assert torch.allclose(ranks[e, c], net.rank_logit(after), atol=1e-5)


def test_through_the_identity_it_is_the_network_as_trained_and_the_network_is_unchanged():
    game, net = _net("4x4x4", rank_head=True)
    x = _boards(game, 20)
    legal = x == 0
    plain, plain_scores = net(x), net.afterstate_scores(x, legal)
    keys = set(net.state_dict())
    averaged = SymmetryAveraged(net, symmetry_sample(game.symmetries, 8))
    assert set(net.state_dict()) == keys and not list(averaged.parameters(recurse=False))  # no weights of its own
    assert not torch.allclose(averaged(x), plain, atol=1e-4)
    assert torch.equal(net(x), plain)  # the network itself still values each board alone
    assert all(torch.equal(a, b) for a, b in zip(net.afterstate_scores(x, legal), plain_scores, strict=True))
    identity = SymmetryAveraged(net, symmetry_sample(game.symmetries, 1))
    assert torch.allclose(identity(x), plain, atol=1e-6)
    assert torch.allclose(identity.afterstate_scores(x, legal)[1], plain_scores[1], atol=1e-6)


def test_images_that_are_not_permutations_are_refused():
    game, net = _net("3x3")
    with pytest.raises(ValueError, match="permutations of the cells"):
        SymmetryAveraged(net, np.zeros((2, 9), dtype=np.int64))


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


def test_two_players_on_one_network_keep_their_own_symmetries():
    game, net = _net("4x4x4", rank_head=True)
    alone, averaged = DQNPlayer(game, net), DQNPlayer(game, net)
    g = BatchedGames(game, 6)
    rows, rng = np.arange(len(g)), np.random.default_rng(0)
    for _ in range(5):
        g.play(random_legal_actions(g.legal_mask(), rng))
    plain = alone.values(g, rows)
    averaged.symmetries = 8
    assert alone.symmetries == 1 and averaged.symmetries == 8 and alone.scorer is net
    assert torch.equal(alone.values(g, rows), plain)  # the other player is unchanged
    assert not torch.allclose(averaged.values(g, rows), plain, atol=1e-4, equal_nan=True)
    views = _boards(game, 10, seed=2).numpy()
    with torch.no_grad():
        x = torch.as_tensor(views)
        assert np.array_equal(alone.value_of_afterstates(views), net(x).double().numpy())
        expected = SymmetryAveraged(net, symmetry_sample(game.symmetries, 8))(x).double().numpy()
        assert np.array_equal(averaged.value_of_afterstates(views), expected)
    with_rules = averaged.without_rules()
    assert with_rules.symmetries == 8 and with_rules.net is net
    averaged.symmetries = 1
    assert averaged.scorer is net and with_rules.symmetries == 8
