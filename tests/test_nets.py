"""The structured layer and the five networks of the paper."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from ttt.games import make_game
from ttt.nets.structured import StructuredLayer, build_value_net, count_parameters

NETWORKS = {"structured_deep": 10_976, "structured_small": 1_520, "mlp_small": 3_250,
            "mlp_deep": 10_976, "mlp_wide": 10_985}


def network_cfg(name: str, **changes):
    cfg = OmegaConf.load(f"configs/network/{name}.yaml")
    cfg.update(changes)
    return cfg


@pytest.mark.parametrize("name,count", NETWORKS.items())
def test_paper_parameter_counts_on_4x4x4(name, count):
    assert count_parameters(build_value_net(network_cfg(name), make_game("4x4x4"))) == count


def test_biases_are_an_option():
    # 304 detector biases + 32 hidden + 1 output
    net = build_value_net(network_cfg("structured_deep", bias=True), make_game("4x4x4"))
    assert count_parameters(net) == 10_976 + 304 + 32 + 1


@pytest.mark.parametrize("board,lines", [("3x3", 8), ("4x4", 10), ("3x3x3", 49), ("4x4x4", 76),
                                         ("4x4x4_gravity", 76)])
def test_every_line_reaches_the_layer(board, lines):
    game = make_game(board)
    net = build_value_net(network_cfg("structured_deep"), game)
    assert net.first.out_features == lines * 4
    # each line's block of the dense weight covers exactly that line's cells, all lines distinct
    dense = net.first.dense_weight().detach().reshape(lines, 4, game.num_cells)
    support = {tuple(torch.nonzero(dense[i].abs().sum(0)).flatten().tolist()) for i in range(lines)}
    assert support == {tuple(sorted(map(int, line))) for line in game.lines}
    assert len(support) == lines


def line_blocks(game) -> torch.Tensor:
    """(L*4, cells) bool: detector unit l*4+j may see exactly the cells of line l."""
    mask = torch.zeros(len(game.lines) * 4, game.num_cells, dtype=torch.bool)
    for li, line in enumerate(game.lines):
        mask[li * 4:(li + 1) * 4, line.tolist()] = True
    return mask


def test_structured_layer_equals_masked_dense_linear():
    game = make_game("4x4x4")
    torch.manual_seed(0)
    layer = StructuredLayer(torch.tensor(game.lines), game.num_cells, detectors=4, bias=True)
    torch.nn.init.normal_(layer.bias)
    dense = torch.nn.Linear(64, 304)
    with torch.no_grad():
        dense.weight.copy_(layer.dense_weight())
        dense.bias.copy_(layer.bias)
    x = torch.randint(-1, 2, (32, 64)).float()
    torch.testing.assert_close(layer(x), dense(x))
    # the dense weight is zero outside the blocks: detector unit l*4+j sees only the cells of line l
    mask = line_blocks(game)
    assert (dense.weight[~mask] == 0).all() and (dense.weight[mask] != 0).all()


def test_gradients_never_touch_off_block_entries():
    game = make_game("4x4x4")
    layer = StructuredLayer(torch.tensor(game.lines), game.num_cells)
    dense = torch.nn.Linear(64, 304, bias=False)
    with torch.no_grad():
        dense.weight.copy_(layer.dense_weight())
    x = torch.randint(-1, 2, (16, 64)).float()
    layer(x).pow(2).sum().backward()
    dense(x).pow(2).sum().backward()
    mask = line_blocks(game)
    # the layer's gradient, laid out densely, is the dense gradient restricted to the blocks
    laid_out = torch.zeros(76, 64, 4)
    laid_out[torch.arange(76)[:, None], torch.tensor(game.lines)] = layer.weight.grad
    laid_out = laid_out.permute(0, 2, 1).reshape(304, 64)
    torch.testing.assert_close(laid_out, dense.weight.grad * mask)
    assert (dense.weight.grad[~mask] != 0).any()  # a dense layer would have trained them
    # a step of SGD on the layer keeps the off-block entries at exactly zero
    with torch.no_grad():
        layer.weight -= 0.1 * layer.weight.grad
    assert (layer.dense_weight()[~mask] == 0).all()


@pytest.mark.parametrize("tied", [False, True])
def test_dense_forward_gives_the_same_sums_and_gradients(tied):
    game = make_game("4x4x4")
    torch.manual_seed(0)
    per_line = build_value_net(network_cfg("structured_deep", bias=True, tie_orbits=tied), game)
    dense = build_value_net(network_cfg("structured_deep", bias=True, tie_orbits=tied, dense_forward=True), game)
    dense.load_state_dict(per_line.state_dict())  # the same parameters: the option changes the forward pass only
    assert dense.first.dense and not per_line.first.dense and "dense forward" in repr(dense.first)
    x = torch.randint(-1, 2, (64, 64)).float()
    torch.testing.assert_close(dense(x), per_line(x))
    for net in (per_line, dense):
        net.zero_grad()
        net(x).pow(2).sum().backward()
    for (name, a), (_, b) in zip(per_line.named_parameters(), dense.named_parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, msg=name)
    # the parameters are the blocks alone: nothing outside them exists to be trained
    assert [n for n, _ in dense.first.named_parameters()] == [n for n, _ in per_line.first.named_parameters()]


def test_values_in_range_and_afterstate_values_match_forward():
    game = make_game("4x4x4")
    for name in NETWORKS:
        torch.manual_seed(1)
        net = build_value_net(network_cfg(name), game)
        boards = torch.randint(-1, 2, (6, 64)).float()
        legal = boards == 0
        values = net.afterstate_values(boards, legal)
        e, a = legal.nonzero(as_tuple=True)
        after = boards[e].clone()
        after[torch.arange(len(e)), a] = 1.0
        direct = net(after)
        torch.testing.assert_close(values[e, a], direct, atol=1e-5, rtol=1e-5)
        assert (values[~legal] == float("-inf")).all()
        assert direct.abs().max() <= 1.0


def test_xavier_initialisation_bounds():
    # uniform in [-b, b] with b = sqrt(6 / (fan_in + fan_out)): the largest of ~1,000 draws comes close
    # to b (PyTorch's own Linear default, 1/sqrt(fan_in), would stay below half of it for the hidden layer)
    game = make_game("4x4x4")
    torch.manual_seed(0)
    net = build_value_net(network_cfg("structured_deep"), game)
    for weight, bound in ((net.first.weight, (6 / (4 + 4)) ** 0.5), (net.rest[0].weight, (6 / (304 + 32)) ** 0.5)):
        assert 0.95 * bound < weight.abs().max() <= bound


def test_without_biases_the_network_is_odd_in_the_board():
    # V(-s) = -V(s): why a bias-free network cannot value "my threat, opponent to move" (about 0, it
    # gets blocked) and its negation "opponent's threat, opponent to move" (-1, it wins) at once
    game = make_game("4x4x4")
    boards = torch.randint(-1, 2, (8, 64)).float()
    no_bias = build_value_net(network_cfg("structured_deep"), game)
    torch.testing.assert_close(no_bias(-boards), -no_bias(boards))
    with_bias = build_value_net(network_cfg("structured_deep", bias=True), game)
    with torch.no_grad():
        for module in with_bias.modules():
            if getattr(module, "bias", None) is not None:
                module.bias.fill_(0.1)
    assert not torch.allclose(with_bias(-boards), -with_bias(boards))


def test_tied_detectors_share_one_block_per_orbit_and_equal_an_untied_copy():
    game = make_game("4x4x4")
    torch.manual_seed(0)
    tied = build_value_net(OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": True,
                                             "tie_orbits": True}), game)
    untied = build_value_net(OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": True}),
                             game)
    # 4 orbits x (4 cells x 4 detectors + 4 biases) in the first layer, instead of 76 x (16 + 4)
    first = count_parameters(tied.first)
    assert first == 4 * (16 + 4)
    assert count_parameters(tied) == count_parameters(untied) - 76 * (16 + 4) + first
    blocks = tied.first.blocks()
    orbits = tied.first.orbits
    for o in range(4):
        same = blocks[orbits == o]
        assert (same == same[0]).all()
    assert not torch.equal(blocks[orbits == 0][0], blocks[orbits == 1][0])
    # the same function as an untied layer holding the expanded weights on the oriented lines
    copy = StructuredLayer(tied.first.lines, 64, 4, bias=True)
    with torch.no_grad():
        copy.weight.copy_(blocks)
        copy.bias.copy_(tied.first.biases())
    boards = torch.randint(-1, 2, (5, 64)).float()
    torch.testing.assert_close(copy(boards), tied.first(boards))
    # a gradient from a single line reaches the whole orbit's block, and nothing else
    tied.zero_grad()
    tied.first(boards)[:, :4].sum().backward()  # the units of line 0
    grads = tied.first.shared_weight.grad
    assert grads[orbits[0]].abs().sum() > 0
    assert torch.count_nonzero(grads.abs().sum((1, 2))) == 1
    legal = boards == 0
    e, a = legal.nonzero(as_tuple=True)
    after = boards[e].clone()
    after[torch.arange(len(e)), a] = 1.0
    torch.testing.assert_close(tied.afterstate_values(boards, legal)[e, a], tied(after), atol=1e-5, rtol=1e-5)


def test_tied_detectors_see_symmetric_boards_alike_on_a_line():
    # a pattern on a line and its image under a symmetry give the same first-layer units (moved with the line)
    from ttt.games.symmetry import line_orbits

    game = make_game("4x4x4")
    net = build_value_net(OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": True,
                                            "tie_orbits": True}), game)
    orbit, oriented = line_orbits(game.lines, game.symmetries)
    board = torch.zeros(64)
    board[torch.as_tensor(oriented[0][:3])] = torch.tensor([1.0, -1.0, 1.0])
    units = net.first(board[None]).view(76, 4)
    for m in np.flatnonzero(orbit == orbit[0])[:6]:
        image = torch.zeros(64)
        image[torch.as_tensor(oriented[m][:3])] = torch.tensor([1.0, -1.0, 1.0])
        torch.testing.assert_close(net.first(image[None]).view(76, 4)[m], units[0])


def test_tie_lines_shares_one_block_across_every_line_kind():
    # network.tie_lines: one (4 x 4) block and 4 biases for all 76 lines of 4x4x4, whichever orbit a line is in
    game = make_game("4x4x4")
    torch.manual_seed(0)
    cfg = {"kind": "structured", "detectors": 4, "hidden": [32], "bias": True}
    one = build_value_net(OmegaConf.create({**cfg, "tie_lines": True}), game)
    by_orbit = build_value_net(OmegaConf.create({**cfg, "tie_orbits": True}), game)
    assert count_parameters(one.first) == 16 + 4
    assert count_parameters(one) == count_parameters(by_orbit) - 3 * (16 + 4)
    assert (one.first.blocks() == one.first.blocks()[0]).all()
    torch.testing.assert_close(one.first.biases().view(76, 4), one.first.biases()[:4].expand(76, 4))
    # the same pattern on the first line of each of the 4 orbits, cells in the orbits' orientation: the same units
    board_units = []
    for line in np.unique(by_orbit.first.orbits.numpy(), return_index=True)[1]:
        board = torch.zeros(64)
        board[one.first.lines[line, :3]] = torch.tensor([1.0, 1.0, -1.0])
        board_units.append(one.first(board[None]).view(76, 4)[line])
    for units in board_units[1:]:
        torch.testing.assert_close(units, board_units[0])
    with pytest.raises(ValueError, match="tie_lines=true needs network.kind=structured"):
        build_value_net(OmegaConf.create({"kind": "mlp", "hidden": [32], "tie_lines": True}), game)


def test_the_playable_plane_is_the_cells_a_move_can_take_now():
    # Score Four: cell = layer * 16 + row * 4 + col. Pieces on 0 and 16 (a column two high) and on 5:
    # playable are the empty bottom cells, 32 above 16 and 21 above 5, and nothing else
    game = make_game("4x4x4_gravity")
    net = build_value_net(network_cfg("structured_deep", playable=True), game)
    board = torch.zeros(2, 64)
    board[0, [0, 16]], board[0, 5] = 1.0, -1.0
    plane = net.first.inputs(board)[:, 64:]
    assert set(torch.nonzero(plane[0]).flatten().tolist()) == set(range(16)) - {0, 5} | {32, 21}
    assert set(torch.nonzero(plane[1]).flatten().tolist()) == set(range(16))
    # without gravity the plane is the empty cells
    free = build_value_net(network_cfg("structured_deep", playable=True), make_game("4x4x4"))
    assert torch.equal(free.first.inputs(board)[:, 64:], (board == 0).float())


def test_the_playable_plane_doubles_each_line_block():
    # each of the 76 lines' 4 detectors sees 8 inputs: 76 * 8 * 4 = 2,432 weights in place of 1,216
    net = build_value_net(network_cfg("structured_deep", playable=True), make_game("4x4x4_gravity"))
    assert net.first.weight.shape == (76, 8, 4)
    assert count_parameters(net) == 10_976 + 76 * 4 * 4
    with pytest.raises(ValueError, match="needs network.kind=structured"):
        build_value_net(network_cfg("mlp_deep", playable=True), make_game("4x4x4_gravity"))


@pytest.mark.parametrize("changes", [{"playable": True, "bias": True}, {"activation": "sigmoid"},
                                     {"playable": True, "activation": "sigmoid", "dense_forward": True}])
@pytest.mark.parametrize("board", ["4x4x4_gravity", "4x4x4"])
def test_afterstate_values_match_forward_with_the_playable_plane_and_sigmoid_units(changes, board):
    # a move changes the playable flags of its cell and the one above it: afterstate_values must see that
    from ttt.games import BatchedGames, random_legal_actions

    game = make_game(board)
    torch.manual_seed(0)
    net = build_value_net(network_cfg("structured_deep", **changes), game)
    games, rng = BatchedGames(game, 6), np.random.default_rng(0)
    for _ in range(11):
        games.play(random_legal_actions(games.legal_mask(), rng))
    boards = torch.as_tensor(games.board * games.to_play[:, None], dtype=torch.float32)
    legal = torch.as_tensor(games.legal_mask())
    fast = net.afterstate_values(boards, legal)
    e, cell = torch.nonzero(legal, as_tuple=True)
    after = boards[e].clone()
    after[torch.arange(len(e)), cell] = 1.0
    with torch.no_grad():
        torch.testing.assert_close(fast[e, cell], net(after), rtol=0, atol=1e-5)
    assert torch.isinf(fast[~legal]).all()


def test_sigmoid_hidden_units_are_an_option():
    net = build_value_net(network_cfg("structured_deep", activation="sigmoid"), make_game("4x4x4"))
    assert [type(m).__name__ for m in net.rest] == ["Linear", "Sigmoid", "Linear", "Tanh"]  # the value unit: Tanh
    x = torch.zeros(1, 64)
    x[0, 5] = 1.0
    h = torch.sigmoid(net.first(x))
    with torch.no_grad():
        assert float(net(x)) == pytest.approx(float(torch.tanh(net.rest[2](torch.sigmoid(net.rest[0](h))))))
    with pytest.raises(ValueError, match="network.activation='relu'"):
        build_value_net(network_cfg("structured_deep", activation="relu"), make_game("4x4x4"))
