"""Health figures of the value head while it trains: whether it saturates, whether its values still
differ between the moves of a position, and whether it values the moves that one move decides as
they are worth.

A Tanh output whose logit has grown large gives every afterstate nearly the same value, +-1, and a
gradient of ``1 - tanh(z)**2``, near 0: every update is starved, its -1 targets included, and the
values stop telling moves apart. These figures show it while it happens, from the positions the
run's training games met last (``Recent``, the learners' positions of the last plies, up to
``POSITIONS``), every legal afterstate of each valued by the network alone (no rules):

==================================  ==================================================================
``train/health/saturated``          share of those afterstates whose value is above 0.99 in magnitude
``train/health/logit``              mean magnitude of the output unit's logit (the Tanh's input)
``train/health/spread``             sd of the values of a position's afterstates, averaged over the
                                    positions with two legal moves or more
``train/health/win``                mean value of the afterstates that complete a line (worth +1)
``train/health/leaves_win``         mean value of those that let the opponent complete a line at
                                    once (worth -1); NaN where no position had one
==================================  ==================================================================

A healthy head: few saturated afterstates, a spread well above 0, wins near +1 and moves that leave a
win well below 0. ``python experiments/summarize.py RUNS format=health`` tabulates them per run.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ttt.device import module_device
from ttt.games import Game
from ttt.games.threats import move_tactics

POSITIONS = 512  # the learners' positions kept per run (the last ones played)
SATURATED = 0.99  # |V| above this counts as saturated
TAGS = ("saturated", "logit", "spread", "win", "leaves_win")


def run_health(trainer, r: int = 0) -> dict[str, float]:
    """The health figures of run ``r`` of a ``Trainer`` over the positions its learners met last."""
    return health(trainer.nets[r], trainer.game, *trainer.recent.of(r))


def health(net, game: Game, views: np.ndarray, legal: np.ndarray) -> dict[str, float]:
    """The health figures (``TAGS``) of ``net`` over positions ``views`` ((N, cells) boards from the
    view of the player to move, +1 its pieces) and their legal moves ``legal`` ((N, cells) bool).
    NaN for a figure without afterstates to measure (no position, no win, no move that leaves one)."""
    views, legal = np.asarray(views, dtype=np.float32), np.asarray(legal, dtype=bool)
    if not len(views) or not legal.any():
        return dict.fromkeys(TAGS, math.nan)
    device = module_device(net)
    with torch.inference_mode():
        logits = net.afterstate_logits(torch.as_tensor(views, device=device),
                                       torch.as_tensor(legal, device=device)).double().cpu().numpy()
    values = np.tanh(logits)
    tactics = move_tactics(views.astype(np.int8), np.ones(len(views), dtype=np.int8), legal, game)
    several = legal.sum(1) >= 2
    spread = [values[i][legal[i]].std() for i in np.flatnonzero(several)]
    return {
        "saturated": float((np.abs(values[legal]) > SATURATED).mean()),
        "logit": float(np.abs(logits[legal]).mean()),
        "spread": float(np.mean(spread)) if spread else math.nan,
        "win": _mean(values[tactics.win]),
        "leaves_win": _mean(values[tactics.loss]),
    }


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


class Recent:
    """The last ``size`` positions (from the mover's view) and legal masks a run's learners met: a ring
    per run, written every ply (a copy of rows the trainer has already; no random draw, so the runs are
    the same with it), read by ``health``. On the trainer's device; not saved in checkpoints."""

    def __init__(self, runs: int, cells: int, xp, size: int = POSITIONS) -> None:
        self.xp, self.size = xp, int(size)
        self.views = xp.zeros((runs, self.size, cells), "int8")
        self.legal = xp.zeros((runs, self.size, cells), "bool")
        self.count = np.zeros(runs, dtype=np.int64)  # positions written so far, per run

    def add(self, runs, views, legal) -> None:
        """Keep the positions ``views`` with their ``legal`` masks, each in the ring of its run (``runs``,
        one per row; the newest ``size`` of each run's)."""
        xp = self.xp
        for r in np.unique(xp.numpy(runs)).tolist():
            mine = xp.flatnonzero(runs == r)[-self.size:]
            n = len(mine)
            at = xp.asarray((int(self.count[r]) + np.arange(n)) % self.size)
            self.views[r, at] = xp.astype(views[mine], "int8")
            self.legal[r, at] = legal[mine]
            self.count[r] += n

    def of(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Run ``r``'s kept positions and legal masks, numpy arrays on the host."""
        n = min(int(self.count[r]), self.size)
        return self.xp.numpy(self.views[r, :n]), self.xp.numpy(self.legal[r, :n])
