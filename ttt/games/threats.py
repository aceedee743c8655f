"""Rules queries about lines one move from complete: wins, forced losses and forks, batched.

These answer exact one- and two-move questions from the rules alone, for many boards at once:

* ``completing_moves``: the legal moves that complete one of a player's lines (immediate wins);
* ``move_tactics``: for every legal move of the player to move, whether it wins at once, whether it
  leaves the opponent an immediate win (a *forced loss* in one ply, unless it wins itself), and whether
  it is a *fork*: afterwards the mover has two or more distinct playable winning cells while the
  opponent has none, so the opponent can block only one of them (a win in the mover's next move).

Gravity is respected: a cell is playable when the cell below it is filled, and a move can make the
cell above it playable, for either side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ttt.games.arrays import arrays_of
from ttt.games.rules import Game


def completing_moves(board, player, legal, game: Game):
    """(B, cells) bool: legal moves that complete a line of ``player`` (per row) at once.

    A move completes a line when that line holds k-1 of the player's pieces and the move's cell is
    the line's only empty cell. numpy arrays or torch tensors (``ttt.games.arrays``), alike.
    """
    return completing_cells(board, player, game) & legal


def completing_cells(board, player, game: Game):
    """(B, cells) bool: empty cells that would complete a line of ``player``, playable or not."""
    xp = arrays_of(board)
    lines = xp.table(game.lines) if xp.is_torch else game.lines
    vals = board[:, lines]  # (B, L, k)
    own = (vals == player[:, None, None]).sum(-1)
    empty = vals == 0
    ready = (own == game.line_length - 1) & (empty.sum(-1) == 1)  # (B, L)
    return xp.mark_line_cells(ready, empty, lines, game.num_cells)  # the one empty cell of each ready line


@dataclass
class MoveTactics:
    """Per legal move of the player to move, (B, cells) bool masks (all False on illegal moves)."""

    win: np.ndarray  # completes a line
    loss: np.ndarray  # does not win, and the opponent can complete a line at once afterwards
    fork: np.ndarray  # neither; afterwards the mover has >= 2 playable winning cells


def _above(game: Game) -> np.ndarray:
    above = np.full(game.num_cells, -1, dtype=np.int64)
    has = game.below >= 0
    above[game.below[has]] = np.flatnonzero(has)
    return above


def move_tactics(board: np.ndarray, player: np.ndarray, legal: np.ndarray, game: Game) -> MoveTactics:
    """Win, forced-loss and fork masks of every legal move of ``player`` (per row of ``board``).

    ``board`` (B, cells) holds +1 / -1 / 0; ``player`` (B,) the side to move; ``legal`` (B, cells) its
    legal moves. Exact: checked against explicit afterstates in the tests. Tensors on a device make a
    round trip through the host (the fork count's sparse bookkeeping is written for numpy).
    """
    xp = arrays_of(board)
    if xp.is_torch:
        t = move_tactics(xp.numpy(board), xp.numpy(player), xp.numpy(legal), game)
        return MoveTactics(xp.asarray(t.win), xp.asarray(t.loss), xp.asarray(t.fork))
    k, lines = game.line_length, game.lines
    vals = board[:, lines].astype(np.int16) * player[:, None, None].astype(np.int16)  # mover +1
    own = (vals == 1).sum(-1)
    opp = (vals == -1).sum(-1)
    win = completing_cells(board, player, game) & legal
    mine_any = completing_cells(board, player, game)  # my winning cells, playable or not
    theirs_any = completing_cells(board, -player, game)
    theirs_now = theirs_any & legal
    n_theirs = theirs_now.sum(1, keepdims=True)
    # after a, the opponent wins at once if one of its playable winning cells is not a itself ...
    loss = (n_theirs - theirs_now) > 0
    if game.gravity:
        # ... or if a makes the cell above it playable and that cell completes the opponent's line
        above = _above(game)
        has = above >= 0
        lift = np.zeros_like(legal)
        lift[:, has] = theirs_any[:, above[has]]
        loss |= lift
    loss &= legal & ~win

    # my winning cells after a: (i) existing ones other than a that are playable after a, and
    # (ii) for every line with k-2 of my pieces and no opponent piece, placing on one of its two empty
    # cells makes the other a winning cell. Two lines through a share only a, so (ii) gives distinct
    # cells per line; cells in both (i) and (ii) are counted once.
    mine_now = mine_any & legal
    count = mine_now.sum(1, keepdims=True) - mine_now  # (i), playable before and after a
    if game.gravity:
        lift = np.zeros_like(legal)
        lift[:, has] = mine_any[:, above[has]]
        count = count + lift  # (i), the winning cell above a becomes playable
    two = (own == k - 2) & (opp == 0)
    b, li = np.nonzero(two)
    if len(b):
        cells = lines[li]  # (n, k)
        empty = vals[b, li] == 0  # (n, k)
        pos = np.argsort(~empty, axis=1, kind="stable")[:, :2]  # the two empty positions
        x = cells[np.arange(len(b)), pos[:, 0]]
        y = cells[np.arange(len(b)), pos[:, 1]]
        bb = np.concatenate([b, b])
        a = np.concatenate([x, y])  # the move
        t = np.concatenate([y, x])  # the cell it makes a winner
        playable = legal[bb, t] | (game.below[t] == a)
        fresh = playable & ~(mine_any[bb, t])  # a cell already winning is counted in (i)
        np.add.at(count, (bb[fresh], a[fresh]), 1)
    fork = legal & ~win & ~loss & (count >= 2)
    return MoveTactics(win=win, loss=loss, fork=fork)
