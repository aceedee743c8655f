"""The harness's side of the learners: what ``ttt.train`` and ``ttt.harness.training.Run`` need to know about
the learner a config names, so that the lower layers (``ttt.config``, ``ttt.device``) need not know
the learners at all.

* ``register_configs``: the schemas in Hydra's ConfigStore, each present learner's ``Config`` among them;
* ``check_learner``: the learner's own checks of its settings and of the board (``Run`` calls it);
* ``learner_device``: where a run's games and networks live (a learner without ``USES_DEVICE`` runs
  on the CPU);
* ``check_values``: every value of a training config, checked before any work (``Run``, and ``ttt.train``
  for every job of a sweep before the first);
* ``seed_everything``: ``random``, numpy and torch seeded before a learner builds anything.
"""

from __future__ import annotations

import random
from types import ModuleType

import numpy as np
from omegaconf import DictConfig

from ttt.agents import AGENTS, agent_module, available_agents
from ttt.checkpoint import CheckpointError
from ttt.cli import one_line
from ttt.config import ConfigError, check_known_keys, check_memory, check_train_config, register_schemas
from ttt.device import resolve_device
from ttt.games import Game, make_game
from ttt.harness.specs import distinct_labels, load_agents
from ttt.players import Player


def register_configs() -> None:
    """Store the schemas, every present learner's ``Config`` among them, in Hydra's ConfigStore
    (idempotent; ``ttt.config.register_schemas``)."""
    register_schemas({name: module.Config for name, module in available_agents().items()})


def check_learner(cfg: DictConfig) -> ModuleType:
    """The learner module ``cfg.agent.name`` names, after refusing settings it cannot use: a name that is
    not a learner, ``eval_alone=true`` for a learner without ``network_alone`` (its players have no rules to
    leave out), a key that is not one of its settings, and what its own ``check(cfg, game)`` refuses.
    Raises ConfigError (one line naming the key)."""
    name = cfg.agent.name
    if name not in AGENTS:
        raise ConfigError(f"agent.name={name!r}: choose one of {', '.join(AGENTS)}")
    module = agent_module(name)
    if cfg.eval_alone and not hasattr(module, "network_alone"):
        alone = " and ".join(n for n, m in available_agents().items() if hasattr(m, "network_alone"))
        raise ConfigError(f"eval_alone=true: only {alone} players have rules to leave out (agent={name})")
    check_known_keys("agent.", cfg.agent, module.Config)
    try:
        module.check(cfg, make_game(cfg.game.name))
    except ConfigError:
        raise
    except ValueError as e:  # a learner's own check names the key in its message
        raise ConfigError(str(e)) from None
    return module


def learner_device(cfg: DictConfig, learner: ModuleType) -> str:
    """The device a training run uses: ``cfg.device`` resolved, or ``cpu`` for a learner that does not
    set ``USES_DEVICE`` (the tabular ones). DeviceError when ``device=cuda`` cannot be honoured."""
    device = resolve_device(cfg.device)
    return device if getattr(learner, "USES_DEVICE", False) else "cpu"


def seed_everything(seed: int) -> np.random.Generator:
    """Seed ``random``, numpy and torch; return the generator the run draws from."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def check_values(cfg: DictConfig, device: str | None = None) -> tuple[str, Game, list[tuple[str, Player]]]:
    """Check every value of a training config before any work (``Run`` at its start; ``ttt.train`` for each
    job of a sweep before the first): the schemas' checks (``check_train_config``), the learner's settings,
    the memory the games need, and the evaluation opponents, built. Returns (device, game, opponents);
    raises ConfigError (one line naming the key).

    The device, "cpu" or "cuda" (``ttt.device``), is where the learner's games and networks live; a learner
    that cannot use a GPU runs on the CPU. ``device`` overrides the config (tests: TORCH_CPU)."""
    check_train_config(cfg)
    learner = check_learner(cfg)
    device = learner_device(cfg, learner) if device is None else device
    game = make_game(cfg.game.name)
    check_memory(cfg, game, device)
    return device, game, _opponents(cfg, game)


def _opponents(cfg: DictConfig, game: Game) -> list[tuple[str, Player]]:
    """The players of ``eval_opponents`` (names or specs with options, e.g. ``alphabeta:1``, or
    checkpoints), built now: a bad one, or one listed twice (its matches would share one name in
    ``final_eval.json`` and TensorBoard), fails before any work, naming the key."""
    try:
        opponents = load_agents(list(cfg.eval_opponents), game.name)[1]
    except (ValueError, TypeError, CheckpointError) as e:
        raise ConfigError(f"eval_opponents: {one_line(e)}") from None
    distinct_labels(opponents, "eval_opponents")
    return opponents
