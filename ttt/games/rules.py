"""Rules of the n^d tic-tac-toe family: cells, winning lines, symmetries and the single-game State.

One implementation, parameterised by side ``n``, dimension ``d``, line length ``k`` and gravity,
serves every board. Cells are numbered row-major: ``row*n + col`` in 2D and
``layer*n*n + row*n + col`` in 3D (axis 0 is the layer; with gravity layer 0 is the bottom).

Players are +1 (first player) and -1 (second player); an empty cell is 0.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

FIRST, SECOND = 1, -1


class IllegalMoveError(ValueError):
    """An action that is out of range or not legal in the current position."""


@dataclass(frozen=True)
class Game:
    """A board of the family. Immutable; expensive derived tables are computed once and cached."""

    name: str
    n: int
    d: int
    gravity: bool = False
    k: int | None = None  # cells in a row needed to win; None means n

    def __post_init__(self) -> None:
        if self.n < 2 or self.d < 1:
            raise ValueError(f"board {self.name!r}: need n >= 2 and d >= 1, got n={self.n}, d={self.d}")
        if self.gravity and self.d < 2:
            raise ValueError(f"board {self.name!r}: gravity needs d >= 2")
        if not 2 <= self.line_length <= self.n:
            raise ValueError(f"board {self.name!r}: k must be in [2, n], got {self.k}")

    # ------------------------------------------------------------------ geometry
    @property
    def line_length(self) -> int:
        return self.n if self.k is None else self.k

    @property
    def num_cells(self) -> int:
        return self.n**self.d

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.n,) * self.d

    @cached_property
    def coords(self) -> np.ndarray:
        """(cells, d) coordinates of every cell, axis 0 first (layer, row, col in 3D)."""
        return np.stack(np.unravel_index(np.arange(self.num_cells), self.shape), axis=1)

    @cached_property
    def lines(self) -> np.ndarray:
        """(lines, k) int array of the cells of every winning line, enumerated generically."""
        k, n = self.line_length, self.n
        dirs = [v for v in itertools.product((-1, 0, 1), repeat=self.d) if any(v)]
        # one of each pair v / -v: keep the vectors whose first non-zero component is positive
        dirs = [np.array(v) for v in dirs if next(x for x in v if x) > 0]
        out = []
        for v in dirs:
            for start in itertools.product(range(n), repeat=self.d):
                cells = np.array(start) + np.outer(np.arange(k), v)
                if (cells >= 0).all() and (cells < n).all():
                    out.append(np.ravel_multi_index(cells.T, self.shape))
        lines = np.array(sorted(map(tuple, out)), dtype=np.int64)
        lines.setflags(write=False)
        return lines

    @cached_property
    def cell_lines(self) -> list[tuple[int, ...]]:
        """For every cell, the indices of the lines through it."""
        inc: list[list[int]] = [[] for _ in range(self.num_cells)]
        for li, line in enumerate(self.lines):
            for c in line:
                inc[int(c)].append(li)
        return [tuple(x) for x in inc]

    @cached_property
    def lines_through(self) -> list[tuple[tuple[int, ...], ...]]:
        """For every cell, the cells of each line through it, as Python ints (for per-move loops)."""
        lines = [tuple(int(c) for c in line) for line in self.lines]
        return [tuple(lines[li] for li in self.cell_lines[c]) for c in range(self.num_cells)]

    @cached_property
    def incidence(self) -> np.ndarray:
        """(cells, lines) bool matrix: incidence[c, l] is True when cell c lies on line l."""
        m = np.zeros((self.num_cells, len(self.lines)), dtype=bool)
        m[self.lines, np.arange(len(self.lines))[:, None]] = True
        return m

    @cached_property
    def below(self) -> np.ndarray:
        """For gravity boards, the cell directly below each cell (-1 on the bottom layer)."""
        below = np.full(self.num_cells, -1, dtype=np.int64)
        if self.gravity:
            layer_size = self.n ** (self.d - 1)
            below[layer_size:] = np.arange(self.num_cells - layer_size)
        return below

    @cached_property
    def above(self) -> np.ndarray:
        """For gravity boards, the cell directly above each cell (-1 on the top layer; all -1 without gravity)."""
        above = np.full(self.num_cells, -1, dtype=np.int64)
        has = self.below >= 0
        above[self.below[has]] = np.flatnonzero(has)
        return above

    @cached_property
    def symmetries(self) -> np.ndarray:
        """(group size, cells) permutations that map the set of lines onto itself.

        Row g maps cell i to cell ``symmetries[g, i]``. Row 0 is the identity. With gravity the
        permutations also keep every column a column and every layer at its height.
        Computed by a backtracking search for the automorphisms of the line hypergraph.
        """
        from ttt.games.symmetry import line_automorphisms

        if self.gravity:
            layer = self.coords[:, 0]
            column = np.ravel_multi_index(self.coords[:, 1:].T, self.shape[1:])
            perms = line_automorphisms(self.num_cells, self.lines, cell_class=layer, same_group=column)
        else:
            perms = line_automorphisms(self.num_cells, self.lines)
        perms.setflags(write=False)
        return perms

    @cached_property
    def _powers3(self) -> np.ndarray:
        return 3 ** np.arange(self.num_cells, dtype=np.int64)

    def ternary_hash(self, board: np.ndarray) -> np.ndarray | int:
        """Base-3 number of a board (0 empty, 1 first player, 2 second), cell 0 least significant.

        Works on one board (cells,) or a batch (B, cells). Needs 3^cells < 2^63 (boards up to 39 cells).
        """
        if self.num_cells > 39:
            raise ValueError(f"board {self.name}: 3^{self.num_cells} does not fit in 64 bits")
        b = np.asarray(board, dtype=np.int64) % 3
        h = b @ self._powers3
        return int(h) if np.ndim(h) == 0 else h

    def canonical(self, board: np.ndarray) -> np.ndarray:
        """The smallest image of ``board`` under the symmetry group (lexicographic on cells 0..)."""
        images = np.asarray(board)[..., self.symmetries]  # (..., G, cells); the group is closed under inverse
        codes = images.astype(np.int64) % 3
        if board.ndim == 1:
            order = np.lexsort(codes.T[::-1])
            return images[order[0]]
        return np.stack([self.canonical(b) for b in board])

    def canonical_key(self, board: np.ndarray) -> int | bytes:
        """A hashable key equal for exactly the boards in one symmetry orbit.

        The ternary hash of the smallest image where it fits in 64 bits, else the image's bytes.
        """
        board = np.asarray(board)
        if self.num_cells <= 39:
            images = board[self.symmetries]
            return int(self.ternary_hash(images).min())
        return self.canonical(board).astype(np.int8).tobytes()

    # ------------------------------------------------------------------ play
    def initial_state(self) -> State:
        return State(self, (0,) * self.num_cells, FIRST, 0, 0)

    def state_from_board(self, board) -> State:
        """A State from a board of +1/-1/0 (first player moves when the piece counts are equal)."""
        board = tuple(int(x) for x in np.asarray(board).ravel())
        if len(board) != self.num_cells or any(x not in (-1, 0, 1) for x in board):
            raise ValueError(f"board {self.name}: need {self.num_cells} cells of -1/0/+1")
        n1, n2 = board.count(1), board.count(-1)
        if n1 - n2 not in (0, 1):
            raise ValueError(f"board {self.name}: {n1} first-player and {n2} second-player pieces")
        winner = 0
        for line in self.lines:
            s = sum(board[c] for c in line)
            if abs(s) == self.line_length:
                winner = 1 if s > 0 else -1
        return State(self, board, FIRST if n1 == n2 else SECOND, winner, n1 + n2)

    def winning_line(self, board) -> tuple[int, ...] | None:
        """The cells of a completed line on ``board`` (+1/-1/0 per cell), lowest line first; None if none."""
        board = np.asarray(board).ravel()
        full = np.abs(board[self.lines].sum(axis=1)) == self.line_length
        return tuple(int(c) for c in self.lines[np.argmax(full)]) if full.any() else None

    def cell_label(self, cell: int) -> str:
        """Coordinates of a cell for people: 'r,c' in 2D, 'l,r,c' in 3D."""
        return ",".join(str(int(x)) for x in self.coords[cell])

    def __repr__(self) -> str:
        return f"Game({self.name!r})"


class State:
    """One position. Immutable: ``apply`` returns a new State and leaves this one unchanged."""

    __slots__ = ("game", "board", "_to_play", "_winner", "num_moves", "last_action")

    def __init__(self, game: Game, board: tuple[int, ...], to_play: int, winner: int, num_moves: int,
                 last_action: int = -1) -> None:
        self.game = game
        self.board = board
        self._to_play = to_play
        self._winner = winner
        self.num_moves = num_moves
        self.last_action = last_action

    def to_play(self) -> int:
        """+1 when the first player moves next, -1 for the second."""
        return self._to_play

    def winner(self) -> int:
        """+1 first player won, -1 second player won, 0 draw or not over."""
        return self._winner

    def is_terminal(self) -> bool:
        return self._winner != 0 or self.num_moves == self.game.num_cells

    def is_legal(self, action: int) -> bool:
        """Whether ``apply(action)`` would accept ``action`` (the test is ``check_action``'s)."""
        try:
            self.check_action(action)
        except IllegalMoveError:
            return False
        return True

    def legal_actions(self) -> list[int]:
        if self.is_terminal():
            return []
        b = self.board
        if not self.game.gravity:
            return [a for a, v in enumerate(b) if v == 0]
        below = self.game.below
        return [a for a in range(len(b)) if b[a] == 0 and (below[a] < 0 or b[below[a]] != 0)]

    def legal_mask(self) -> np.ndarray:
        m = np.zeros(self.game.num_cells, dtype=bool)
        m[self.legal_actions()] = True
        return m

    def check_action(self, action) -> int:
        """Return ``action`` as an int, or raise IllegalMoveError saying why it is not legal."""
        g = self.game
        if not isinstance(action, (int, np.integer)) or isinstance(action, bool):
            raise IllegalMoveError(f"action {action!r} on {g.name}: not an integer cell number")
        action = int(action)
        if not 0 <= action < g.num_cells:
            raise IllegalMoveError(f"action {action} on {g.name}: out of range 0..{g.num_cells - 1}")
        if self.is_terminal():
            raise IllegalMoveError(f"action {action} on {g.name}: the game is over")
        if self.board[action] != 0:
            raise IllegalMoveError(f"action {action} on {g.name}: cell {g.cell_label(action)} is occupied")
        below = g.below[action]
        if below >= 0 and self.board[below] == 0:
            raise IllegalMoveError(
                f"action {action} on {g.name}: cell {g.cell_label(action)} is not reachable yet "
                f"(cell {g.cell_label(int(below))} below it is empty)")
        return action

    def apply(self, action: int) -> State:
        """The state after the player to move plays ``action`` (a new State)."""
        action = self.check_action(action)
        p = self._to_play
        board = self.board[:action] + (p,) + self.board[action + 1:]
        g = self.game
        won = any(all(board[c] == p for c in line) for line in g.lines_through[action])
        return State(g, board, -p, p if won else 0, self.num_moves + 1, action)

    def array(self) -> np.ndarray:
        """The board as an int8 array of +1 (first player), -1 (second), 0."""
        return np.array(self.board, dtype=np.int8)

    def observation(self) -> np.ndarray:
        """The board seen from the player to move: +1 own piece, -1 opponent, 0 empty (float32)."""
        return self.array().astype(np.float32) * self._to_play

    def render(self) -> str:
        """Text rendering; 3D boards as layers side by side with coordinates."""
        return render_board(self.game, self.board)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"State({self.game.name}, moves={self.num_moves}, to_play={self._to_play:+d})"

    def __eq__(self, other) -> bool:
        return isinstance(other, State) and other.game == self.game and other.board == self.board

    def __hash__(self) -> int:
        return hash((self.game.name, self.board))


SYMBOLS = {1: "X", -1: "O", 0: "."}


def opening_name(game: Game, cell: int) -> str:
    """The kind of cell an opening move takes, by how many of its coordinates lie on the border:
    all ``corner``, none ``centre``, one of three ``face centre``, else ``edge`` (3x3: cell 0 corner,
    1 edge, 4 centre). On 4x4 the symmetry class of cell 0 also holds the middle cells."""
    coords = [int(x) for x in game.coords[cell]]
    border = sum(x in (0, game.n - 1) for x in coords)
    if border == len(coords):
        return "corner"
    if border == 0:
        return "centre"
    return "face centre" if len(coords) == 3 and border == 1 else "edge"


def render_board(game: Game, board, show_numbers: bool = False) -> str:
    """Render a 2D board as a grid and a 3D board as its layers side by side.

    Rows and columns carry their coordinates. With ``show_numbers`` empty cells show their
    cell number instead of a dot.
    """
    n = game.n
    width = len(str(game.num_cells - 1)) if show_numbers else 1

    def cell(c: int) -> str:
        v = board[c]
        if v == 0 and show_numbers:
            return str(c).rjust(width)
        return SYMBOLS[v].rjust(width)

    if game.d == 2:
        header = "   " + " ".join(str(c).rjust(width) for c in range(n))
        rows = [f"{r:>2} " + " ".join(cell(r * n + c) for c in range(n)) for r in range(n)]
        return "\n".join([header, *rows])
    if game.d == 3:
        gap = "    "
        layers = range(n)
        block = len("   " + " ".join("x" * width for _ in range(n)))
        title = gap.join(f"layer {z}".ljust(block) for z in layers)
        header = gap.join(("   " + " ".join(str(c).rjust(width) for c in range(n))).ljust(block) for z in layers)
        rows = []
        for r in range(n):
            rows.append(gap.join(
                (f"{r:>2} " + " ".join(cell(z * n * n + r * n + c) for c in range(n))).ljust(block)
                for z in layers))
        return "\n".join(line.rstrip() for line in [title, header, *rows])
    return " ".join(SYMBOLS[v] for v in board)
