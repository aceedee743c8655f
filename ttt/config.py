"""Structured-config schemas for Hydra, and the one way a learner reads its settings.

A misspelt key or a wrong type fails at composition: ``configs/train.yaml`` is validated against
``TrainConfig``; each ``configs/agent/<name>.yaml`` extends the ``Config`` dataclass of its learner
module (registered as ``agent/<name>_schema``).

Every learner turns its ``agent`` section (or the settings stored in its checkpoint) into its
``Config`` with ``agent_settings``. Each ``Config`` checks, in ``__post_init__`` with ``check_choice``
and ``check_range``, the values its field types cannot rule out, so every learner rejects a bad value
the same way: a one-line ValueError that names the key, ``agent.KEY=VALUE: ...``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf


@dataclass
class GameConfig:
    name: str = "4x4x4"


@dataclass
class NetworkConfig:
    """A value network. ``structured``: the line-detector layer (``detectors`` per line) then
    ``hidden`` fully connected Tanh layers; ``mlp``: ``hidden`` fully connected Tanh layers."""

    kind: str = "structured"
    detectors: int = 4
    hidden: list[int] = field(default_factory=lambda: [32])
    bias: bool = False


@dataclass
class TrainConfig:
    game: GameConfig = field(default_factory=GameConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    agent: Any = MISSING
    episodes: int = 20000  # training episodes (games)
    eval_every: int = 2000  # episodes between evaluations (and checkpoints); 0 = only at the end
    eval_games: int = 200  # games per opponent per evaluation, half in each seat
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "benchmark"])
    num_envs: int = 1  # games played in parallel while training
    seed: int = 0
    resume: bool = False  # continue from the checkpoint in the run directory
    progress: bool = True  # print a progress line while training
    threads: int = 1  # torch intra-op threads
    run_dir: str | None = None  # the run directory of a single run; else Hydra's output directory


T = TypeVar("T")


def agent_settings(agent: Any, schema: type[T]) -> T:
    """``agent`` (a DictConfig, a plain dict such as a checkpoint's, or already a ``schema``) as the
    learner's ``schema`` dataclass, which checks its values. A key that is not a setting of the
    learner is a ValueError naming it.

    The loops read the plain dataclass: attribute access on a DictConfig costs microseconds."""
    if isinstance(agent, schema):
        return agent
    values = OmegaConf.to_container(agent, resolve=True) if OmegaConf.is_config(agent) else dict(agent)
    known = {f.name for f in fields(schema)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"agent.{unknown[0]}: not a setting of {schema.__module__}; "
                         f"settings are {', '.join(sorted(known))}")
    return schema(**values)


def check_choice(settings: Any, key: str, choices: tuple) -> None:
    """Raise ``agent.KEY=VALUE: choose one of ...`` when the setting ``key`` is not one of ``choices``."""
    value = getattr(settings, key)
    if value not in choices:
        raise ValueError(f"agent.{key}={value!r}: choose one of {', '.join(map(str, choices))}")


def check_range(settings: Any, key: str, low: float | None = None, high: float | None = None,
                low_open: bool = False) -> None:
    """Raise ``agent.KEY=VALUE: must be ...`` unless the setting ``key`` lies between ``low`` and
    ``high`` (inclusive; ``low`` excluded with ``low_open``; a bound that is None does not apply)."""
    value = getattr(settings, key)
    below = low is not None and (value <= low if low_open else value < low)
    if below or (high is not None and value > high):
        if high is None:
            need = f"{'>' if low_open else '>='} {low:g}"
        elif low is None:
            need = f"<= {high:g}"
        else:
            need = f"in {'(' if low_open else '['}{low:g}, {high:g}]"
        raise ValueError(f"agent.{key}={value!r}: must be {need}")


_registered = False


def register_configs() -> None:
    """Store the schemas in Hydra's ConfigStore (idempotent)."""
    global _registered
    if _registered:
        return
    from ttt.agents import available_agents

    if not OmegaConf.has_resolver("ttt.first_set"):
        # ${ttt.first_set:a,b}: a unless it is null, else b (Hydra's run dir follows run_dir when set)
        OmegaConf.register_new_resolver("ttt.first_set", lambda *xs: next((x for x in xs if x is not None), None))
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    cs.store(group="network", name="network_schema", node=NetworkConfig)
    cs.store(group="game", name="game_schema", node=GameConfig)
    for name, module in available_agents().items():
        cs.store(group="agent", name=f"{name}_schema", node=module.Config)
    _registered = True
