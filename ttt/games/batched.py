"""The batched engine: B games of one board held as numpy arrays and stepped together."""

from __future__ import annotations

import numpy as np

from ttt.games.rules import FIRST, Game, IllegalMoveError, State


class BatchedGames:
    """B games of one board at once.

    Arrays (all length B in the first axis):
      ``board`` (B, cells) int8: +1 first player, -1 second, 0 empty;
      ``to_play`` (B,) int8; ``done`` (B,) bool; ``winner`` (B,) int8 (+1, -1, 0 draw or not over);
      ``num_moves`` (B,) int16; ``last_action`` (B,) int64 (-1 before the first move).
    ``step`` applies one action per unfinished game; finished games ignore their entry.
    """

    def __init__(self, game: Game, batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.game = game
        self.batch_size = batch_size
        c = game.num_cells
        self.board = np.zeros((batch_size, c), dtype=np.int8)
        self.to_play = np.full(batch_size, FIRST, dtype=np.int8)
        self.done = np.zeros(batch_size, dtype=bool)
        self.winner = np.zeros(batch_size, dtype=np.int8)
        self.num_moves = np.zeros(batch_size, dtype=np.int16)
        self.last_action = np.full(batch_size, -1, dtype=np.int64)
        # lines through each cell, padded with a line index whose cells can never all match
        deg = max(len(x) for x in game.cell_lines)
        self._cell_lines = np.full((c, deg), len(game.lines), dtype=np.int64)
        for cell, ls in enumerate(game.cell_lines):
            self._cell_lines[cell, : len(ls)] = ls
        # padded line: its cells are one real cell, and a wrong-length sum can never reach k
        self._lines = np.concatenate([game.lines, np.zeros((1, game.line_length), dtype=np.int64)])
        self._line_weight = np.ones(len(self._lines), dtype=np.int64)
        self._line_weight[-1] = 0
        self._gravity = game.gravity
        # with gravity the cell below c is c - layer (axis 0 is the layer), so support is a slice
        self._layer = game.n ** (game.d - 1) if game.gravity else 0
        # bitboards: the lines through each cell as uint64 masks, padded with an all-ones mask that no
        # player can fill; a move wins when the mover's pieces cover one of its masks
        self._use_bits = c <= 64
        if self._use_bits:
            line_masks = np.array([sum(1 << int(x) for x in line) for line in game.lines] + [2**64 - 1],
                                  dtype=np.uint64)
            self._cell_masks = line_masks[self._cell_lines]  # (cells, deg)
            self._packed_bytes = (c + 7) // 8

    def __len__(self) -> int:
        return self.batch_size

    # ------------------------------------------------------------------ views
    def legal_mask(self) -> np.ndarray:
        """(B, cells) bool: legal moves; all False for finished games."""
        legal = self.board == 0
        if self._gravity:
            lay = self._layer
            legal[:, lay:] &= self.board[:, :-lay] != 0  # supported by the piece below
        legal &= ~self.done[:, None]
        return legal

    def observation(self) -> np.ndarray:
        """(B, cells) float32 board seen from the player to move: +1 own, -1 opponent, 0 empty."""
        return (self.board * self.to_play[:, None]).astype(np.float32)

    def afterstates(self) -> tuple[np.ndarray, np.ndarray]:
        """Every legal afterstate, seen from the player who just moved (+1 own, -1 opponent).

        Returns ``(obs, legal)``: obs (B, cells, cells) float32, where ``obs[b, a]`` is the board of
        game b after its player to move plays a; rows of illegal moves are the unchanged board.
        """
        legal = self.legal_mask()
        obs = np.repeat(self.observation()[:, None, :], self.game.num_cells, axis=1)
        cells = np.arange(self.game.num_cells)
        obs[:, cells, cells] += legal
        return obs, legal

    def state(self, i: int) -> State:
        """Game ``i`` as a single-game State."""
        return State(self.game, tuple(int(x) for x in self.board[i]), int(self.to_play[i]),
                     int(self.winner[i]), int(self.num_moves[i]), int(self.last_action[i]))

    @classmethod
    def from_states(cls, states: list[State]) -> BatchedGames:
        """A batch holding copies of ``states`` (all of one board)."""
        games = cls(states[0].game, len(states))
        for i, state in enumerate(states):
            games.set_state(i, state)
        return games

    def set_state(self, i: int, state: State) -> None:
        """Overwrite game ``i`` with ``state``."""
        self.board[i] = state.board
        self.to_play[i] = state.to_play()
        self.winner[i] = state.winner()
        self.done[i] = state.is_terminal()
        self.num_moves[i] = state.num_moves
        self.last_action[i] = state.last_action

    # ------------------------------------------------------------------ transitions
    def step(self, actions: np.ndarray) -> np.ndarray:
        """Play ``actions[i]`` in every unfinished game i. Returns the games that ended on this step.

        Raises IllegalMoveError (and changes nothing) if any unfinished game gets an illegal action.
        """
        actions = np.asarray(actions)
        if actions.shape != (self.batch_size,) or not np.issubdtype(actions.dtype, np.integer):
            raise IllegalMoveError(f"{self.game.name}: need {self.batch_size} integer actions, "
                                   f"got shape {actions.shape} dtype {actions.dtype}")
        live = np.flatnonzero(~self.done)
        # every game live (the common case): slices instead of fancy indexing
        rows = slice(None) if len(live) == self.batch_size else live
        a = actions[rows].astype(np.int64)
        c = self.game.num_cells
        bad = (a < 0) | (a >= c)
        if not bad.any():
            # cheap check of just the chosen cells, not the whole legal mask
            bad = self.board[live, a] != 0
            if self._gravity:
                lay = self._layer
                up = a >= lay
                bad[up] |= self.board[live[up], a[up] - lay] == 0
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            i = int(live[j])
            self.state(i).check_action(int(a[j]))  # raises with the reason
            raise IllegalMoveError(f"action {int(a[j])} on {self.game.name}: illegal in game {i}")
        p = self.to_play[rows]
        self.board[live, a] = p
        self.num_moves[rows] += 1
        self.last_action[rows] = a
        # only lines through the new piece can have been completed
        if self._use_bits:
            mine = self.board[rows] == p[:, None]
            packed = np.zeros((len(live), 8), dtype=np.uint8)
            packed[:, : self._packed_bytes] = np.packbits(mine, axis=1, bitorder="little")
            bits = packed.view("<u8")  # (m, 1): bit c set when the mover holds cell c
            masks = self._cell_masks[a]  # (m, deg)
            won = ((bits & masks) == masks).any(1)
        else:
            li = self._cell_lines[a]  # (m, deg)
            cells = self._lines[li]  # (m, deg, k)
            vals = self.board[live[:, None, None], cells].astype(np.int16).sum(-1) * self._line_weight[li]
            won = (vals == self.game.line_length * p[:, None].astype(np.int16)).any(1)
        ended = won | (self.num_moves[rows] == c)
        self.winner[live[won]] = p[won]
        self.done[live[ended]] = True
        self.to_play[rows] = -p
        return live[ended]

    def reset(self, mask: np.ndarray | None = None) -> None:
        """Start new games in the rows where ``mask`` is True (all rows when None)."""
        idx = slice(None) if mask is None else np.array(mask, dtype=bool)  # a copy: mask may be self.done
        self.board[idx] = 0
        self.to_play[idx] = FIRST
        self.done[idx] = False
        self.winner[idx] = 0
        self.num_moves[idx] = 0
        self.last_action[idx] = -1


def random_legal_actions(legal: np.ndarray, rng: np.random.Generator, rounds: int = 8) -> np.ndarray:
    """One uniformly random legal action per row of a (B, cells) mask (-1 where none is legal).

    Rejection sampling: draw a uniform cell per row and redraw the rows where it is illegal, for a
    few ``rounds``; rows still without a move (few legal cells) take the argmax of uniform scores
    over their legal cells. Both steps are uniform over the legal cells, so the mixture is too, and
    it draws far fewer random numbers than one score per cell.
    """
    b, c = legal.shape
    actions = rng.integers(0, c, size=b)
    todo = np.flatnonzero(~legal[np.arange(b), actions])
    for _ in range(rounds):
        if len(todo) == 0:
            return actions
        actions[todo] = rng.integers(0, c, size=len(todo))
        todo = todo[~legal[todo, actions[todo]]]
    if len(todo):
        rest = legal[todo]
        # legal cells score in [1, 2), illegal ones in [0, 1): the argmax is a uniform legal cell
        scores = rng.random(rest.shape, dtype=np.float32)
        scores += rest
        pick = scores.argmax(1)
        pick[~rest.any(1)] = -1
        actions[todo] = pick
    return actions
