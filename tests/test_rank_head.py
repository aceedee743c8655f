"""The rank head (``agent.parts.labels.rank_head``): a second output on the value network's trunk that only the
rank pairs train, so that the value head is trained by the TD(0) targets and the rules' labels alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from ttt.agents import load_player
from ttt.agents.dqn import NO_RULES, Config, DQNPlayer, Rules, Trainer, rank_loss
from ttt.agents.dqn.moves import move_scores
from ttt.agents.dqn.settings import upgrade_agent
from ttt.agents.dqn.td import td_loss
from ttt.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from ttt.config import ConfigError
from ttt.games import BatchedGames, make_game
from ttt.nets.structured import build_value_net, count_parameters

DATA = Path(__file__).parent / "data"
DEFAULT_WEIGHTS = DATA / "dqn_default_weights.pt"  # short_run()'s weights, trained by the code before the rank head
NETWORK = OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": True,
                            "dense_forward": True})
# the dqn_444 recipe's options, on 3x3 and a few plies: rule labels, rank pairs against the values' hardest
# moves, forced blocks, the loss and fork rules, frozen copies after 4 games, symmetric images, first_lr
RECIPE = dict(gamma=0.97, switch_episode=4, refresh_every=4, frozen_pool=2, frozen_epsilon=0.1,
              exact_losses=True, exact_forks=True, rule_labels=True, fork_defence_labels=4,
              symmetry_augment=True, random_labels=16, rank_labels=16, rank_forced=True, rank_moves=3,
              rank_moves_wins=False, rank_weight=0.5, first_lr=0.01)


def short_run(plies: int = 40, **agent) -> Trainer:
    """The recipe's trainer on 3x3, 4 games side by side, seed 0, after ``plies`` plies."""
    torch.manual_seed(0)
    cfg = Config(**upgrade_agent({**RECIPE, **agent}))
    trainer = Trainer(make_game("3x3"), NETWORK, cfg, 4, np.random.default_rng(0))
    for _ in range(plies):
        trainer.step()
    return trainer


ROOT = Path(__file__).resolve().parents[1]
QUBIC = make_game("4x4x4")


def network(name: str, **changes):
    """A network of configs/network/ with ``changes``."""
    return OmegaConf.merge(OmegaConf.load(ROOT / "configs" / "network" / f"{name}.yaml"), changes)


def test_default_training_is_the_code_before_the_rank_head_to_float_rounding():
    # the reference weights were written by this same short run before the rank head existed, on another
    # machine: another CPU rounds some sums otherwise (6e-8 apart at most on an AMD EPYC), so not bit for
    # bit, but within 1e-4, which rounding cannot reach and a change of the training does (rank_weight 0.5 ->
    # 0.51 moves a weight by 1.6e-3; one ply fewer by 7.8e-3)
    saved = torch.load(DEFAULT_WEIGHTS, weights_only=True)
    weights = short_run().net.state_dict()
    assert set(weights) == set(saved)
    for key, value in saved.items():
        torch.testing.assert_close(weights[key], value, atol=1e-4, rtol=0, msg=key)
    changed = short_run(rank_weight=0.51).net.state_dict()  # the tolerance sees a change
    assert any((changed[key] - value).abs().max() > 1e-4 for key, value in saved.items())


@pytest.mark.parametrize("name, bias, plain, head", [
    ("structured_deep", False, 10_976, 32), ("structured_deep", True, 10_976 + 337, 32),
    ("structured_small", False, 1_520, 304), ("mlp_deep", False, 10_976, 51)])
def test_the_rank_head_adds_one_unit_on_the_trunk(name, bias, plain, head):
    cfg = network(name, bias=bias)
    assert count_parameters(build_value_net(cfg, QUBIC)) == plain
    net = build_value_net(cfg, QUBIC, rank_head=True)
    assert count_parameters(net) == plain + head
    assert count_parameters(net.rank) == head


