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
from ttt.games.threats import move_tactics, playable

POSITIONS = 512  # the learners' positions kept per run (the last ones played)
SATURATED = 0.99  # |V| above this counts as saturated
TAGS = ("saturated", "logit", "spread", "win", "leaves_win")


def run_health(trainer, r: int = 0) -> dict[str, float]:
    """The health figures of run ``r`` of a ``Trainer`` over the positions its learners met last."""
    return health(trainer.nets[r], trainer.game, trainer.recent.of(r))


def health(net, game: Game, views: np.ndarray) -> dict[str, float]:
    """The health figures (``TAGS``) of ``net`` over the positions ``views`` ((N, cells) boards of games in
    progress, from the view of the player to move, +1 its pieces), at every legal move of each.
    NaN for a figure without afterstates to measure (no position, no win, no move that leaves one)."""
    views = np.asarray(views, dtype=np.int8)
    legal = playable(views, game)
    if not legal.any():
        return dict.fromkeys(TAGS, math.nan)
    device = module_device(net)
    with torch.inference_mode():
        logits = net.afterstate_logits(torch.as_tensor(views, dtype=torch.float32, device=device),
                                       torch.as_tensor(legal, device=device)).double().cpu().numpy()
    values = np.where(legal, np.tanh(logits), 0.0)
    tactics = move_tactics(views, np.ones(len(views), dtype=np.int8), legal, game)
    moves = legal.sum(1)
    several = moves >= 2
    mean = values.sum(1) / np.maximum(moves, 1)
    sd = np.sqrt(np.where(legal, (values - mean[:, None]) ** 2, 0.0).sum(1) / np.maximum(moves, 1))
    return {
        "saturated": float((np.abs(values[legal]) > SATURATED).mean()),
        "logit": float(np.abs(logits[legal]).mean()),
        "spread": float(sd[several].mean()) if several.any() else math.nan,
        "win": _mean(values[tactics.win]),
        "leaves_win": _mean(values[tactics.loss]),
    }


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


class Recent:
    """The positions (from the mover's view) the learners met last: one ring shared by the runs, ``size`` a
    run (``size * runs`` in all), each entry marked with its run, written every ply in one step (a copy of
    rows the trainer has already; no random draw, so the runs are the same with it), read by ``health``.
    Runs side by side step together, so each keeps about ``size`` of its newest positions. On the
    trainer's device; not saved in checkpoints."""

    def __init__(self, runs: int, cells: int, xp, size: int = POSITIONS) -> None:
        self.xp, self.capacity = xp, int(size) * int(runs)
        self.views = xp.zeros((self.capacity, cells), "int8")
        self.run = xp.full(self.capacity, -1, "int64")  # the run of each entry, -1 while empty
        self.count = 0  # positions written so far

    def add(self, runs, views) -> None:
        """Keep the positions ``views``, each marked with its run (``runs``, one per row); the oldest
        entries give way."""
        n = min(len(views), self.capacity)
        if not n:
            return
        xp = self.xp
        at = xp.asarray((self.count + np.arange(n)) % self.capacity)
        self.views[at] = xp.astype(views[-n:], "int8")
        self.run[at] = runs[-n:]
        self.count += n

    def of(self, r: int) -> np.ndarray:
        """Run ``r``'s kept positions, a numpy array on the host."""
        return self.xp.numpy(self.views[self.xp.flatnonzero(self.run == r)])
