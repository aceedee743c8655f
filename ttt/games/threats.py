"""Rules queries about lines one move from complete: wins, forced losses and forks, batched.

These answer exact one- and two-move questions from the rules alone, for many boards at once:

* ``completing_moves``: the legal moves that complete one of a player's lines (immediate wins);
* ``playable``: the cells a piece can go on;
* ``blocks_line``: whether one move takes the only empty cell of a line the opponent holds otherwise;
* ``move_tactics``: for every legal move of the player to move, whether it wins at once, whether it
  leaves the opponent an immediate win (a *forced loss* in one ply, unless it wins itself), and whether
  it is a *fork*: afterwards the mover has two or more distinct playable winning cells while the
  opponent has none, so the opponent can block only one of them (a win in the mover's next move);
* ``forced_blocks``: where the opponent has exactly one playable winning cell, the mover none, and
  taking that cell leaves the opponent no immediate win: that cell, the one move that does not lose;
* ``forced_wins``: the moves that win by force at the mover's next move, whatever the reply (every
  fork, and with gravity also e.g. a threat whose only block makes a second winning cell playable).

Gravity is respected: a cell is playable when the cell below it is filled, and a move can make the
cell above it playable, for either side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

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
    lines = xp.table(game.lines)
    ready, empty = ready_lines(board, player, game)
    return xp.mark_line_cells(ready, empty, lines, game.num_cells)  # the one empty cell of each ready line


def ready_lines(board, player, game: Game):
    """``(ready, empty)``: (B, L) bool, the lines (``game.lines``) that hold k-1 pieces of ``player`` (per row)
    and one empty cell, and (B, L, k) bool, which of each line's cells are empty."""
    xp = arrays_of(board)
    vals = board[:, xp.table(game.lines)]  # (B, L, k)
    own = (vals == player[:, None, None]).sum(-1)
    empty = vals == 0
    return (own == game.line_length - 1) & (empty.sum(-1) == 1), empty


def playable(board, game: Game):
    """(B, cells) bool: empty cells a piece can be placed on (with gravity, those resting on a piece)."""
    legal = board == 0
    if game.gravity:
        xp = arrays_of(board)
        cells, below = (xp.table(x) for x in _supported(game))
        legal[:, cells] &= board[:, below] != 0
    return legal


def blocks_line(game: Game, board: tuple[int, ...], action: int, mover: int) -> bool:
    """Whether ``mover`` playing ``action`` on ``board`` (one position, +1 / -1 / 0 cells) fills the only
    empty cell of a line the opponent holds otherwise."""
    return any(all(board[c] == -mover for c in line if c != action) for line in game.lines_through[action])


