"""Search players: depth-limited alpha-beta with a line heuristic, and exact (perfect) play.

Both search a mutable copy of the position (``_Position``) that keeps, for every line, how many
pieces each player has on it. From those counts come, in a few list look-ups per move, the win
test, the threats (lines one piece short of complete with no opposing piece) and the heuristic.

Scores are integers from the view of the player to move. A win ``d`` plies from the root of a
search scores ``WIN - d`` and a loss ``-(WIN - d)``, so the search prefers faster wins and slower
losses; every heuristic score is far below ``WIN``.
"""

from __future__ import annotations

import numpy as np

from ttt.games import Game, State
from ttt.games.boards import boards_with
from ttt.games.solved import SOLVABLE_CELLS, decode, solved_table
from ttt.players.base import Player
from ttt.players.stop import check_stop

WIN = 1_000_000
INF = 10 * WIN
MATE = WIN // 2  # scores beyond this are forced wins or losses


class _Position:
    """A position being searched: board, per-line piece counts, heuristic, hash. Mutated in place."""

    def __init__(self, game: Game, state: State) -> None:
        self.game = game
        self.k = game.line_length
        self.lines = [tuple(int(c) for c in line) for line in game.lines]
        self.cell_lines = game.cell_lines
        self.below = [int(b) for b in game.below]
        self.num_cells = game.num_cells
        # a line with j pieces of one player and none of the other is worth 4^(j-1)
        self.weight = [0] + [4 ** (j - 1) for j in range(1, self.k + 1)]
        self.pow3 = [3**c for c in range(self.num_cells)]
        self.board = list(state.board)
        self.num_moves = state.num_moves
        self.count = {1: [0] * len(self.lines), -1: [0] * len(self.lines)}
        self.score = 0  # heuristic from the first player's view
        self.hash = 0  # base-3 code of the board: 1 first player, 2 second
        for c, v in enumerate(self.board):
            if v:
                self.board[c] = 0
                self.place(c, v)
        self.num_moves = state.num_moves
        # centre and corners (cells on many lines) first, for move ordering
        self.static_order = sorted(range(self.num_cells), key=lambda c: -len(self.cell_lines[c]))

    def _line_value(self, lid: int) -> int:
        a, b = self.count[1][lid], self.count[-1][lid]
        if b == 0:
            return self.weight[a]
        return -self.weight[b] if a == 0 else 0

    def place(self, cell: int, p: int) -> bool:
        """Put a piece of ``p`` on ``cell``; True when it completes a line."""
        own = self.count[p]
        won = False
        for lid in self.cell_lines[cell]:
            before = self._line_value(lid)
            own[lid] += 1
            self.score += self._line_value(lid) - before
            won |= own[lid] == self.k
        self.board[cell] = p
        self.hash += self.pow3[cell] * (1 if p == 1 else 2)
        self.num_moves += 1
        return won

    def remove(self, cell: int, p: int) -> None:
        """Undo ``place(cell, p)``."""
        own = self.count[p]
        for lid in self.cell_lines[cell]:
            before = self._line_value(lid)
            own[lid] -= 1
            self.score += self._line_value(lid) - before
        self.board[cell] = 0
        self.hash -= self.pow3[cell] * (1 if p == 1 else 2)
        self.num_moves -= 1

    def playable(self, cell: int) -> bool:
        b = self.below[cell]
        return self.board[cell] == 0 and (b < 0 or self.board[b] != 0)

    def legal(self) -> list[int]:
        return [c for c in self.static_order if self.playable(c)]

    def winning_cells(self, p: int) -> set[int]:
        """Playable cells where ``p`` completes a line at once."""
        own, other, need = self.count[p], self.count[-p], self.k - 1
        cells = set()
        for lid, line in enumerate(self.lines):
            if own[lid] == need and other[lid] == 0:
                for c in line:
                    if self.board[c] == 0:
                        if self.playable(c):
                            cells.add(c)
                        break
        return cells

    def gain(self, cell: int, p: int) -> int:
        """Heuristic change, from ``p``'s view, of ``p`` playing ``cell`` (for move ordering)."""
        total = 0
        own, other, w = self.count[p], self.count[-p], self.weight
        for lid in self.cell_lines[cell]:
            a, b = own[lid], other[lid]
            if b == 0:
                total += w[a + 1] - w[a]
            elif a == 0:
                total += w[b]  # blocks the opponent's line
        return total


