"""Structured-config schemas for Hydra: a misspelt key or a wrong type fails at composition.

``configs/train.yaml`` is validated against ``TrainConfig``; each ``configs/agent/<name>.yaml``
extends the ``Config`` dataclass of its learner module (registered as ``agent/<name>_schema``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    device: str = "auto"  # auto | cpu | cuda: where games, networks and batched opponents live (ttt.device)
    run_dir: str | None = None  # the run directory of a single run; else Hydra's output directory


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
