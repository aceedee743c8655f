"""Runs side by side (``seeds=K``): the run axis of the one ``Trainer``. Each run is the learner of its
seed alone: the same moves, game for game; its own folder, resumable alone or with its group; every
option and the device code path work side by side. ``RowNets`` (``ttt.nets.runs``) values each row by
its own network, with each network's own gradients."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from ttt.agents.dqn import Config, Trainer
from ttt.agents.dqn.settings import upgrade_agent
from ttt.checkpoint import load_checkpoint, save_checkpoint
from ttt.cli import run_cli
from ttt.config import ConfigError
from ttt.device import TORCH_CPU, array_device
from ttt.games import make_game
from ttt.games.arrays import arrays_for
from ttt.nets.runs import RowNets
from ttt.nets.structured import build_value_net
from ttt.perf import recipe_config
from ttt.train import train

PAPER_NET = {"kind": "structured", "detectors": 4, "hidden": [32], "bias": False}
PAPER = dict(optimizer="sgd", lr=0.005, gamma=1.0, loss="mse", epsilon=0.1)
MLP = {"kind": "mlp", "hidden": [24, 12], "bias": True}


def _record(games) -> list:
    """Every action array ``games.play`` receives, in order."""
    seen, play = [], games.play

    def recording(actions, check=True):
        seen.append(actions.cpu().numpy() if torch.is_tensor(actions) else np.array(actions))
        return play(actions, check)

    games.play = recording
    return seen


def _moves_alone(game, network, agent, seed: int, num_envs: int, episodes: int, device: str) -> list:
    torch.manual_seed(seed)  # as ttt.train seeds a run before its learner builds the network
    xp = arrays_for(array_device(device))
    trainer = Trainer(game, OmegaConf.create(network), agent, num_envs, xp.generator(seed), device=device)
    seen = _record(trainer.games)
    while trainer.episodes < episodes:
        trainer.step()
    return seen


def _same_moves(board, network, agent, num_envs, episodes, seeds=(4, 5, 6), alone=None, device="cpu"):
    """Train ``seeds`` side by side to ``episodes`` games each; assert that each run of ``alone`` (all by
    default) makes the moves of its seed alone at every ply."""
    game = make_game(board)
    xp = arrays_for(array_device(device))
    group = Trainer(game, OmegaConf.create(network), agent, num_envs, [xp.generator(s) for s in seeds],
                    device=device, seeds=list(seeds))
    seen = _record(group.games)
    while group.run_episodes.min() < episodes:
        group.step()
    for r in range(len(seeds)) if alone is None else alone:
        mine_alone = _moves_alone(game, network, agent, seeds[r], num_envs, episodes, device)
        mine = [step[r * num_envs: (r + 1) * num_envs] for step in seen[: len(mine_alone)]]
        assert len(mine) == len(mine_alone)
        first = next((i for i, (x, y) in enumerate(zip(mine, mine_alone, strict=True)) if not np.array_equal(x, y)),
                     None)
        assert first is None, f"seed {seeds[r]}: the moves differ from ply {first} on"
    assert (group.run_episodes >= episodes).all()
    return group


@pytest.mark.parametrize("board, network, agent, num_envs, episodes", [
    # the paper's protocol: Score Four, deep structured network, SGD, self-play, one game at a time
    ("4x4x4_gravity", PAPER_NET, Config(**PAPER, opponent="self_play", opponent_after="self_play"), 1, 200),
    # the benchmark regime of the paper's grid, with biases
    ("4x4x4_gravity", {**PAPER_NET, "bias": True}, Config(**PAPER, opponent="benchmark", opponent_after="benchmark"),
     1, 200),
    # the curriculum: random, then a pool of frozen copies re-taken as the run goes, Adam, an MLP with biases,
    # games side by side within each run, the loss rule in move selection
    ("3x3", MLP,
     Config(**upgrade_agent(dict(opponent="random", opponent_after="frozen", switch_episode=40, refresh_every=30,
                                 frozen_pool=3, frozen_epsilon=0.2, exact_losses=True, epsilon=0.3, epsilon_final=0.05,
                                 epsilon_decay_episodes=150))),
     2, 100),
    # what one run alone used to train only: labels, rank pairs on a rank head, TD(λ), a target network, a
    # falling learning rate, symmetric images, forks in move selection, a share of benchmark games
    ("3x3", {**MLP, "hidden": [16]},
     Config(**upgrade_agent(dict(
         opponent="random", opponent_after="frozen", switch_episode=30, refresh_every=20, frozen_pool=2,
         exact_losses=True, exact_forks=True, rule_labels=True, fork_defence_labels=4,
         label_weight=0.5, random_labels=8, search_labels=True, rank_labels=8, rank_moves=2, rank_head=True,
         symmetry_augment=True, lr_final=1e-4, lr_decay_episodes=100, target_every=25, first_lr=0.01))), 2, 80),
    ("3x3", {**MLP, "hidden": [16]}, Config(td_lambda=0.7, benchmark_fraction=0.5, switch_episode=20), 2, 60),
    # plain SGD, whose optimiser steps the stacks themselves (two rates), with the rank pairs' gradients
    # added to them, on a structured network with biases and tied orbits (stacked shared blocks)
    ("3x3", {"kind": "structured", "detectors": 2, "hidden": [8], "bias": True, "tie_orbits": True},
     Config(**upgrade_agent(dict(optimizer="sgd", lr=0.05, first_lr=0.1, opponent="random", opponent_after="frozen",
                                 switch_episode=30, refresh_every=20, rank_labels=8, rank_moves=2, rank_head=True))),
     2, 80),
    # the defence study's arms: the playable plane, sigmoid hidden units
    ("4x4x4_gravity", {**PAPER_NET, "bias": True, "playable": True, "activation": "sigmoid"},
     Config(**PAPER, opponent="benchmark", opponent_after="benchmark"), 2, 20),
])
def test_each_run_side_by_side_makes_the_moves_of_its_seed_alone(board, network, agent, num_envs, episodes):
    slow_board = board == "4x4x4_gravity"
    _same_moves(board, network, agent, num_envs, episodes, seeds=(4, 5) if slow_board else (4, 5, 6),
                alone=(1,) if slow_board else None)


def test_one_run_of_the_run_axis_is_the_single_run_bit_for_bit():
    """K = 1 through the group's constructor (a list of one stream, the seed given) is the single run."""
    game = make_game("3x3")
    agent = Config(**upgrade_agent(dict(opponent="random", opponent_after="frozen", switch_episode=10, refresh_every=8,
                                        frozen_pool=2, rule_labels=True, rank_labels=8, rank_head=True,
                                        symmetry_augment=True, td_lambda=0.5)))
    torch.manual_seed(5)
    alone = Trainer(game, OmegaConf.create(MLP), agent, 3, np.random.default_rng(5))
    torch.manual_seed(123)  # the group seeds its network itself
    group = Trainer(game, OmegaConf.create(MLP), agent, 3, [np.random.default_rng(5)], seeds=[5])
    for _ in range(60):
        a, b = alone.step(), group.step()
        assert np.array_equal(a.targets, b.targets) and np.array_equal(a.obs, b.obs)
    for name, p in alone.net.state_dict().items():
        assert torch.equal(group.net.state_dict()[name], p), name


