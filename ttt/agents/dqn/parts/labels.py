"""Part ``labels``: what the rules know exactly, taught beside the TD targets (``ttt.agents.dqn.labels``).

* ``rule_labels``: every afterstate of the learner's own positions whose value the rules know (a win +1,
  a move that lets the opponent win at once -1, a fork ``gamma``), with ``fork_defence_labels`` other
  moves a position checked for an opponent fork;
* ``random_labels``: as many such labels a ply from positions of random play (a third of each kind; with
  ``search_labels`` a quarter, and a quarter toward the network's value of the opponent's best reply);
* ``rank_labels``: pairs of afterstates of one random-play position whose order the rules know, trained
  by a hinge on the logits at ``rank_weight`` (``rank_moves``, ``rank_forced``, ``rank_moves_wins``: which
  pairs), on a second head of the network with ``rank_head``.

With ``label_weight`` > 0 the labels are a mean of their own in each run's loss, weighing that many times
the mean of its TD targets. The random-play games move on one ply a step; a run's are in its checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ttt.agents.dqn import labels
from ttt.agents.dqn.parts import Part
from ttt.agents.dqn.state import games_state, load_games_state
from ttt.checkpoint import CheckpointError
from ttt.config import NON_NEGATIVE, ConfigError, check_ranges
from ttt.games import BatchedGames


@dataclass
class LabelSettings:
    rule_labels: bool = False  # train every legal afterstate of the learner's positions the rules value exactly
    fork_defence_labels: int = 0  # with rule_labels, up to this many other afterstates a position checked for an
    # opponent fork (a loss in two of its moves, worth -gamma); 0 = none
    label_weight: float = 0.0  # > 0: the labels a mean of their own weighing this many times the TD targets'
    random_labels: int = 0  # rule-labelled afterstates per ply drawn from as many games of random play (0 = none)
    search_labels: bool = False  # with random_labels, a quarter of them toward the opponent's best reply's value
    rank_labels: int = 0  # pairs of afterstates per ply, from as many games of random play, whose order the
    # rules know (a non-losing move above a losing one, a win above a non-win), trained by a margin loss
    rank_moves: int = 0  # with rank_labels, each position pairs its higher move with the K lower moves the
    # network values most; 0 = with one drawn at random
    rank_weight: float = 1.0  # the weight of the rank loss beside the TD loss
    rank_forced: bool = False  # the non-losing-above-losing pairs only where exactly one move does not lose
    rank_head: bool = False  # the rank pairs train a second output on the network's trunk, not the value;
    # moves are chosen by its order where the rules are silent, targets and values stay the value's
    rank_moves_wins: bool = True  # with rank_moves: the win-above-non-win pairs take the K non-wins valued most

    def __post_init__(self) -> None:
        check_ranges("agent.parts.labels.", self, {
            "fork_defence_labels": NON_NEGATIVE, "label_weight": NON_NEGATIVE, "random_labels": NON_NEGATIVE,
            "rank_labels": NON_NEGATIVE, "rank_moves": NON_NEGATIVE, "rank_weight": NON_NEGATIVE})
        if self.rank_head and not self.rank_labels:
            raise ConfigError("agent.parts.labels.rank_head=true: the rank head learns from rank pairs alone; "
                              "set agent.parts.labels.rank_labels > 0 too")


class Labels(Part):
    Settings = LabelSettings

    def __init__(self, trainer, settings) -> None:
        super().__init__(trainer, settings)
        t = trainer
        # positions of random play, one ply further every step, labelled by the rules alone: the positions
        # self-play rarely reaches (several open threats at once) still teach the network what the rules know
        count = max(settings.random_labels, settings.rank_labels)
        self.games = [BatchedGames(t.game, count, t.xp.device) for _ in range(t.k)] if count else None
        self.pairs = [None] * t.k

    @staticmethod
    def network_options(settings) -> dict:
        return {"rank_head": bool(settings.rank_head)}

    def needs_tactics(self) -> bool:
        return bool(self.settings.rule_labels)

    def label_weight(self) -> float:
        return float(self.settings.label_weight)

    def examples(self, ply) -> list:
        t, s, xp = self.trainer, self.settings, self.trainer.xp
        out = []
        for r, at in t.each_run(ply.lrn) if s.rule_labels and ply.tactics is not None else ():
            out.append((labels.rule_targets(ply.lrn[at], ply.views[at], ply.tactics.take(at), ply.gamma, t.game,
                                            s.fork_defence_labels, t.rngs[r]), None))
        self.pairs = [None] * t.k
        for r in np.flatnonzero(t.active) if self.games is not None else ():
            drawn, self.pairs[r] = labels.random_position_labels(self.games[r], s, t.nets[r], t.rngs[r],
                                                                 ply.gamma, t.rules)
            out.append((drawn, xp.full(len(drawn.targets), int(r), "int64")))
        return out

    def loss(self, r: int):
        if self.pairs[r] is None or not len(self.pairs[r][1]):
            return None
        t, xp = self.trainer, self.trainer.xp
        higher, lower, above = self.pairs[r]
        boards = t.transform(xp.concat([higher, lower]), xp.full(len(higher) + len(lower), r, "int64"))
        higher, lower = xp.to_tensor(boards[:len(higher)]), xp.to_tensor(boards[len(higher):])
        return self.settings.rank_weight * labels.rank_loss(t.nets[r], higher, lower, xp.to_tensor(above))

    def state_dict(self, r: int) -> dict:
        xp = self.trainer.xp
        return {"label_games": None if self.games is None else games_state(self.games[r], xp)}

    def load_state_dict(self, state: dict, r: int) -> None:
        if self.games is None:
            return
        if state.get("label_games") is None:
            raise CheckpointError("this run was trained without random-play labels or rank pairs "
                                  "(agent.parts.labels.random_labels and rank_labels 0); resume it with the same")
        load_games_state(self.games[r], self.trainer.xp, state["label_games"])
