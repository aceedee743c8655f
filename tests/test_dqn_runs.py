"""Runs side by side (``seeds=K``, ``ttt.agents.dqn_runs``): each run is the single-run learner of its seed."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from ttt.agents.dqn import Config, Trainer
from ttt.agents.dqn_runs import SideBySide
from ttt.checkpoint import load_checkpoint
from ttt.cli import run_cli
from ttt.config import ConfigError
from ttt.games import make_game
from ttt.nets.stacked import StackedNets
from ttt.nets.structured import build_value_net
from ttt.train import train

PAPER_NET = {"kind": "structured", "detectors": 4, "hidden": [32], "bias": False}
PAPER = dict(optimizer="sgd", lr=0.005, gamma=1.0, loss="mse", epsilon=0.1)


def _record(games) -> list:
    """Every action array ``games.play`` receives, in order."""
    seen, play = [], games.play

    def recording(actions, check=True):
        seen.append(np.array(actions))
        return play(actions, check)

    games.play = recording
    return seen


def _moves_alone(game, network, agent, seed: int, num_envs: int, episodes: int) -> list:
    torch.manual_seed(seed)  # as ttt.train seeds a run before its learner builds the network
    trainer = Trainer(game, OmegaConf.create(network), agent, num_envs, np.random.default_rng(seed))
    seen = _record(trainer.games)
    while trainer.episodes < episodes:
        trainer.step()
    return seen


@pytest.mark.parametrize("board, network, agent, num_envs, episodes", [
    # the paper's protocol: Score Four, deep structured network, SGD, self-play, one game at a time
    ("4x4x4_gravity", PAPER_NET, Config(**PAPER, opponent="self_play", opponent_after="self_play"), 1, 200),
    # the curriculum: random, then a pool of frozen copies re-taken as the run goes, Adam, an MLP with biases,
    # games side by side within each run, the loss rule in move selection
    ("3x3", {"kind": "mlp", "hidden": [24, 12], "bias": True},
     Config(opponent="random", opponent_after="frozen", switch_episode=40, refresh_every=30, frozen_pool=3,
            frozen_epsilon=0.2, exact_losses=True, epsilon=0.3, epsilon_final=0.05, epsilon_decay_episodes=150),
     2, 100),
    # the opponents' moves learned too (learn_opponent_moves): the benchmark player, then frozen copies
    ("3x3", {"kind": "mlp", "hidden": [24, 12], "bias": True},
     Config(opponent="benchmark", opponent_after="frozen", switch_episode=40, refresh_every=30, epsilon=0.3,
            learn_opponent_moves=True), 2, 100),
])
def test_each_run_side_by_side_makes_the_moves_of_its_seed_alone(board, network, agent, num_envs, episodes):
    game, seeds = make_game(board), [4, 5, 6]
    group = SideBySide(game, OmegaConf.create(network), agent, seeds, num_envs)
    seen = _record(group.games)
    while group.episodes.min() < episodes:
        group.step()
    for r in (1,) if board == "4x4x4_gravity" else range(len(seeds)):  # the slow board: one seed alone
        alone = _moves_alone(game, network, agent, seeds[r], num_envs, episodes)
        mine = [step[r * num_envs: (r + 1) * num_envs] for step in seen[: len(alone)]]
        assert len(mine) == len(alone)
        first = next((i for i, (x, y) in enumerate(zip(mine, alone, strict=True)) if not np.array_equal(x, y)), None)
        assert first is None, f"seed {seeds[r]}: the moves differ from ply {first} on"
    assert (group.episodes >= episodes).all() and group.episodes.sum() > 0


@pytest.mark.parametrize("network", [PAPER_NET, {**PAPER_NET, "bias": True, "hidden": [8, 5]},
                                     {"kind": "mlp", "hidden": [9], "bias": True}])
@pytest.mark.parametrize("huber", [False, True])
def test_the_written_out_gradients_are_autograds_of_each_network(network, huber):
    game = make_game("3x3")
    nets = []
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        nets.append(build_value_net(OmegaConf.create(network), game))
    stacked = StackedNets(nets)
    x = torch.randint(-1, 2, (3, 4, 9)).float()
    target = torch.rand(3, 4) * 4 - 2  # beyond [-1, 1] too: the Huber loss's linear part
    weight = torch.tensor([[0.25] * 4, [0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    per, grads = stacked.loss_and_grads(stacked.params, x, target, weight, huber)
    for k, net in enumerate(nets):
        pred = net(x[k])
        loss_fn = torch.nn.functional.huber_loss if huber else torch.nn.functional.mse_loss
        each = loss_fn(pred, target[k], reduction="none")
        torch.testing.assert_close(per[k], each.detach())
        net.zero_grad()
        (each * weight[k]).sum().backward()
        for name, grad in zip(stacked.names, grads, strict=True):
            torch.testing.assert_close(grad[k], dict(net.named_parameters())[name].grad, rtol=1e-5, atol=1e-6)
    values = stacked.forward(stacked.params, x)
    torch.testing.assert_close(values, torch.stack([net(x[k]) for k, net in enumerate(nets)]).detach())
    legal = x[:, :2] == 0
    after = stacked.afterstate_values(stacked.params, x[:, :2], legal)
    for k, net in enumerate(nets):
        torch.testing.assert_close(after[k], net.afterstate_values(x[k, :2], legal[k]).detach(), rtol=1e-5,
                                   atol=1e-6)


TINY = ["+experiment=dqn_444_gravity_vs_benchmark", "episodes=30", "eval_every=20", "eval_games=8",
        "agent.final_eval_games=8", "seeds=2", "seed=3"]


def test_each_run_has_its_own_folder_that_resumes_alone_or_with_its_group(compose_train, tmp_path):
    out = train(compose_train(TINY))
    assert sorted(out["runs"]) == [3, 4]
    root = tmp_path / "run"
    for seed in (3, 4):
        folder = root / f"seed_{seed}"
        assert {p.name for p in folder.iterdir()} >= {"checkpoint.pt", "final_eval.json", "tb", "train.log"}
        final = json.loads((folder / "final_eval.json").read_text())
        assert final["seed"] == seed and final["episodes"] == 30 and final["seeds_side_by_side"] == 2
        payload = load_checkpoint(folder / "checkpoint.pt", kind="dqn", game="4x4x4_gravity")
        assert payload["config"]["seed"] == seed and payload["episodes"] >= 30
    # the group again: both finished, skipped
    again = train(compose_train([*TINY, "resume=true"]))
    assert again["runs"][3]["episodes"] == 30
    # one run of the group, continued alone by the single-run learner, and the group, continued together
    alone = train(compose_train([*TINY[:-2], "seed=3", f"run_dir={root / 'seed_3'}", "resume=true", "episodes=40"]))
    assert alone["episodes"] == 40 and alone["seed"] == 3
    more = train(compose_train([*TINY, "resume=true", "episodes=50"]))
    assert more["runs"][4]["episodes"] == 50 and more["runs"][3]["episodes"] == 50


@pytest.mark.parametrize("overrides, message", [
    (["agent.rule_labels=true"], "agent.rule_labels=True is not trained side by side"),
    (["agent.target_every=100"], "agent.target_every=100 is not trained side by side"),
    (["agent.td_lambda=0.5"], "agent.td_lambda=0.5 is not trained side by side"),
    (["+experiment=qlearn_33"], "only agent dqn trains runs side by side"),
    (["network.tie_orbits=true", "network.bias=true"], "network.tie_orbits=true is not trained side by side"),
])
def test_what_cannot_run_side_by_side_is_refused_with_one_line(compose_train, tmp_path, capsys, overrides, message):
    with pytest.raises(SystemExit) as e:
        run_cli(train, compose_train(_with(overrides)))
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()
    with pytest.raises(ConfigError):
        train(compose_train(_with(overrides)))


def _with(overrides: list[str]) -> list[str]:
    """TINY with ``overrides``; another experiment in place of TINY's."""
    if overrides[0].startswith("+experiment"):
        return [*overrides, "episodes=30", "seeds=2"]
    return [*TINY, *overrides]