def test_the_recipe_side_by_side_makes_the_moves_of_each_run_alone():
    """``dqn_444``'s every option (rank head and pairs, λ = 1, frozen copies, exact losses, symmetric images,
    tied-free structured network with biases and the dense forward) over its first games, at fewer games
    side by side than the recipe's 128 (the same code, a shorter test)."""
    cfg = recipe_config()
    network = OmegaConf.to_container(cfg.network, resolve=True)
    agent = Config(**{**OmegaConf.to_container(cfg.agent, resolve=True), "switch_episode": 30, "refresh_every": 20})
    _same_moves("4x4x4", network, agent, 4, 60, seeds=(0, 1), alone=(1,))


@pytest.mark.slow
def test_the_recipe_side_by_side_makes_the_moves_of_each_run_alone_for_200_games():
    cfg = recipe_config()
    network = OmegaConf.to_container(cfg.network, resolve=True)
    agent = Config(**OmegaConf.to_container(cfg.agent, resolve=True))
    _same_moves("4x4x4", network, agent, 8, 200, seeds=(0, 1))


@pytest.mark.parametrize("device", [TORCH_CPU, pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA"))])
def test_runs_side_by_side_on_the_device_code_path_make_the_moves_of_each_run_alone(device):
    """``device=cuda``'s code path (torch tensors, a ``torch.Generator`` per run): on the CPU here, on a GPU
    where there is one."""
    agent = Config(**upgrade_agent(dict(opponent="random", opponent_after="frozen", switch_episode=30, refresh_every=20,
                                        frozen_pool=2, benchmark_fraction=0.5, exact_losses=True, rank_labels=6,
                                        rank_head=True, symmetry_augment=True)))
    _same_moves("3x3", {**MLP, "hidden": [16]}, agent, 2, 60, seeds=(0, 1), device=device)


def test_a_run_side_by_side_resumes_exactly_from_its_checkpoint(tmp_path):
    agent = Config(**upgrade_agent(dict(optimizer="adam", opponent="random", opponent_after="frozen", switch_episode=20,
                                        refresh_every=15, first_lr=0.01, rank_labels=6, symmetry_augment=True,
                                        lr_final=1e-4, lr_decay_episodes=60)))
    game = make_game("3x3")

    def group() -> Trainer:
        return Trainer(game, OmegaConf.create(MLP), agent, 2, [np.random.default_rng(s) for s in (7, 8)],
                       seeds=[7, 8])

    t = group()
    while t.run_episodes.min() < 30:
        t.step()
    save_checkpoint(tmp_path / "c.pt", {"kind": "dqn", "game": "3x3", "trainer": [t.state_dict(r) for r in (0, 1)]})
    states = load_checkpoint(tmp_path / "c.pt")["trainer"]
    resumed = group()
    for r in (0, 1):
        resumed.load_state_dict(states[r], r)
    # run 1 alone from the same file: the single-run format
    torch.manual_seed(8)
    alone = Trainer(game, OmegaConf.create(MLP), agent, 2, np.random.default_rng(0))
    alone.load_state_dict(load_checkpoint(tmp_path / "c.pt")["trainer"][1])
    alone_moves, group_moves = _record(alone.games), _record(resumed.games)
    for _ in range(40):
        a, b = t.step(), resumed.step()
        alone.step()
        np.testing.assert_array_equal(b.targets, a.targets)
    for x, y in zip(alone_moves, group_moves, strict=True):
        np.testing.assert_array_equal(x, y[2:])
    for name, p in t.nets[1].state_dict().items():
        torch.testing.assert_close(resumed.nets[1].state_dict()[name], p, atol=0, rtol=0)
        torch.testing.assert_close(alone.net.state_dict()[name], p, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("network", [PAPER_NET, {**PAPER_NET, "bias": True, "hidden": [8, 5]},
                                     {**PAPER_NET, "bias": True, "tie_orbits": True},
                                     {**PAPER_NET, "dense_forward": True}, MLP,
                                     {**PAPER_NET, "playable": True, "activation": "sigmoid", "bias": True}])
@pytest.mark.parametrize("rank_head", [False, True])
def test_row_nets_value_each_row_by_its_own_network_with_its_own_gradients(network, rank_head):
    game = make_game("3x3")
    nets = []
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        nets.append(build_value_net(OmegaConf.create(network), game, rank_head=rank_head))
    groups = np.array([2, 0, 2, 2, 0, 1, 2])  # rows of every network, in any order, unequal counts
    x = torch.randint(-1, 2, (len(groups), 9)).float()
    legal = x == 0
    rows = RowNets(nets, groups)
    tol = {"rtol": 1e-5, "atol": 1e-6}
    for i, g in enumerate(groups):
        net = nets[g]
        torch.testing.assert_close(rows(x)[i], net(x[i:i + 1])[0], **tol)
        torch.testing.assert_close(rows.rank_logit(x)[i], net.rank_logit(x[i:i + 1])[0], **tol)
        values, ranks = rows.afterstate_scores(x, legal)
        alone = net.afterstate_scores(x[i:i + 1], legal[i:i + 1])
        torch.testing.assert_close(values[i], alone[0][0], **tol)
        if rank_head:
            torch.testing.assert_close(ranks[i], alone[1][0], **tol)
        else:
            assert ranks is None and alone[1] is None
    target = torch.rand(len(groups)) * 4 - 2  # beyond [-1, 1] too
    loss = torch.nn.functional.huber_loss(rows(x), target, reduction="none").sum()
    loss.backward()
    for k, net in enumerate(nets):
        mine = torch.from_numpy(groups == k)
        grads = [None if p.grad is None else p.grad.clone() for p in net.parameters()]  # the rank head: None
        net.zero_grad(set_to_none=True)
        torch.nn.functional.huber_loss(net(x[mine]), target[mine], reduction="sum").backward()
        for got, want in zip(grads, (p.grad for p in net.parameters()), strict=True):
            assert (got is None) == (want is None)
            if got is not None:
                torch.testing.assert_close(got, want, **tol)
    # rows of one network: a plain call of it, bit for bit
    one = RowNets(nets, np.full(len(groups), 1))
    assert torch.equal(one(x), nets[1](x))


def test_a_run_without_targets_in_a_ply_does_not_step():
    """Adam moves a parameter whose gradient is zero (its moments decay); a run with no training example in
    an update must not move at all, as one run alone skips the step of such a ply, while the others step
    (here through the stacked call of runs 0 and 2, whose gradient holds zeros for run 1)."""
    game = make_game("3x3")
    t = Trainer(game, OmegaConf.create(MLP), Config(optimizer="adam", opponent="random", opponent_after="random"), 1,
                [np.random.default_rng(s) for s in (0, 1, 2)], seeds=[0, 1, 2])
    obs = np.random.default_rng(3).integers(-1, 2, (6, 9)).astype(np.float32)
    targets = np.linspace(-1, 1, 6, dtype=np.float32)
    t._update(obs, targets, np.array([0, 1, 2, 0, 1, 2]))  # every run steps: Adam has moments
    before = [[p.detach().clone() for p in net.parameters()] for net in t.nets]
    steps = [t.optimizer.state[p]["step"].clone() for p in t.nets[1].parameters()]
    t._update(obs, targets, np.array([0, 2, 0, 2, 0, 2]))  # runs 0 and 2 alone
    for r in (0, 2):
        assert not all(torch.equal(a, b) for a, b in zip(before[r], t.nets[r].parameters(), strict=True))
    assert all(torch.equal(a, b) for a, b in zip(before[1], t.nets[1].parameters(), strict=True))
    assert all(torch.equal(t.optimizer.state[p]["step"], s) for p, s in zip(t.nets[1].parameters(), steps,
                                                                          strict=True))


def test_plain_sgd_steps_the_stacks_and_a_run_without_targets_keeps_its_weights():
    """Side by side, plain SGD's optimiser holds the stacked parameters (one step of a stack is each run's
    own step); a run without examples gets a zero gradient there, and SGD leaves it exactly as it was."""
    game = make_game("3x3")
    t = Trainer(game, OmegaConf.create(MLP), Config(optimizer="sgd", lr=0.1, opponent="random",
                                                    opponent_after="random"), 1,
                [np.random.default_rng(s) for s in (0, 1, 2)], seeds=[0, 1, 2])
    held = [p for group in t.optimizer.param_groups for p in group["params"]]
    assert len(held) == len(list(t.nets[0].parameters())) and all(p.shape[0] == 3 for p in held)
    obs = np.random.default_rng(3).integers(-1, 2, (6, 9)).astype(np.float32)
    targets = np.linspace(-1, 1, 6, dtype=np.float32)
    before = [[p.detach().clone() for p in net.parameters()] for net in t.nets]
    t._update(obs, targets, np.array([0, 2, 0, 2, 0, 2]))  # runs 0 and 2 alone
    for r in (0, 2):
        assert not all(torch.equal(a, b) for a, b in zip(before[r], t.nets[r].parameters(), strict=True))
    assert all(torch.equal(a, b) for a, b in zip(before[1], t.nets[1].parameters(), strict=True))
    # the step of run 0 is the step of its network alone on its own examples
    torch.manual_seed(0)
    alone = Trainer(game, OmegaConf.create(MLP), Config(optimizer="sgd", lr=0.1), 1, np.random.default_rng(0))
    alone._update(obs[[0, 2, 4]], targets[[0, 2, 4]], np.zeros(3, dtype=np.int64))
    for a, b in zip(alone.net.parameters(), t.nets[0].parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


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


@pytest.mark.parametrize("overrides", [["++agent.parts.labels.rule_labels=true",
                                        "++agent.parts.labels.random_labels=8"],
                                       ["++agent.parts.target.target_every=10", "agent.td_lambda=0.5"],
                                       ["network.tie_orbits=true", "network.bias=true",
                                        "++agent.parts.labels.rank_labels=8", "++agent.parts.labels.rank_head=true"]])
def test_every_option_trains_side_by_side(compose_train, tmp_path, overrides):
    out = train(compose_train([*TINY, "episodes=12", "eval_every=0", *overrides]))
    assert sorted(out["runs"]) == [3, 4] and out["runs"][4]["episodes"] == 12


def test_a_learner_without_runs_side_by_side_is_refused_with_one_line(compose_train, tmp_path, capsys):
    overrides = ["+experiment=qlearn_33", "episodes=30", "seeds=2"]
    with pytest.raises(SystemExit) as e:
        run_cli(train, compose_train(overrides))
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "agent q_learning does not train runs side by side" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()
    with pytest.raises(ConfigError):
        train(compose_train(overrides))
