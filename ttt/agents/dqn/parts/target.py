"""Part ``target``: a target network. The TD(0) bootstrap values the move the learning network chose with
a copy of the network re-taken every ``target_every`` games (the learning network chooses, the copy
values, as double Q-learning separates them); without it the learning network values its own choice,
which biases the values up."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ttt.agents.dqn.moves import move_scores
from ttt.agents.dqn.parts import Part
from ttt.checkpoint import load_weights
from ttt.config import AT_LEAST_ONE, check_ranges


@dataclass
class TargetSettings:
    target_every: int = 500  # re-take the copy every this many games

    def __post_init__(self) -> None:
        check_ranges("agent.parts.target.", self, {"target_every": AT_LEAST_ONE})


class TargetNetwork(Part):
    Settings = TargetSettings

    def __init__(self, trainer, settings) -> None:
        super().__init__(trainer, settings)
        self.targets = [copy.deepcopy(n).requires_grad_(False) for n in trainer.nets]
        self.taken_at = np.zeros(trainer.k, dtype=np.int64)

    def bootstrap(self, ply, values):
        t = self.trainer
        if not len(ply.lrn):
            return values
        return move_scores(t.scorer(ply.lrn, self.targets), t.games, ply.lrn, t.rules, ply.tactics,
                           gamma=float(t.settings.gamma))[1]

    def games_ended(self, r: int) -> None:
        t = self.trainer
        if t.run_episodes[r] - self.taken_at[r] >= self.settings.target_every:
            self.targets[r].load_state_dict(t.nets[r].state_dict())
            self.taken_at[r] = t.run_episodes[r]

    def state_dict(self, r: int) -> dict:
        return {"target": self.targets[r].state_dict(), "target_taken_at": int(self.taken_at[r])}

    def load_state_dict(self, state: dict, r: int) -> None:
        # a checkpoint from before the part: the copy starts from the weights
        load_weights(self.targets[r], state["target"] if state.get("target") is not None else state["weights"])
        self.taken_at[r] = state.get("target_taken_at", state["episodes"])
