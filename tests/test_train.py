"""The training entry point with the dqn learner: composition, smoke run, resume after SIGKILL, multirun."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from ttt.agents.dqn import Config, Trainer
from ttt.checkpoint import load_checkpoint
from ttt.config import agent_settings
from ttt.games import make_game
from ttt.train import train

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted(p.stem for p in (ROOT / "configs" / "experiment").glob("dqn_*.yaml"))
TINY = ["+experiment=dqn_33", "episodes=60", "eval_every=30", "eval_games=10", "agent.final_eval_games=10",
        "num_envs=4", "agent.switch_episode=30"]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_dqn_experiment_composes_and_builds_its_trainer(compose_train, name):
    cfg = compose_train([f"+experiment={name}"])
    assert cfg.agent.name == "dqn" and cfg.network.kind in ("structured", "mlp")
    assert cfg.episodes > 0 and cfg.num_envs >= 1
    # the learner accepts the settings (Config checks them) and the network fits the board
    trainer = Trainer(make_game(cfg.game.name), cfg.network, cfg.agent, 1, np.random.default_rng(0))
    assert trainer.net(torch.zeros(1, trainer.game.num_cells)).shape == (1,)


def test_experiment_names_the_board(compose_train):
    boards = {name: compose_train([f"+experiment={name}"]).game.name for name in EXPERIMENTS}
    assert {"dqn_33": "3x3", "dqn_44": "4x4", "dqn_444_on_4x4": "4x4", "dqn_333": "3x3x3", "dqn_444": "4x4x4",
            "dqn_444_gravity": "4x4x4_gravity"}.items() <= boards.items()


def test_paper_settings_on_score_four(compose_train):
    cfg = compose_train(["+experiment=dqn_444_gravity"])
    assert (cfg.agent.optimizer, cfg.agent.lr, cfg.agent.gamma, cfg.agent.epsilon) == ("sgd", 0.005, 1.0, 0.1)
    assert cfg.agent.opponent == cfg.agent.opponent_after == "self_play"


def test_qubic_follows_the_designs_curriculum(compose_train):
    # random for 5,000 games, then only frozen copies of its own weights: no hand-coded player trains it
    cfg = compose_train(["+experiment=dqn_444"])
    a = cfg.agent
    assert (a.opponent, a.opponent_after, a.switch_episode) == ("random", "frozen", 5000)
    assert a.benchmark_fraction == 0
    assert not any(any(w in str(v) for w in ("benchmark", "alphabeta", "mcts", "perfect"))
                   for k, v in a.items() if "opponent" in k)
    assert "alphabeta:1" in cfg.eval_opponents  # evaluation sees defence
    # the earlier recipe stays available under its own name
    b = compose_train(["+experiment=dqn_444_vs_benchmark"]).agent
    assert b.benchmark_fraction == 0.8


@pytest.mark.parametrize("override,key", [("agent.lrr=0.1", "lrr"),
                                          ("agent.lr=fast", "lr"), ("episodez=5", "episodez")])
def test_a_typo_or_wrong_type_fails_at_composition_naming_the_key(compose_train, override, key):
    with pytest.raises((ConfigCompositionException, ConfigKeyError, ValidationError)) as err:
        compose_train(["+experiment=dqn_444", override])
    assert key in str(err.value) + str(err.value.__cause__)


def test_smoke_run_writes_checkpoint_eval_and_tensorboard_tags(compose_train, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = compose_train(TINY)
    out = train(cfg)
    run = tmp_path / "run"
    assert json.loads((run / "final_eval.json").read_text()) == out
    assert {r["opponent"] for r in out["results"]} == {"random", "benchmark"}
    assert all(r["games"] == 10 for r in out["results"] if r["seat"] == "both")
    payload = load_checkpoint(run / "checkpoint.pt", kind="dqn", game="3x3")
    assert payload["episodes"] >= 60 and payload["config"]["agent"]["name"] == "dqn"
    assert {"numpy", "torch", "python"} <= set(payload["trainer"]["rng"])
    assert "optimizer" in payload["trainer"]
    tags = EventAccumulator(str(run / "tb")).Reload().Tags()["scalars"]
    for tag in ("train/td_loss", "train/epsilon", "train/opponent", "train/episodes_per_sec",
                "eval/random/score", "eval_detail/benchmark/first/win_rate", "eval_detail/random/draw_rate"):
        assert tag in tags


def test_resumed_run_gives_the_weights_of_an_uninterrupted_one(compose_train, tmp_path):
    # stop at 30 (a checkpoint), continue to 60 with resume=true; compare with 60 in one go
    train(compose_train([*TINY, "episodes=30"]))
    train(compose_train([*TINY, "resume=true"]))
    resumed = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    straight = compose_train([*TINY, f"run_dir={tmp_path / 'straight'}"])
    train(straight)
    whole = load_checkpoint(tmp_path / "straight" / "checkpoint.pt")
    assert resumed["episodes"] == whole["episodes"]
    for k, v in whole["weights"].items():
        assert torch.equal(resumed["weights"][k], v), k


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ttt.train", *args]


BROKEN_YAML = "# @package _global_\nepisodes: [1, 2\nseed: 3\n"  # a flow sequence left open


def _broken_experiment(tmp_path) -> Path:
    (tmp_path / "configs" / "experiment").mkdir(parents=True)
    (tmp_path / "configs" / "experiment" / "broken.yaml").write_text(BROKEN_YAML)
    return tmp_path / "configs"


def test_an_experiment_file_with_a_yaml_syntax_error_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    import hydra

    from ttt.cli import guard_config_files
    from ttt.harness.learners import register_configs

    guard_config_files()  # what `python -m ttt.<entry point>` installs first (ttt/__init__.py)
    register_configs()

    @hydra.main(version_base="1.3", config_path=str(ROOT / "configs"), config_name="train")
    def main(cfg) -> None:  # ttt.train's main, with its configs found from here
        raise AssertionError("composed a broken file")

    configs = _broken_experiment(tmp_path)
    monkeypatch.setattr(sys, "argv", ["ttt.train", f"--config-dir={configs}", "+experiment=broken",
                                      f"run_dir={tmp_path / 'run'}"])
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1, err
    assert err == (f"error: {configs / 'experiment' / 'broken.yaml'}, line 3, column 5: not valid YAML (while "
                   f"parsing a flow sequence: expected ',' or ']', but got ':'); fix the file\n")
    assert not (tmp_path / "run").exists()


# one interpreter start that stops at composition: ~3 s on an idle 2-core machine
@pytest.mark.cli
def test_the_command_line_reports_a_yaml_syntax_error_in_one_line(tmp_path):
    configs = _broken_experiment(tmp_path)
    done = subprocess.run(_command(f"--config-dir={configs}", "+experiment=broken", f"run_dir={tmp_path / 'r'}"),
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert done.stderr.startswith(f"error: {configs / 'experiment' / 'broken.yaml'}, line 3, column 5: not valid")


# two interpreter starts and a training run: ~8 s on an idle 2-core machine
@pytest.mark.cli
def test_sigkill_mid_training_then_resume_loses_only_the_episodes_since_the_checkpoint(compose_train, tmp_path):
    run = tmp_path / "killed"
    args = ["+experiment=dqn_33", "episodes=4000", "eval_every=200", "eval_games=4", "agent.final_eval_games=4",
            "num_envs=8", "progress=false", f"run_dir={run}"]
    proc = subprocess.Popen(_command(*args), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    ckpt = run / "checkpoint.pt"
    deadline = time.time() + 120
    while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert ckpt.exists(), proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    saved = load_checkpoint(ckpt)["episodes"]
    assert 200 <= saved < 4000
    assert not (run / "final_eval.json").exists()
    # resume (the same run directory) continues from the checkpoint to the end
    done = subprocess.run(_command(*args, "resume=true", "episodes=" + str(saved + 200)), cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"resumed {ckpt} at episode {saved}" in done.stderr
    assert load_checkpoint(ckpt)["episodes"] >= saved + 200
    assert json.loads((run / "final_eval.json").read_text())["episodes"] == saved + 200
    # Hydra's own output (.hydra/, train.log) goes to run_dir too, not to a second folder under runs/
    assert (run / ".hydra" / "config.yaml").is_file() and (run / "train.log").is_file()


# one interpreter start and four tiny runs: ~5 s on an idle 2-core machine
@pytest.mark.cli
def test_hydra_multirun_puts_each_run_in_its_own_directory(tmp_path):
    sweep = tmp_path / "sweep"
    done = subprocess.run(
        _command("-m", "+experiment=dqn_33", "seed=0,1", "network=structured_deep,mlp_deep", "episodes=8",
                 "eval_every=0", "eval_games=2", "agent.final_eval_games=2", "num_envs=2", "progress=false",
                 f"hydra.sweep.dir={sweep}"),
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    finals = sorted(sweep.glob("*/final_eval.json"))
    assert len(finals) == 4
    assert len({p.parent for p in finals}) == 4
    seen = {(json.loads(p.read_text())["seed"], json.loads(p.read_text())["network"]["kind"]) for p in finals}
    assert seen == {(0, "structured"), (1, "structured"), (0, "mlp"), (1, "mlp")}
    assert all((p.parent / "checkpoint.pt").exists() for p in finals)


@pytest.mark.cli
def test_multirun_with_run_dir_is_refused(tmp_path):
    done = subprocess.run(
        _command("-m", "+experiment=dqn_33", "seed=0,1", "episodes=4", f"run_dir={tmp_path / 'one'}",
                 f"hydra.sweep.dir={tmp_path / 'sweep'}"),
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)
    assert done.returncode != 0
    assert "run_dir is for single runs" in done.stderr
    assert not (tmp_path / "one").exists()


# every learner reads its settings through agent_settings and rejects a bad value the same way
BAD_SETTINGS = [
    ("+experiment=dqn_33", "ttt.agents.dqn", "agent.loss=hubber", "agent.loss='hubber': choose one of huber, mse"),
    ("+experiment=dqn_33", "ttt.agents.dqn", "agent.epsilon=5", r"agent.epsilon=5.0: must be in \[0, 1\]"),
    ("+experiment=alphazero_33", "ttt.agents.alphazero", "agent.policy_target=visit",
     "agent.policy_target='visit': choose one of played, visits"),
    ("+experiment=alphazero_33", "ttt.agents.alphazero", "agent.simulations=0", "agent.simulations=0: must be >= 1"),
    ("+experiment=qlearn_33", "ttt.agents.q_learning", "agent.storage=disk",
     "agent.storage='disk': choose one of auto, dense, sparse"),
    ("+experiment=td_33_boltzmann", "ttt.agents.td_afterstate", "agent.update=td1",
     "agent.update='td1': choose one of backward, td0"),
    ("+experiment=vi_33", "ttt.agents.value_iteration", "agent.selfplay_epsilon=-1",
     r"agent.selfplay_epsilon=-1.0: must be in \[0, 1\]"),
]


@pytest.mark.parametrize("experiment, module, override, message", BAD_SETTINGS)
def test_every_learner_rejects_bad_settings_the_same_way(compose_train, experiment, module, override, message):
    import importlib

    from ttt.config import agent_settings

    schema = importlib.import_module(module).Config
    good = agent_settings(compose_train([experiment]).agent, schema)
    assert isinstance(good, schema)  # the shipped settings pass
    with pytest.raises(ValueError, match=f"^{message}$"):
        agent_settings(compose_train([experiment, override]).agent, schema)
    with pytest.raises(ValueError, match=f"^{message}$"):  # and the training entry point stops on it
        train(compose_train([experiment, override]))
    with pytest.raises(ValueError, match="unknown key agent.lrr"):  # e.g. settings stored in a checkpoint
        agent_settings({"lrr": 0.1}, schema)


def test_train_help_is_short_and_says_how_to_see_an_experiments_config():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ttt.train", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert len(lines) < 40 and "== Config ==" not in done.stdout  # no dump of the default config
    assert "--cfg job" in done.stdout and any(line.startswith("experiment: ") and "dqn_444" in line for line in lines)


def test_dqn_444_is_dqn_444_values_with_monte_carlo_value_targets(compose_train):
    # the value head learns outcomes (td_lambda 1) from its own games alone; the rank head orders the moves
    main, values = compose_train(["+experiment=dqn_444"]), compose_train(["+experiment=dqn_444_values"])
    changed = {k: (values.agent[k], v) for k, v in main.agent.items() if k != "parts" and values.agent[k] != v}
    assert changed == {"td_lambda": (0.0, 1.0)}
    # and the target network: dqn_444_values' target_every 500, none in dqn_444 (the old target_every 0)
    assert values.agent.parts.target == {"target_every": 500} and "target" not in main.agent.parts
    assert {**main.agent.parts, "target": values.agent.parts.target} == values.agent.parts
    a = agent_settings(main.agent, Config).parts["labels"]
    assert a.rank_head and a.rank_labels > 0 and not a.rule_labels and a.random_labels == 0
    # the recipe shipped before keeps its name: rule labels, rank pairs on the value itself, TD(0)
    labels = compose_train(["+experiment=dqn_444_labels"]).agent
    settings = agent_settings(labels, Config)
    assert settings.parts["labels"].rule_labels and not settings.parts["labels"].rank_head
    assert settings.td_lambda == 0.0
    headed = OmegaConf.to_container(labels)
    headed["parts"]["labels"]["rank_head"] = True
    assert OmegaConf.to_container(compose_train(["+experiment=dqn_444_rank_head"]).agent) == headed


def test_dqn_444_on_4x4_is_the_dqn_444_recipe_on_4x4(compose_train):
    qubic, small = compose_train(["+experiment=dqn_444"]), compose_train(["+experiment=dqn_444_on_4x4"])
    assert (qubic.game.name, small.game.name) == ("4x4x4", "4x4")
    assert small.agent == qubic.agent and small.network == qubic.network and small.episodes == qubic.episodes
    assert "perfect" in small.eval_opponents


def test_dqn_33_on_4x4_is_the_3x3_recipe_with_its_schedules_stretched(compose_train):
    small, board = compose_train(["+experiment=dqn_33"]), compose_train(["+experiment=dqn_33_on_4x4"])
    assert (small.game.name, board.game.name) == ("3x3", "4x4") and small.network == board.network
    stretched = {"lr_decay_episodes": 120000, "epsilon_decay_episodes": 90000}
    assert {k: v for k, v in board.agent.items() if small.agent[k] != v} == stretched
    assert board.episodes == 2 * small.episodes == stretched["lr_decay_episodes"]
