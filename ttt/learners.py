"""The harness's side of the learners: what ``ttt.train`` and ``ttt.training.Run`` need to know about
the learner a config names, so that the lower layers (``ttt.config``, ``ttt.device``) need not know
the learners at all.

* ``register_configs``: the schemas in Hydra's ConfigStore, each present learner's ``Config`` among them;
* ``check_learner``: the learner's own checks of its settings and of the board (``Run`` calls it);
* ``learner_device``: where a run's games and networks live (a learner without ``USES_DEVICE`` runs
  on the CPU);
* ``seed_everything``: ``random``, numpy and torch seeded before a learner builds anything.
"""

from __future__ import annotations

import random
from types import ModuleType

import numpy as np
from omegaconf import DictConfig

from ttt.agents import AGENTS, agent_module, available_agents
from ttt.config import ConfigError, check_known_keys, register_schemas
from ttt.device import resolve_device
from ttt.games import make_game


def register_configs() -> None:
    """Store the schemas, every present learner's ``Config`` among them, in Hydra's ConfigStore
    (idempotent; ``ttt.config.register_schemas``)."""
    register_schemas({name: module.Config for name, module in available_agents().items()})


def check_learner(cfg: DictConfig) -> ModuleType:
    """The learner module ``cfg.agent.name`` names, after refusing settings it cannot use: a name that is
    not a learner, a key that is not one of its settings, and what its own ``check(cfg, game)`` refuses.
    Raises ConfigError (one line naming the key)."""
    name = cfg.agent.name
    if name not in AGENTS:
        raise ConfigError(f"agent.name={name!r}: choose one of {', '.join(AGENTS)}")
    module = agent_module(name)
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