_SUPPORTED: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _supported(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """The cells with a cell below them, and those cells below."""
    if game.name not in _SUPPORTED:
        cells = np.flatnonzero(game.below >= 0)
        _SUPPORTED[game.name] = (cells, game.below[cells])
    return _SUPPORTED[game.name]


_COLUMNS: dict[str, np.ndarray] = {}


def _columns(game: Game) -> np.ndarray:
    """For each pair of ``_supported`` (a cell and the cell below it), the line through both."""
    if game.name not in _COLUMNS:
        cells, below = _supported(game)
        both = game.incidence[cells] & game.incidence[below]  # (pairs, L)
        if not both.any(1).all():
            raise ValueError(f"{game.name}: a cell and the cell below it share no line")
        _COLUMNS[game.name] = both.argmax(1)
    return _COLUMNS[game.name]


@dataclass
class MoveTactics:
    """Per legal move of the player to move, (B, cells) bool masks (all False on illegal moves)."""

    win: np.ndarray  # completes a line
    loss: np.ndarray  # does not win, and the opponent can complete a line at once afterwards
    fork: np.ndarray  # neither; afterwards the mover has >= 2 playable winning cells

    def take(self, rows) -> MoveTactics:
        """The masks of the positions ``rows`` (an index or a slice)."""
        return MoveTactics(self.win[rows], self.loss[rows], self.fork[rows])


def move_tactics(board, player, legal, game: Game) -> MoveTactics:
    """Win, forced-loss and fork masks of every legal move of ``player`` (per row of ``board``).

    ``board`` (B, cells) holds +1 / -1 / 0; ``player`` (B,) the side to move; ``legal`` (B, cells) its
    legal moves. Exact: checked against explicit afterstates in the tests. numpy arrays or tensors on
    one device, alike: fixed shapes throughout, so a device never waits for the host.
    """
    xp = arrays_of(board)
    k = game.line_length
    me = board == player[:, None]
    empty = board == 0
    own = _per_line(me, game)  # (B, L) pieces per line
    opp = _per_line(~me & ~empty, game)
    # a line one piece short with no opposing piece has exactly one empty cell: its winning cell
    mine_any = empty & (_per_cell((own == k - 1) & (opp == 0), game) > 0)
    theirs_any = empty & (_per_cell((opp == k - 1) & (own == 0), game) > 0)
    win = mine_any & legal
    theirs_now = theirs_any & legal
    # after a, the opponent wins at once if one of its playable winning cells is not a itself ...
    loss = theirs_now.sum(1)[:, None] > xp.astype(theirs_now, "int64")
    if game.gravity:
        # ... or if a makes the cell above it playable and that cell completes the opponent's line
        upper, lower = (xp.table(x) for x in _supported(game))
        lift = xp.zeros(tuple(legal.shape), "bool")
        lift[:, lower] = theirs_any[:, upper]
        loss |= lift
    loss &= legal & ~win

    # my winning cells after a: (i) existing ones other than a that are playable after a, and
    # (ii) for every line with k-2 of my pieces and no opponent piece, placing on one of its two empty
    # cells makes the other a winning cell. Two lines through a share only a, so (ii) gives distinct
    # cells per line; cells in both (i) and (ii) are counted once.
    mine_now = mine_any & legal
    count = mine_now.sum(1)[:, None] - xp.astype(mine_now, "int64")  # (i), playable before and after a
    if game.gravity:
        lift = xp.zeros(tuple(legal.shape), "bool")
        lift[:, lower] = mine_any[:, upper]
        count = count + xp.astype(lift, "int64")  # (i), the winning cell above a becomes playable
    # (ii) by lines, with no per-line bookkeeping: a line with k-2 of mine and none of theirs (``two``) has
    # two empty cells, each the other's partner; taking one counts the partner when the partner is
    # playable afterwards and not a winning cell yet. A partner playable now is ``good``: a line with two
    # good cells counts for both, a line with one for the other cell only.
    two = (own == k - 2) & (opp == 0)
    good = legal & ~mine_any
    n_good = _per_line(good, game)
    both = _per_cell(two & (n_good == 2), game)
    one = _per_cell(two & (n_good == 1), game)
    count = count + xp.astype(xp.where(empty, both, 0.0) + xp.where(empty & ~good, one, 0.0), "int64")
    if game.gravity:  # a partner right above the move becomes playable by it
        column = xp.table(_columns(game))
        lifted = two[:, column] & empty[:, lower] & empty[:, upper] & ~mine_any[:, upper]
        count[:, lower] += xp.astype(lifted, "int64")
    fork = legal & ~win & ~loss & (count >= 2)
    return MoveTactics(win=win, loss=loss, fork=fork)


def forced_blocks(board, player, legal, game: Game, tactics: MoveTactics | None = None):
    """(B, cells) bool: the *forced block* of each position, all False where it has none.

    A position has one when ``player`` (to move) cannot complete a line, the opponent has exactly one
    playable winning cell w (``completing_moves``; several lines through w count once, and a winning
    cell the rules do not let anyone play yet, under gravity one above an empty cell, is no threat
    now), and blocking is *safe*: after ``player`` takes w, the opponent cannot complete a line at once
    (``move_tactics``' loss mask is False at w; with gravity a block can lift the opponent's winning
    cell above w into reach). Then w is the only move that does not lose at once, and every other move
    leaves w open: an afterstate lost in one ply. ``tactics``: ``move_tactics`` of these rows, when
    already computed. numpy arrays or tensors on one device, alike.
    """
    xp = arrays_of(board)
    theirs = completing_moves(board, -player, legal, game)
    out = xp.zeros(tuple(legal.shape), "bool")
    rows = xp.flatnonzero(theirs.sum(1) == 1)  # only these can have one: the tactics of these alone
    if len(rows):
        t = move_tactics(board[rows], player[rows], legal[rows], game) if tactics is None else tactics.take(rows)
        out[rows] = theirs[rows] & ~t.loss & ~t.win.any(1)[:, None]
    return out


_MATRICES: dict[str, dict[str, np.ndarray]] = {}


def _matrices(game: Game) -> dict[str, np.ndarray]:
    """The 0/1 float32 matrices the counts multiply by: ``line`` (cells, L) the incidence, ``cell`` its
    transpose."""
    if game.name not in _MATRICES:
        incidence = game.incidence.astype(np.float32)
        _MATRICES[game.name] = {"line": incidence, "cell": np.ascontiguousarray(incidence.T)}
    return _MATRICES[game.name]


# Counts by products with 0/1 matrices (exact in float32). On the host in torch: its thread setting
# holds, while numpy's BLAS would start threads of its own that contend with the rest of a training process.
def _count(marks, game: Game, kind: str):
    """(B, n) bool @ the (n, m) 0/1 matrix ``kind`` -> (B, m) float32 counts, numpy arrays or tensors alike."""
    xp = arrays_of(marks)
    matrix = _matrices(game)[kind]
    if xp.is_torch:
        return xp.astype(marks, "float32") @ xp.table(matrix)
    return (torch.from_numpy(marks.astype(np.float32)) @ torch.from_numpy(matrix)).numpy()


def _per_line(cells, game: Game):
    """(B, cells) bool -> (B, L) how many of the marked cells each line holds."""
    return _count(cells, game, "line")


def _per_cell(lines, game: Game):
    """(B, L) bool -> (B, cells) how many marked lines pass through each cell."""
    return _count(lines, game, "cell")



def forced_wins(board, player, legal, game: Game):
    """(B, cells) bool: moves of ``player`` that win by force in three plies (not at once).

    Such a move does not complete a line, leaves the opponent no immediate win, and after every legal
    reply of the opponent ``player`` can complete a line. Every ``move_tactics`` fork is one; on a free
    board they are exactly the forks, with gravity a threat whose only block makes a second winning cell
    playable above it is one too. Exact: the afterstate of every candidate move is built and each
    reply checked with ``move_tactics`` (memory grows with B * cells * lines: pass a few hundred boards).
    numpy arrays or tensors on one device, alike.
    """
    xp = arrays_of(board)
    t = move_tactics(board, player, legal, game)
    out = xp.zeros(tuple(legal.shape), "bool")
    b, a = xp.nonzero(legal & ~t.win & ~t.loss)
    if len(b) == 0:
        return out
    after = board[b]  # a copy (integer-array indexing)
    after[xp.arange(len(b)), a] = player[b]
    replies = playable(after, game)
    # the opponent has no winning reply (the move left it none), so every reply must lose at once
    reply = move_tactics(after, -player[b], replies, game)
    forced = replies.any(1) & ~(replies & ~reply.loss).any(1)
    out[b[forced], a[forced]] = True
    return out


def threat_forks(board, player, legal, game: Game, tactics: MoveTactics | None = None, depth: int = 1):
    """(B, cells) bool: moves of ``player`` that win by force through a chain of at most ``depth`` threats
    (``threat_depths`` > 0)."""
    return threat_depths(board, player, legal, game, tactics, depth) > 0


THREAT_ROWS = 256  # boards searched at once by threat_depths (every level of the chain multiplies them)


def threat_depths(board, player, legal, game: Game, tactics: MoveTactics | None = None, depth: int = 1):
    """(B, cells) int64: for every move of ``player``, the shortest chain of forcing threats (at most
    ``depth``) through which it wins by force, 0 for none.

    Such a move is no win, loss or fork (``move_tactics``); afterwards the mover has exactly one
    playable winning cell w and the opponent none, so the opponent must take w, and after that the
    mover has a fork (which already accounts for any threat the block at w made): a chain of 1; or,
    with ``depth`` > 1, another such move with a chain of d - 1: a win in 2 * d + 3 plies at most. With
    gravity, a block that lifts a winning cell of the mover into reach is left out (a win in three,
    ``forced_wins``). Exact: the afterstates are built and checked with ``move_tactics``. numpy arrays
    or tensors on one device, alike; on a device only the number of candidate moves at each level of
    the chain reaches the host.
    """
    xp = arrays_of(board)
    if len(board) > THREAT_ROWS:  # row by row independent: in slices, so that memory stays bounded
        parts = []
        for i in range(0, len(board), THREAT_ROWS):
            rows = slice(i, i + THREAT_ROWS)
            sub = None if tactics is None else MoveTactics(tactics.win[rows], tactics.loss[rows], tactics.fork[rows])
            parts.append(threat_depths(board[rows], player[rows], legal[rows], game, sub, depth))
        return xp.concat(parts)
    t = move_tactics(board, player, legal, game) if tactics is None else tactics
    out = xp.zeros(tuple(legal.shape), "int64")
    b, a = xp.nonzero(legal & ~t.win & ~t.loss & ~t.fork & _may_threaten(board, player, game))
    if len(b) == 0:
        return out
    after = board[b]  # a copy (integer-array indexing)
    after[xp.arange(len(b)), a] = player[b]
    mine = completing_moves(after, player[b], playable(after, game), game)
    single = mine.sum(1) == 1  # the loss mask already rules out an immediate win of the opponent
    b, a, after = b[single], a[single], after[single]
    if len(b) == 0:
        return out
    w = xp.astype(mine[single], "int8").argmax(1)  # the one winning cell
    after[xp.arange(len(b)), w] = -player[b]  # the forced block
    reach = playable(after, game)
    reply = move_tactics(after, player[b], reach, game)
    # a block that lifts a winning cell of the mover into reach is a win in three (``forced_wins``)
    won = ~reply.win.any(1)
    chain = xp.astype(won & reply.fork.any(1), "int64")
    if depth > 1:
        idx = xp.flatnonzero(won & (chain == 0))
        if len(idx):
            sub = MoveTactics(reply.win[idx], reply.loss[idx], reply.fork[idx])
            deeper = threat_depths(after[idx], player[b][idx], reach[idx], game, sub, depth - 1)
            best = xp.amin(xp.where(deeper > 0, deeper, depth + 1), 1)
            chain[idx] = xp.where(best <= depth - 1, best + 1, 0)
    out[b, a] = chain
    return out


def _may_threaten(board, player, game: Game):
    """(B, cells) bool: cells where a piece of ``player`` can leave a winning cell of its own: on a line
    with k-2 of its pieces and none of the opponent's, or (gravity) below a winning cell out of reach;
    every cell where the player already has a winning cell in reach (a quiet move keeps that threat).
    Only such moves can be threats, so the search builds no other afterstates."""
    xp = arrays_of(board)
    me = board == player[:, None]
    empty = board == 0
    own, opp = _per_line(me, game), _per_line(~me & ~empty, game)
    k = game.line_length
    may = empty & (_per_cell((own == k - 2) & (opp == 0), game) > 0)
    mine_any = completing_cells(board, player, game)
    may |= (mine_any & playable(board, game)).any(1)[:, None]
    if game.gravity:
        upper, lower = (xp.table(x) for x in _supported(game))
        may[:, lower] |= mine_any[:, upper]
    return may & empty