def test_the_shared_weights_start_as_without_the_head():
    torch.manual_seed(3)
    plain = build_value_net(network("structured_deep", bias=True), QUBIC).state_dict()
    torch.manual_seed(3)
    headed = build_value_net(network("structured_deep", bias=True), QUBIC, rank_head=True).state_dict()
    assert set(headed) - set(plain) == {"rank.weight"}  # no bias: the hinge compares scores
    assert all(torch.equal(plain[k], headed[k]) for k in plain)


def _grads(net, loss):
    net.zero_grad(set_to_none=True)
    loss.backward()
    return {name: p.grad for name, p in net.named_parameters()}


def _boards(n=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-1, 2, (n, QUBIC.num_cells), generator=g).float()


def test_the_rank_loss_reaches_the_rank_head_and_the_trunk_not_the_value_head():
    net = build_value_net(network("structured_deep", bias=True), QUBIC, rank_head=True)
    boards = _boards()
    grads = _grads(net, rank_loss(net, boards[:6], boards[6:]))
    value_head = {"rest.2.weight", "rest.2.bias"}  # the Linear under the value's Tanh
    assert all(grads[k] is None for k in value_head)
    for k in ("rank.weight", "first.weight", "first.bias", "rest.0.weight", "rest.0.bias"):
        assert grads[k] is not None and grads[k].abs().sum() > 0, k


def test_the_td_loss_does_not_touch_the_rank_head():
    net = build_value_net(network("structured_deep", bias=True), QUBIC, rank_head=True)
    grads = _grads(net, td_loss(net(_boards()), torch.linspace(-1, 1, 12), "huber"))
    assert grads["rank.weight"] is None
    for k in ("rest.2.weight", "rest.0.weight", "first.weight"):
        assert grads[k].abs().sum() > 0, k


def test_without_a_head_the_rank_loss_is_on_the_value_logit():
    net = build_value_net(network("structured_deep", bias=True), QUBIC)
    boards = _boards()
    assert torch.equal(net.rank_logit(boards), net.logit(boards))
    assert _grads(net, rank_loss(net, boards[:6], boards[6:]))["rest.2.weight"].abs().sum() > 0


def test_a_trainer_step_moves_the_rank_head_only_by_rank_pairs():
    trainer = short_run(plies=0, rank_head=True)
    rank = {k: v.clone() for k, v in trainer.net.rank.state_dict().items()}
    value = trainer.net.rest[2].weight.clone()
    boards = _boards(8).numpy()
    trainer.part("labels").pairs = [None]  # no rank pairs: TD alone
    trainer._update(boards, np.linspace(-1, 1, 8, dtype=np.float32), np.zeros(8, dtype=np.int64))  # TD alone
    assert all(torch.equal(rank[k], v) for k, v in trainer.net.rank.state_dict().items())
    assert not torch.equal(value, trainer.net.rest[2].weight)
    for _ in range(6):  # the recipe's plies: TD targets, rule labels and, once positions have threats, rank pairs
        trainer.step()
    assert not torch.equal(rank["weight"], trainer.net.rank.weight)


@pytest.mark.parametrize("name, changes", [("structured_deep", {"bias": True}),
                                           ("structured_deep", {"bias": True, "dense_forward": True}),
                                           ("structured_small", {}), ("mlp_deep", {"bias": True})])
def test_afterstate_scores_are_both_heads_at_every_afterstate(name, changes):
    torch.manual_seed(1)
    net = build_value_net(network(name, **changes), QUBIC, rank_head=True)
    boards = _boards(6, seed=2)
    legal = boards == 0
    values, ranks = net.afterstate_scores(boards, legal)
    e, a = legal.nonzero(as_tuple=True)
    after = boards[e].clone()
    after[torch.arange(len(e)), a] = 1.0
    assert torch.allclose(values[e, a], net(after), atol=1e-5)
    assert torch.allclose(ranks[e, a], net.rank_logit(after), atol=1e-5)
    assert (values[~legal] == float("-inf")).all() and (ranks[~legal] == float("-inf")).all()


def _position(game, cells):
    """A one-game batch after the moves ``cells``."""
    g = BatchedGames(game, 1)
    for cell in cells:
        g.play(np.array([cell]))
    return g