class _Searcher:
    """Negamax with alpha-beta and a transposition table over one ``_Position``."""

    def __init__(self, pos: _Position, table: dict | None = None) -> None:
        self.pos = pos
        # hash -> (depth, flag, value, best); values of forced wins stored relative to the node
        self.table: dict[int, tuple[int, int, int, int]] = {} if table is None else table
        self.nodes = 0

    def negamax(self, depth: int, alpha: int, beta: int, ply: int, p: int) -> int:
        """Value for ``p`` (to move) searching ``depth`` more plies; ``ply`` plies below the root."""
        self.nodes += 1
        if not self.nodes & 255:
            check_stop()  # a server's deadline or cancel (ttt.players.stop)
        pos = self.pos
        if pos.winning_cells(p):
            return WIN - (ply + 1)
        threats = pos.winning_cells(-p)
        if len(threats) >= 2:  # two open wins for the opponent: one can be blocked, not both
            return -(WIN - (ply + 2))
        if pos.num_moves == pos.num_cells:
            return 0
        if depth == 0:
            return p * pos.score
        best_move = -1
        entry = self.table.get(pos.hash)
        if entry is not None:
            e_depth, flag, value, best_move = entry
            if e_depth >= depth:
                value = _from_table(value, ply)
                if flag == 0:
                    return value
                if flag > 0:
                    alpha = max(alpha, value)
                else:
                    beta = min(beta, value)
                if alpha >= beta:
                    return value
        alpha0 = alpha  # the window actually searched decides the bound stored below
        if threats:  # forced: block the single open win (no move of ours wins at once)
            moves = list(threats)
        else:
            moves = _ordered(pos, p, best_move)
        best = -INF
        for m in moves:
            pos.place(m, p)  # cannot win: winning cells were handled above
            v = -self.negamax(depth - 1, -beta, -alpha, ply + 1, -p)
            pos.remove(m, p)
            if v > best:
                best, best_move = v, m
            alpha = max(alpha, v)
            if alpha >= beta:
                break
        flag = 1 if best >= beta else (-1 if best <= alpha0 else 0)  # lower bound / upper bound / exact
        self.table[pos.hash] = (depth, flag, _to_table(best, ply), best_move)
        return best

    def root(self, p: int, depth: int, all_exact: bool) -> dict[int, int]:
        """Score of every legal move. Moves that are not best may get only an upper bound, unless
        ``all_exact``; the best moves always get their exact score (ties stay ties)."""
        pos = self.pos
        moves = _ordered(pos, p, -1)
        values: dict[int, int] = {}
        best = -INF
        for m in moves:
            if pos.place(m, p):
                v = WIN - 1
            else:
                alpha = -INF if all_exact else best - 1  # integer scores: a tie is still exact
                v = -self.negamax(depth - 1, -INF, -alpha, 1, -p)
            pos.remove(m, p)
            values[m] = v
            best = max(best, v)
        return values


def _to_table(value: int, ply: int) -> int:
    # forced-win scores are stored relative to the node, so they can be reused at another ply
    if value > MATE:
        return value + ply
    if value < -MATE:
        return value - ply
    return value


def _from_table(value: int, ply: int) -> int:
    if value > MATE:
        return value - ply
    if value < -MATE:
        return value + ply
    return value


def _ordered(pos: _Position, p: int, first: int) -> list[int]:
    """Legal moves, the transposition table's best first, then by heuristic gain (wins, blocks, centre)."""
    moves = pos.legal()
    moves.sort(key=lambda c: -pos.gain(c, p))
    if first in moves:
        moves.remove(first)
        moves.insert(0, first)
    return moves


def _choose(values: dict[int, int], rng: np.random.Generator) -> int:
    best = max(values.values())
    ties = sorted(m for m, v in values.items() if v == best)
    return int(ties[rng.integers(len(ties))])


def _outcome(value: int) -> float:
    """A search score as a value in [-1, 1]: +-1 for forced wins/losses, the heuristic squashed otherwise."""
    if value > MATE:
        return 1.0
    if value < -MATE:
        return -1.0
    return float(np.tanh(value / 64.0)) * 0.99


