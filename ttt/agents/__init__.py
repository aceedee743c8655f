"""Learners. Each is one module that reads top to bottom and exposes the same four names:

* ``Config``: a dataclass, the schema of its ``configs/agent/<name>.yaml`` (registered with Hydra);
* ``check(cfg, game)``: raises ValueError (one line naming the key) for settings or a board it
  cannot use; ``ttt.harness.learners.check_learner`` calls it before any work starts;
* ``train(cfg, run) -> dict``: the training loop, given the composed config and a ``ttt.harness.training.Run``
  (``run.resumed`` is the checkpoint to continue from; ``run.start``, ``run.tick`` after every step
  and ``run.finish`` keep the one schedule of evaluations, checkpoints and log lines); it returns
  the final evaluation (``run.write_final``);
* ``player_from_checkpoint(payload) -> Player``: the trained player from a loaded checkpoint.

A learner that can run on a GPU also sets ``USES_DEVICE = True`` and reads ``run.device``; the others
run on the CPU whatever ``device`` says. A learner that trains several seeds side by side in one process
(``seeds=K``) also has ``train_side_by_side(cfg, run_dir, make_run) -> dict``; the others train their
seeds one at a time. A learner whose players have move-selection rules to leave out has
``network_alone(player) -> Player`` (``eval_alone=true`` evaluates it beside the player); one whose settings a
later version removed lists them in ``RETIRED``, ``{setting: (kept value, last commit that has it)}``
(a checkpoint holding the kept value resumes; another value is refused, naming the commit).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from ttt.checkpoint import CheckpointError, load_checkpoint
from ttt.config import ConfigError

# agent name (the ``agent.name`` config key and the checkpoint ``kind``) -> module
AGENTS: dict[str, str] = {
    "dqn": "ttt.agents.dqn",
    "value_iteration": "ttt.agents.value_iteration",
    "q_learning": "ttt.agents.q_learning",
    "td_afterstate": "ttt.agents.td_afterstate",
    "alphazero": "ttt.agents.alphazero",
}


def agent_module(name: str) -> ModuleType:
    """The module of the learner called ``name``."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; choose one of {', '.join(AGENTS)}")
    return importlib.import_module(AGENTS[name])


def available_agents() -> dict[str, ModuleType]:
    """The learners whose modules are present."""
    out = {}
    for name, mod in AGENTS.items():
        try:
            out[name] = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
    return out


def checkpoint_label(path: str | Path) -> str:
    """The name of the player saved at ``path``: its run directory's for ``<run>/checkpoint.*``,
    else the file's stem."""
    path = Path(path)
    return path.parent.name if path.stem == "checkpoint" and path.parent.name else path.stem


def load_player(path: str | Path, game: str | None = None):
    """The trained player saved at ``path`` (any learner). Raises CheckpointError on a bad file."""
    payload = load_checkpoint(path, game=game)
    if payload["kind"] not in AGENTS:
        raise CheckpointError(f"{path}: unknown checkpoint kind {payload['kind']!r}")
    try:
        player = agent_module(payload["kind"]).player_from_checkpoint(payload)
    except (CheckpointError, ConfigError) as e:  # the payload does not know its file (ConfigError: a setting
        raise CheckpointError(f"{path}: {e}") from None  # it was saved with that this code does not have)
    player.name = checkpoint_label(path)
    return player
