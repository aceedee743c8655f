"""The rules of one game on Python integers, for the inner loops of tree search.

A *mask* is an int whose bit ``c`` is set for cell ``c``; a position is the pair of masks of the first
and the second player. A line is complete when a player's mask covers the line's mask, so the win
test after a move reads only the lines through the new piece. This is the single-game face of the
same rules as ``State`` and ``BatchedGames`` (the tests replay its games through ``State``, and check
its completing cells against ``ttt.games.threats.completing_moves``).

``random_playout`` plays uniformly random legal moves to the end of the game: it is the rollout of
Monte Carlo tree search, a few microseconds per ply.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ttt.games.rules import FIRST, Game


class Bitboards:
    """Line masks and move generation of one board (``bitboards(game)`` caches one per board)."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self.k = game.line_length
        self.num_cells = game.num_cells
        self.bit = [1 << c for c in range(game.num_cells)]
        self.line_masks = [sum(1 << int(c) for c in line) for line in game.lines]
        # the masks of the lines through each cell: the only lines a piece there can complete
        self.cell_masks = [tuple(self.line_masks[li] for li in game.cell_lines[c]) for c in range(game.num_cells)]
        self.full = (1 << game.num_cells) - 1
        self.gravity = game.gravity
        # with gravity the cell above c is c + layer (axis 0 is the layer, layer 0 at the bottom)
        self.layer = game.n ** (game.d - 1) if game.gravity else 0
        self.bottom = (1 << self.layer) - 1
        self.above = [int(c) for c in game.above]

    def masks(self, board) -> tuple[int, int]:
        """(first player's mask, second player's mask) of a board of +1 / -1 / 0 cells."""
        first = second = 0
        for c, v in enumerate(board):
            if v == FIRST:
                first |= 1 << c
            elif v:
                second |= 1 << c
        return first, second

    def playable(self, first: int, second: int) -> int:
        """The mask of the empty cells a piece may be placed on (with gravity: on a filled cell or the
        bottom layer). Does not look at whether the game is over."""
        filled = first | second
        if self.gravity:
            return ((filled << self.layer) | self.bottom) & ~filled & self.full
        return ~filled & self.full

    def completing(self, mine: int, theirs: int) -> int:
        """The empty cells, playable or not, where the holder of ``mine`` would complete a line."""
        need = self.k - 1
        cells = 0
        for m in self.line_masks:
            if not theirs & m:
                own = mine & m
                if own != m and own.bit_count() == need:
                    cells |= m ^ own
        return cells

    def random_playout(self, first: int, second: int, to_play: int, rng: np.random.Generator,
                       moves: list[int] | None = None) -> int:
        """Uniformly random legal moves from an unfinished position (the players' masks and the side
        to move) to the end: the winner (+1 first player, -1 second, 0 draw). The moves played are
        appended to ``moves`` when it is given."""
        playable = self.playable(first, second)
        legal = [c for c in range(self.num_cells) if playable >> c & 1]
        empty = self.num_cells - (first | second).bit_count()
        # one draw per remaining ply; u * len(legal) < len(legal) for every float u < 1
        uniforms = rng.random(empty).tolist()
        cell_masks, above, gravity = self.cell_masks, self.above, self.gravity
        p = to_play
        for u in uniforms:
            i = int(u * len(legal))
            c = legal[i]
            # the cell leaves the legal list; with gravity the cell above it (if any) takes its place
            up = above[c] if gravity else -1
            if up >= 0:
                legal[i] = up
            else:
                legal[i] = legal[-1]
                legal.pop()
            if moves is not None:
                moves.append(c)
            if p == FIRST:
                first |= 1 << c
                mask = first
            else:
                second |= 1 << c
                mask = second
            for m in cell_masks[c]:
                if mask & m == m:
                    return p
            p = -p
        return 0


@cache
def bitboards(game: Game) -> Bitboards:
    """The ``Bitboards`` of ``game`` (built once per board)."""
    return Bitboards(game)