class AlphaBetaPlayer(Player):
    """Depth-limited negamax with alpha-beta, a transposition table and a line-count heuristic.

    ``depth`` counts plies including the move being chosen (``None``: to the end of the game, exact).
    At the search horizon a side that can win at once, or that faces two open wins of the opponent,
    is scored as winning or losing, beyond any heuristic. The heuristic sums, over the lines that
    only one player occupies, 4^(pieces - 1) for the player to move and minus that for the other.
    Equal best moves are broken at random.
    """

    name = "alphabeta"

    def __init__(self, game: Game, depth: int | None = 3) -> None:
        super().__init__(game)
        if depth is not None and depth < 1:
            raise ValueError(f"alphabeta depth must be >= 1 or None, got {depth}")
        self.depth = depth
        self.nodes = 0  # nodes searched by the last call, for speed measurements

    def move_scores(self, state: State, all_exact: bool = True) -> dict[int, int]:
        """Searched score of each legal move (``WIN - d``: a forced win in d plies, else the heuristic).

        With ``all_exact=False`` moves worse than the best may get only an upper bound (faster).
        """
        if state.is_terminal():
            raise ValueError(f"{self.game.name}: no move to choose in a finished game")
        depth = self.game.num_cells - state.num_moves if self.depth is None else self.depth
        searcher = _Searcher(_Position(self.game, state))
        values = searcher.root(state.to_play(), depth, all_exact)
        self.nodes = searcher.nodes
        return values

    def act(self, state: State, rng: np.random.Generator) -> int:
        return _choose(self.move_scores(state, all_exact=False), rng)

    def action_values(self, state: State) -> dict[int, float]:
        """Every legal move's searched value in [-1, 1] from the mover's view (+-1: forced win/loss)."""
        return {m: _outcome(v) for m, v in self.move_scores(state).items()}

    def __repr__(self) -> str:
        return f"AlphaBetaPlayer({self.game.name}, depth={self.depth})"


# ---------------------------------------------------------------------------- perfect play
PERFECT_BOARDS = boards_with("perfect")  # ttt.games.boards
# exact full-depth searches share one transposition table per board: its entries hold for any window
_EXACT_TABLES: dict[str, dict] = {}
_EXACT_TABLE_LIMIT = 2_000_000  # entries; the table is emptied beyond this to bound memory


def table_score(value: int, mover: int, num_moves: int, cells: int) -> int:
    """A solved table's value (``ttt.games.solved``: first player's view) as a search score for
    ``mover`` in a position after ``num_moves`` moves: ``WIN - d`` a win in d plies, 0 a draw."""
    winner, end_ply = decode(value, cells)
    if winner == 0:
        return 0
    return (WIN - (end_ply - num_moves)) * winner * mover


class PerfectPlayer(Player):
    """A game-theoretically best move; among wins the fastest, among losses the slowest.

    3x3 and 4x4 read the exact table of every position (``ttt.games.solved``: retrograde analysis up
    to symmetry, under a second for 4x4, cached on disk). 3x3x3 (a first-player win, short games)
    runs an exact full-depth alpha-beta search per move that shares one transposition table per
    board. Ties are broken at random. Qubic and Score Four raise ValueError: beyond exact search.
    """

    name = "perfect"

    def __init__(self, game: Game) -> None:
        super().__init__(game)
        if game.name not in PERFECT_BOARDS:
            raise ValueError(f"perfect play is available on {', '.join(PERFECT_BOARDS)} only, not {game.name} "
                             f"(solving it does not fit a minute of pure Python); use the alphabeta player")
        self.table = solved_table(game) if game.num_cells <= SOLVABLE_CELLS else None

    def move_scores(self, state: State, all_exact: bool = True) -> dict[int, int]:
        """Exact score of each legal move: ``WIN - d`` a win in d plies, ``-(WIN - d)`` a loss, 0 a draw.

        With ``all_exact=False`` (searched boards) moves worse than the best may get only an upper bound.
        """
        if state.is_terminal():
            raise ValueError(f"{self.game.name}: no move to choose in a finished game")
        if self.table is None:
            table = _EXACT_TABLES.setdefault(self.game.name, {})
            if len(table) > _EXACT_TABLE_LIMIT:
                table.clear()
            searcher = _Searcher(_Position(self.game, state), table)
            return searcher.root(state.to_play(), self.game.num_cells - state.num_moves, all_exact)
        mover, cells = state.to_play(), self.game.num_cells
        return {m: table_score(v, mover, state.num_moves, cells) for m, v in self.table.move_values(state).items()}

    def act(self, state: State, rng: np.random.Generator) -> int:
        return _choose(self.move_scores(state, all_exact=False), rng)

    def action_values(self, state: State) -> dict[int, float]:
        """Every legal move's game-theoretic outcome for the mover: +1 win, 0 draw, -1 loss."""
        return {m: float(np.sign(v)) for m, v in self.move_scores(state).items()}

