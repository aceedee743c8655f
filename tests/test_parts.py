"""The learner's parts (``ttt.agents.dqn.parts``): a new learning rule is one class in one file and one line
in the table. ``Toy`` below is such a rule, written here as a user would write it: each ply it trains the
empty board toward a value of its settings. It trains side by side, each run as its seed alone, its state
rides in the checkpoint, and a config that names an unknown part or key fails naming it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from ttt.agents.dqn import Config, Part, Targets, Trainer, register
from ttt.agents.dqn.parts import table
from ttt.config import ConfigError
from ttt.games import make_game

NETWORK = OmegaConf.create({"kind": "mlp", "hidden": [16], "bias": True})


@dataclass
class ToySettings:
    target: float = 0.5  # the value the empty board is trained toward
    count: int = 2  # copies of it a ply


class Toy(Part):
    """Each ply, ``count`` copies of the empty board for each training run, toward ``target``."""

    Settings = ToySettings

    def __init__(self, trainer, settings) -> None:
        super().__init__(trainer, settings)
        self.added = np.zeros(trainer.k, dtype=np.int64)  # the part's own state: examples added per run

    def examples(self, ply) -> list:
        t, s, xp = self.trainer, self.settings, self.trainer.xp
        out = []
        for r in np.flatnonzero(t.active):
            boards = xp.zeros((s.count, t.game.num_cells), "float32")
            out.append((Targets(boards, xp.full(s.count, s.target, "float32"), xp.full(s.count, -1, "int64")),
                        xp.full(s.count, int(r), "int64")))
            self.added[r] += s.count
        return out

    def state_dict(self, r: int) -> dict:
        return {"toy_added": int(self.added[r])}

    def load_state_dict(self, state: dict, r: int) -> None:
        self.added[r] = state["toy_added"]


@pytest.fixture
def toy():
    register("toy", Toy)  # the one line a new part adds to the table
    yield
    table().pop("toy")


def agent(**toy) -> Config:
    return Config(optimizer="sgd", lr=0.05, opponent="random", opponent_after="random", parts={"toy": toy})


def empty_value(net) -> float:
    with torch.no_grad():
        return float(net(torch.zeros(1, 9)))


def test_a_part_adds_its_examples_to_the_ply(toy):
    t = Trainer(make_game("3x3"), NETWORK, agent(target=0.25, count=3), 4, np.random.default_rng(0))
    batch = t.step()
    toy_rows = np.flatnonzero(batch.rows == -1)
    assert len(toy_rows) == 3 and np.all(batch.obs[toy_rows] == 0) and np.all(batch.targets[toy_rows] == 0.25)
    assert t.part("toy").added.tolist() == [3] and t.part("symmetry") is None


def test_a_part_moves_the_values_it_trains(toy):
    values = {}
    for target in (-0.8, 0.8):
        torch.manual_seed(0)
        t = Trainer(make_game("3x3"), NETWORK, agent(target=target, count=8), 4, np.random.default_rng(0))
        for _ in range(300):
            t.step()
        values[target] = empty_value(t.net)
    assert values[-0.8] < -0.4 and values[0.8] > 0.4  # each toward its own target, far apart


def test_a_part_trains_side_by_side_each_run_as_its_seed_alone(toy):
    game, seeds = make_game("3x3"), [3, 4]
    group = Trainer(game, NETWORK, agent(target=0.6), 4, [np.random.default_rng(s) for s in seeds], seeds=seeds)
    for _ in range(60):
        group.step()
    for r, s in enumerate(seeds):
        torch.manual_seed(s)
        alone = Trainer(game, NETWORK, agent(target=0.6), 4, np.random.default_rng(s))
        while alone.run_steps[0] < group.run_steps[r]:
            alone.step()
        for name, value in alone.net.state_dict().items():
            assert torch.allclose(value, group.nets[r].state_dict()[name], atol=1e-6), name
        assert alone.part("toy").added[0] == group.part("toy").added[r] == 2 * 60


def test_a_parts_state_is_in_the_checkpoint_and_resumes(toy):
    game = make_game("3x3")
    t = Trainer(game, NETWORK, agent(), 4, np.random.default_rng(0))
    for _ in range(5):
        t.step()
    state = t.state_dict()
    assert state["toy_added"] == 10
    other = Trainer(game, NETWORK, agent(), 4, np.random.default_rng(1))
    other.load_state_dict(state)
    assert other.part("toy").added[0] == 10


def test_ttt_train_runs_a_new_part_side_by_side(toy, compose_train, tmp_path):
    from ttt.train import train

    cfg = compose_train(["+experiment=dqn_33", "episodes=16", "eval_every=0", "eval_opponents=[random]",
                         "agent.final_eval_games=2", "num_envs=4", "seeds=2", "+agent.parts.toy={target: 0.5}"])
    train(cfg)
    for seed in (0, 1):
        folder = tmp_path / "run" / f"seed_{seed}"
        payload = torch.load(folder / "checkpoint.pt", weights_only=True)
        assert payload["trainer"]["toy_added"] > 0
        assert payload["config"]["agent"]["parts"]["toy"] == {"target": 0.5}
        assert json.loads((folder / "final_eval.json").read_text())["episodes"] >= 16


def test_an_unknown_part_or_part_key_is_refused_naming_it(toy):
    with pytest.raises(ConfigError, match=r"unknown part agent\.parts\.toys"):
        Config(parts={"toys": {}})
    with pytest.raises(ConfigError, match=r"unknown key agent\.parts\.toy\.targets \(did you mean agent\.parts\.toy\."
                                          r"target\?\)"):
        Config(parts={"toy": {"targets": 0.5}})
    with pytest.raises(ConfigError, match=r"agent\.parts\.rules\.play_threats"):
        Config(parts={"rules": {"play_threats": -1}})


def test_old_flat_settings_are_read_into_their_parts():
    from ttt.agents.dqn import MOVED, upgrade_agent

    flat = {"gamma": 0.97, "exact_losses": True, "play_threats": 3, "rank_labels": 512, "rank_weight": 0.5,
            "rule_labels": False, "symmetry_augment": True, "target_every": 0, "exact_forks": False}
    parts = upgrade_agent(flat)["parts"]
    assert set(parts) == {"rules", "labels", "symmetry"}  # target_every 0 was "no target network"
    assert parts["rules"] == {"exact_losses": True, "exact_forks": False, "play_forks": False, "play_threats": 3}
    assert (parts["labels"]["rank_labels"], parts["labels"]["rank_weight"], parts["symmetry"]) == (512, 0.5, {})
    assert upgrade_agent({"target_every": 25})["parts"] == {"target": {"target_every": 25}}
    assert upgrade_agent({"symmetry_augment": False, "rule_labels": False})["parts"] == {}
    # every moved key names its part, and the part has the key (the symmetric images: the part itself)
    assert {k: part for k, (part, _, _) in MOVED.items()} == {
        **dict.fromkeys(("exact_losses", "exact_forks", "play_forks", "play_threats"), "rules"),
        **dict.fromkeys(("rule_labels", "fork_defence_labels", "label_weight", "random_labels", "search_labels",
                         "rank_labels", "rank_moves", "rank_weight", "rank_forced", "rank_head", "rank_moves_wins"),
                        "labels"),
        "target_every": "target", "symmetry_augment": "symmetry"}
    assert all(leaf is None or hasattr(table()[part].Settings(), leaf) for part, leaf, _ in MOVED.values())


@pytest.mark.parametrize("name", ["dqn_444", "dqn_444_plain", "dqn_444_value_d16"])
def test_a_shipped_checkpoints_flat_settings_are_todays_experiment(name, compose_train):
    """The shipped checkpoints hold their settings flat (written before the parts): read through
    ``upgrade_agent`` they are today's experiment key by key, but for retired options at their kept values."""
    from pathlib import Path

    from ttt.agents.dqn import RETIRED, upgrade_agent

    payload = torch.load(Path(__file__).resolve().parents[1] / "checkpoints" / name / "checkpoint.pt",
                         weights_only=True)
    saved = upgrade_agent(payload["config"]["agent"])
    now = upgrade_agent(OmegaConf.to_container(compose_train([f"+experiment={name}"]).agent, resolve=True))
    differ = {k for k in set(saved) | set(now) if saved.get(k) != now.get(k)}
    assert all(k in RETIRED and k not in now and saved[k] == RETIRED[k][0] for k in differ), differ
    assert saved["parts"] == now["parts"]


def test_resuming_compares_old_flat_settings_with_todays_parts():
    """A run folder written before the parts holds its settings flat: resumed, they compare equal to the same
    settings in their parts, and a part taken away (here the symmetric images) is a change that is refused."""
    from ttt.agents.dqn import upgrade_agent
    from ttt.harness.run_dir import config_changes

    saved = {"agent": upgrade_agent({"lr": 0.001, "rank_labels": 512, "rank_weight": 0.5, "symmetry_augment": True,
                                     "target_every": 0, "exact_losses": False})}
    now = {"agent": upgrade_agent({"lr": 0.001, "parts": {"labels": {"rank_labels": 512, "rank_weight": 0.5},
                                                          "symmetry": {}}})}
    assert config_changes(saved, now) == ([], [])
    del now["agent"]["parts"]["symmetry"]
    refused, _ = config_changes(saved, now)
    assert refused == ["agent.parts.symmetry {} -> (not set)"]
