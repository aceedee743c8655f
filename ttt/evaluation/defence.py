"""Defence in a player's own games: how often it takes a forced block, and how it values the blocks it
misses.

A *forced block* (``ttt.games.threats.forced_blocks``) is a position where the player to move cannot
complete a line, the opponent has exactly one *playable* winning cell (with gravity, a cell resting
on a piece: a three whose empty cell floats above an empty one is no threat yet), and taking that cell
is *safe*: afterwards the opponent cannot complete a line at once (with gravity the block must not
lift another winning cell of the opponent's into reach). There the block is the only move that does
not lose at once; any other move, a *miss*, leaves the winning cell open, so its afterstate is lost in
one ply (exact value -1, the value a TD learner's target for it converges to).

Over the moves a player made in its games (``ttt.evaluation.evaluate.PlayedMoves``, recorded by
``ttt.evaluation.evaluate.Recorded``):

* ``block_rate``: of its moves in forced-block positions, the share that took the block (None when
  its games held none);
* ``miss_value``: the mean of ``values`` over the afterstates of its misses (None without misses or
  values): with the network alone's values, whether it sees that a miss loses;
* ``forced``: how many forced-block positions it met (the rate's denominator).

Every evaluation of a training run logs them as ``eval/defence/{block_rate,miss_value,forced}``
(``ttt.evaluation.value_quality.evaluation_scalars``), over the games against all evaluation opponents.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ttt.evaluation.evaluate import PlayedMoves
from ttt.games import Game
from ttt.games.threats import forced_blocks, playable


def defence(game: Game, played: PlayedMoves, values: np.ndarray | None = None) -> dict[str, Any]:
    """``{"forced", "blocked", "block_rate", "miss_value"}`` of the moves ``played`` (see the module);
    ``values`` (N,), one per move: the value of its afterstate (NaN where none was asked)."""
    blocks = forced_blocks(played.boards, played.movers, playable(played.boards, game), game)
    faced = blocks.any(1)
    blocked = faced & blocks[np.arange(len(faced)), played.moves]
    missed = faced & ~blocked
    forced = int(faced.sum())
    out: dict[str, Any] = {"forced": forced, "blocked": int(blocked.sum()),
                           "block_rate": int(blocked.sum()) / forced if forced else None, "miss_value": None}
    if values is not None and missed.any():
        out["miss_value"] = float(np.asarray(values, dtype=np.float64)[missed].mean())
    return out
