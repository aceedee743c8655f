"""The batched engine: B games of one board held as arrays (numpy, or torch on a device) and stepped together."""

from __future__ import annotations

import numpy as np

from ttt.games.arrays import NUMPY, arrays_for, arrays_of
from ttt.games.rules import FIRST, Game, IllegalMoveError, State


class BatchedGames:
    """B games of one board at once, as numpy arrays (``device=None``) or torch tensors on ``device``.

    Arrays (all length B in the first axis):
      ``board`` (B, cells) int8: +1 first player, -1 second, 0 empty;
      ``to_play`` (B,) int8; ``done`` (B,) bool; ``winner`` (B,) int8 (+1, -1, 0 draw or not over);
      ``num_moves`` (B,) int16; ``last_action`` (B,) int64 (-1 before the first move).
    ``play`` applies one action per unfinished game; finished games ignore their entry. The rules
    below are written once against ``ttt.games.arrays`` and run unchanged on either kind of array.
    """

    def __init__(self, game: Game, batch_size: int, device=None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        xp = arrays_for(device)
        self.xp = xp
        self.device = xp.device
        self.game = game
        self.batch_size = batch_size
        c = game.num_cells
        self.board = xp.zeros((batch_size, c), "int8")
        self.to_play = xp.full(batch_size, FIRST, "int8")
        self.done = xp.zeros(batch_size, "bool")
        self.winner = xp.zeros(batch_size, "int8")
        self.num_moves = xp.zeros(batch_size, "int16")
        self.last_action = xp.full(batch_size, -1, "int64")
        self._rows = xp.arange(batch_size)
        self._gravity = game.gravity
        # with gravity the cell below c is c - layer (axis 0 is the layer), so support is a slice
        self._layer = game.n ** (game.d - 1) if game.gravity else 0
        # bitboards (numpy, boards up to 64 cells): the lines through each cell as uint64 masks, padded
        # with an all-ones mask no player can fill; a move wins when the mover's pieces cover one of its
        # masks. Elsewhere (torch, larger boards) the cells of the lines through the move are gathered
        # and summed: on a GPU that reads 28 cells per Qubic game where packing reads 64.
        self._use_bits = c <= 64 and not xp.is_torch
        tables = _line_tables(game)
        if self._use_bits:
            self._cell_masks = tables["cell_masks"]  # (cells, deg)
            self._packed_bytes = (c + 7) // 8
        else:
            self._cell_lines = xp.asarray(tables["cell_lines"])
            self._lines = xp.asarray(tables["lines"])
            self._line_weight = xp.asarray(tables["line_weight"])

    def __len__(self) -> int:
        return self.batch_size

    # ------------------------------------------------------------------ views
    def legal_mask(self):
        """(B, cells) bool: legal moves; all False for finished games."""
        legal = self.board == 0
        if self._gravity:
            lay = self._layer
            legal[:, lay:] &= self.board[:, :-lay] != 0  # supported by the piece below
        legal &= ~self.done[:, None]
        return legal

    def observation(self):
        """(B, cells) float32 board seen from the player to move: +1 own, -1 opponent, 0 empty."""
        return self.xp.astype(self.board * self.to_play[:, None], "float32")

    def afterstates(self):
        """Every legal afterstate, seen from the player who just moved (+1 own, -1 opponent).

        Returns ``(obs, legal)``: obs (B, cells, cells) float32, where ``obs[b, a]`` is the board of
        game b after its player to move plays a; rows of illegal moves are the unchanged board.
        """
        xp, c = self.xp, self.game.num_cells
        legal = self.legal_mask()
        obs = self.observation()[:, None, :] + xp.zeros((1, c, 1), "float32")
        cells = xp.arange(c)
        obs[:, cells, cells] += legal
        return obs, legal

    def state(self, i: int) -> State:
        """Game ``i`` as a single-game State."""
        np_ = self.xp.numpy
        return State(self.game, tuple(int(x) for x in np_(self.board[i])), int(self.to_play[i]),
                     int(self.winner[i]), int(self.num_moves[i]), int(self.last_action[i]))

    @classmethod
    def from_states(cls, states: list[State], device=None) -> BatchedGames:
        """A batch holding copies of ``states`` (all of one board)."""
        games = cls(states[0].game, len(states), device)
        for i, state in enumerate(states):
            games.set_state(i, state)
        return games

    def set_state(self, i: int, state: State) -> None:
        """Overwrite game ``i`` with ``state``."""
        self.board[i] = self.xp.asarray(state.board, "int8")
        self.to_play[i] = state.to_play()
        self.winner[i] = state.winner()
        self.done[i] = state.is_terminal()
        self.num_moves[i] = state.num_moves
        self.last_action[i] = state.last_action

    # ------------------------------------------------------------------ transitions
    def play(self, actions, check: bool = True):
        """Play ``actions[i]`` in every unfinished game i; returns the (B,) bool mask of the games that
        ended on this move. Raises IllegalMoveError (and changes nothing) if any unfinished game gets an
        illegal action.

        With ``check=False`` the actions are trusted (they come from a legal mask): on a GPU that
        saves the host reading back whether any was illegal, so nothing waits for the device.
        """
        xp, c = self.xp, self.game.num_cells
        actions = xp.asarray(actions)
        if tuple(actions.shape) != (self.batch_size,) or not xp.is_integer(actions):
            raise IllegalMoveError(f"{self.game.name}: need {self.batch_size} integer actions, "
                                   f"got shape {tuple(actions.shape)} dtype {actions.dtype}")
        live = ~self.done
        a = xp.where(live, xp.astype(actions, "int64"), 0)  # a finished game's entry is ignored
        rows = self._rows
        if check:
            self._raise_if_illegal(a, (a < 0) | (a >= c))
        cur = self.board[rows, a]
        if check:
            bad = live & (cur != 0)
            if self._gravity:
                lay = self._layer
                up = a >= lay
                bad |= live & up & (self.board[rows, xp.where(up, a - lay, 0)] == 0)  # nothing below
            self._raise_if_illegal(a, bad)
        p = self.to_play
        self.board[rows, a] = xp.where(live, p, cur)
        self.num_moves += live
        xp.put_where(self.last_action, live, a)
        # only lines through the new piece can have been completed
        if self._use_bits:
            mine = self.board == p[:, None]
            packed = np.zeros((self.batch_size, 8), dtype=np.uint8)
            packed[:, : self._packed_bytes] = np.packbits(mine, axis=1, bitorder="little")
            bits = packed.view("<u8")  # (B, 1): bit c set when the mover holds cell c
            masks = self._cell_masks[a]  # (B, deg)
            won = ((bits & masks) == masks).any(1)
        else:
            li = self._cell_lines[a]  # (B, deg)
            cells = self._lines[li]  # (B, deg, k)
            vals = xp.astype(self.board[rows[:, None, None], cells], "int16").sum(-1) * self._line_weight[li]
            won = (vals == self.game.line_length * p[:, None]).any(1)
        won &= live
        ended = won | (live & (self.num_moves == c))
        xp.put_where(self.winner, won, p)
        self.done |= ended
        xp.put_where(self.to_play, live, -p)
        return ended

    def _raise_if_illegal(self, a, bad) -> None:
        if bool(bad.any()):
            i = int(self.xp.flatnonzero(bad)[0])
            action = int(a[i])
            self.state(i).check_action(action)  # raises with the reason
            raise IllegalMoveError(f"action {action} on {self.game.name}: illegal in game {i}")

    def reset(self, mask=None) -> None:
        """Start new games in the rows where ``mask`` is True (all rows when None)."""
        xp = self.xp
        if mask is None:
            rows, fill = slice(None), NUMPY.fill_rows  # x[:] = value, for either kind of array
        else:
            rows, fill = xp.copy(xp.asarray(mask, "bool")), xp.fill_rows  # a copy: mask may be self.done
        for name, value in (("board", 0), ("to_play", FIRST), ("done", False), ("winner", 0), ("num_moves", 0),
                            ("last_action", -1)):
            fill(getattr(self, name), rows, value)


def _line_tables(game: Game) -> dict[str, np.ndarray]:
    """The engine's tables of ``game``, computed once per board: the lines through each cell (padded
    with a line index whose cells can never all match) and, up to 64 cells, their bitboard masks."""
    if game in _TABLES:
        return _TABLES[game]
    c = game.num_cells
    deg = max(len(x) for x in game.cell_lines)
    cell_lines = np.full((c, deg), len(game.lines), dtype=np.int64)
    for cell, ls in enumerate(game.cell_lines):
        cell_lines[cell, : len(ls)] = ls
    # padded line: its cells are one real cell, and a wrong-length sum can never reach k
    lines = np.concatenate([game.lines, np.zeros((1, game.line_length), dtype=np.int64)])
    line_weight = np.ones(len(lines), dtype=np.int64)
    line_weight[-1] = 0
    tables = {"cell_lines": cell_lines, "lines": lines, "line_weight": line_weight}
    if c <= 64:
        line_masks = np.array([sum(1 << int(x) for x in line) for line in game.lines] + [2**64 - 1],
                              dtype=np.uint64)
        tables["cell_masks"] = line_masks[cell_lines]
    _TABLES[game] = tables
    return tables


_TABLES: dict[Game, dict[str, np.ndarray]] = {}


def random_legal_actions(legal, rng, rounds: int = 8):
    """One uniformly random legal action per row of a (B, cells) mask (-1 where none is legal).

    numpy: rejection sampling. Draw a uniform cell per row and redraw the rows where it is illegal,
    for a few ``rounds``; rows still without a move (few legal cells) take ``uniform_legal_choice``.
    Both steps are uniform over the legal cells, so the mixture is too, and it draws far fewer random
    numbers than one score per cell. torch (``rng`` a ``torch.Generator``): ``uniform_legal_choice``
    on every row at once, which needs no host decision about which rows to redraw.
    """
    xp = arrays_of(legal)
    if xp.is_torch:
        return uniform_legal_choice(legal, xp.random(rng, tuple(legal.shape)))
    b, c = legal.shape
    actions = rng.integers(0, c, size=b)
    todo = np.flatnonzero(~legal[np.arange(b), actions])
    for _ in range(rounds):
        if len(todo) == 0:
            return actions
        actions[todo] = rng.integers(0, c, size=len(todo))
        todo = todo[~legal[todo, actions[todo]]]
    if len(todo):
        actions[todo] = uniform_legal_choice(legal[todo], rng.random((len(todo), c), dtype=np.float32))
    return actions


def uniform_legal_choice(legal, scores):
    """The legal cell of each row with the largest uniform ``score`` in [0, 1) (-1 where none is legal).

    Legal cells score in [1, 2) and illegal ones in [0, 1), so the argmax is a uniform legal cell.
    ``scores`` is overwritten.
    """
    xp = arrays_of(legal)
    scores += legal
    pick = scores.argmax(1)
    return xp.where(legal.any(1), pick, -1)