def test_rules_outrank_the_rank_head_and_values_stay_the_value_heads():
    game = make_game("3x3")
    net = build_value_net(network("structured_deep", bias=True), game, rank_head=True)
    # X on 0, 1, O on 3, 4, X to move: 2 wins, 5 blocks, every other move lets O win on 5
    g = _position(game, [0, 3, 1, 4])
    with torch.no_grad():
        net.rank.weight.fill_(50.0)  # rank scores far from 0: squashed, they still stay inside (-1, 1)
    order, values = move_scores(net, g, np.array([0]), Rules(wins=True, losses=True))
    assert int(order[0].argmax()) == 2 and order[0, 2] == 3.0
    assert (order[0, [6, 7, 8]] == -3.0).all() and -1 < order[0, 5] < 1  # losses below the rest, the rest in (-1, 1)
    plain = move_scores(net, g, np.array([0]), NO_RULES)[1]
    assert values[0, 2] == 1.0 and values[0, 6] == -1.0 and values[0, 5] == plain[0, 5]
    # what calibration and the hint read: the value head's values
    player = DQNPlayer(game, net, None, NO_RULES)
    assert torch.equal(player.values(g, np.array([0])), plain)
    assert player.action_values(g.state(0))[5] == pytest.approx(float(plain[0, 5]))


def test_the_network_alone_moves_by_the_rank_head():
    game = make_game("3x3")
    net = build_value_net(network("structured_deep", bias=True), game, rank_head=True)
    with torch.no_grad():  # the rank head as the value's logit negated: its best move is the value's worst
        net.rank.weight.copy_(-net.rest[2].weight)  # the value head's bias does not change its order
    g = _position(game, [4, 0])
    values = move_scores(net, g, np.array([0]), NO_RULES)[1][0]
    player = DQNPlayer(game, net, None, NO_RULES)
    assert int(player.act_batch(g)[0]) == int(torch.where(values > float("-inf"), values, float("inf")).argmin())
    assert int(player.act_batch(g)[0]) != int(values.argmax())


def test_save_and_load_keep_the_rank_head(tmp_path):
    trainer = short_run(plies=6, rank_head=True)
    player = DQNPlayer(trainer.game, trainer.net, OmegaConf.to_container(NETWORK), Rules(wins=True, losses=True))
    path = tmp_path / "p.pt"
    player.save(path)
    loaded = load_player(path)
    assert loaded.net.rank is not None
    saved, back = trainer.net.state_dict(), loaded.net.state_dict()
    assert set(saved) == set(back) and all(torch.equal(saved[k], back[k]) for k in saved)
    g = _position(trainer.game, [4, 0])
    for a, b in zip(move_scores(trainer.net, g, np.array([0]), player.rules),
                    move_scores(loaded.net, g, np.array([0]), loaded.rules), strict=True):
        assert torch.equal(a, b)
    # a checkpoint whose record of the heads does not fit its weights: one line naming the file
    payload = load_checkpoint(path)
    del payload["rank_head"]
    bad = tmp_path / "bad.pt"
    save_checkpoint(bad, payload)
    with pytest.raises(CheckpointError) as e:
        load_player(bad)
    assert str(e.value).startswith(f"{bad}: ") and "rank.weight" in str(e.value) and "\n" not in str(e.value)


def test_resuming_with_a_head_the_checkpoint_lacks_is_one_line():
    saved = short_run(plies=2).state_dict()
    with pytest.raises(CheckpointError, match=r"missing: rank\.weight") as e:
        short_run(plies=0, rank_head=True).load_state_dict(saved)
    assert "\n" not in str(e.value)


def test_a_rank_head_needs_rank_pairs():
    with pytest.raises(ConfigError, match="agent.parts.labels.rank_head=true.*agent.parts.labels.rank_labels"):
        Config(parts={"labels": {"rank_head": True}})


if __name__ == "__main__":  # writes the reference weights (run with the code they should pin)
    DATA.mkdir(exist_ok=True)
    torch.save(short_run().net.state_dict(), DEFAULT_WEIGHTS)
