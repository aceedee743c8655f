"""Exact values of every reachable position of a small board, by retrograde analysis up to symmetry.

Positions are enumerated ply by ply from the empty board, one per symmetry class: a position is
keyed by ``Game.canonical_key`` (the smallest ternary hash among its images under ``Game.symmetries``).
A child's key comes from its parent's image hashes plus the new piece's weight in each image, so no
board is ever canonicalised from scratch. Values are then backed up from the last ply to the first,
the first player maximising and the second minimising, which solves the game in one pass.

A value says who wins and when, from the first player's view::

    value = winner * (cells + 1 - end_ply)     (0 for a draw)

where ``end_ply`` is the ply of the final move when both sides play best: the winner as fast as it
can, the loser as slowly as it can. Larger is better for the first player, so max and min back it up
directly, and one int8 holds it.

4x4 (32 symmetries) has 9.7 million positions but only the classes are kept; ``solved_table`` caches
each board's table on disk on first use (``$TTT_CACHE_DIR``, else ``$XDG_CACHE_HOME/ttt``, else
``~/.cache/ttt``) as an ``.npz`` checkpoint, and in memory for the process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ttt.games.rules import FIRST, Game

SOLVABLE_CELLS = 16  # boards up to 4x4; 3x3x3 has 27 cells and far too many classes for this table
TABLE_KIND = "solved_table"
_TABLES: dict[str, SolvedTable] = {}


@dataclass(frozen=True)
class SolvedTable:
    """Every reachable position's exact value (see the module docstring), by canonical key."""

    game: Game
    keys: np.ndarray  # (N,) int64, sorted canonical keys
    values: np.ndarray  # (N,) int8, value from the first player's view
    seconds: float = 0.0  # time the solve took (0 when read from the cache)

    def value(self, board) -> int:
        """The value of a reachable position given as a board of +1/-1/0."""
        key = self.game.canonical_key(np.asarray(board))
        i = int(np.searchsorted(self.keys, key))
        if i == len(self.keys) or self.keys[i] != key:
            raise KeyError(f"{self.game.name}: position not reachable from the empty board")
        return int(self.values[i])

    def move_values(self, state) -> dict[int, int]:
        """The value of the position after each legal move of ``state`` (a ttt ``State``), in one
        vectorised look-up: the children's keys come from the image hashes of ``state``'s board."""
        moves = np.array(state.legal_actions(), dtype=np.int64)
        weights = image_weights(self.game)
        images = (np.asarray(state.board, dtype=np.int64) % 3) @ weights
        keys = (images + (state.to_play() % 3) * weights[moves]).min(axis=1)
        idx = np.searchsorted(self.keys, keys).clip(0, len(self.keys) - 1)
        if not np.array_equal(self.keys[idx], keys):
            raise KeyError(f"{self.game.name}: position not reachable from the empty board")
        return dict(zip(moves.tolist(), self.values[idx].tolist(), strict=True))

    def child_values(self, digits: np.ndarray, mover: int, legal: np.ndarray) -> np.ndarray:
        """(N, cells) int8: the value of the position after each move of N positions at once, given
        as ternary digits (0 empty, 1 first player, 2 second; ``mover`` to play); 0 where ``legal``
        is False. The batched form of ``move_values``."""
        weights = image_weights(self.game)
        out = np.zeros(legal.shape, dtype=np.int8)
        for start in range(0, len(out), 1 << 16):  # blocks: the images of 2 million 4x4 positions are 0.5 GB
            block = slice(start, start + (1 << 16))
            images = np.asarray(digits[block], dtype=np.int64) @ weights  # (rows, symmetries)
            for c in range(self.game.num_cells):
                rows = np.flatnonzero(legal[block, c])
                keys = (images[rows] + (mover % 3) * weights[c]).min(axis=1)
                idx = np.searchsorted(self.keys, keys).clip(0, len(self.keys) - 1)
                if not np.array_equal(self.keys[idx], keys):
                    raise KeyError(f"{self.game.name}: position not reachable from the empty board")
                out[start + rows, c] = self.values[idx]
        return out

    def outcome(self, board) -> tuple[int, int]:
        """(winner under best play: +1, -1 or 0; ply of the final move, or the full board for a draw)."""
        return decode(self.value(board), self.game.num_cells)

    def __len__(self) -> int:
        return len(self.keys)


# positions as ternary digits of base-3 hashes (value iteration and exact best responses enumerate them)
def digits_of(game: Game, hashes: np.ndarray) -> np.ndarray:
    """(N, cells) ternary digits of each hash: 0 empty, 1 first player, 2 second player."""
    powers = 3 ** np.arange(game.num_cells, dtype=np.int64)
    return ((hashes[:, None] // powers) % 3).astype(np.int8)


def winners_of(game: Game, digits: np.ndarray) -> np.ndarray:
    """(N,) int8 winner of each position: +1, -1 or 0, from the engine's lines."""
    winner = np.zeros(len(digits), dtype=np.int8)
    for line in game.lines:
        cells = digits[:, line]
        first = (cells == 1).all(axis=1)
        second = (cells == 2).all(axis=1)
        winner[first] = 1
        winner[second] = -1
    return winner


def legal_cells(game: Game, digits: np.ndarray, cell: int) -> np.ndarray:
    """(N,) bool: ``cell`` is a legal move in each position (empty, and supported with gravity)."""
    ok = digits[:, cell] == 0
    below = game.below[cell]
    if below >= 0:
        ok &= digits[:, below] != 0
    return ok


def decode(value: int, cells: int) -> tuple[int, int]:
    """(winner, end ply) of an encoded value; a draw ends when the board is full."""
    if value == 0:
        return 0, cells
    return (1 if value > 0 else -1), cells + 1 - abs(value)


def encode(winner: int, end_ply: int, cells: int) -> int:
    """The value of a game that ends at ``end_ply`` with ``winner`` (0: draw)."""
    return winner * (cells + 1 - end_ply)


@functools.cache
def image_weights(game: Game) -> np.ndarray:
    """(cells, symmetries) int64: what a first-player piece on each cell adds to the ternary hash of
    each symmetric image of the board (image g puts cell ``symmetries[g, i]`` at position i; a
    second-player piece adds twice as much). A board's canonical key is ``min(digits @ weights)``."""
    sym = game.symmetries
    weights = np.zeros((game.num_cells, len(sym)), dtype=np.int64)
    weights[sym, np.arange(len(sym))[:, None]] = 3 ** np.arange(game.num_cells, dtype=np.int64)[None, :]
    weights.setflags(write=False)
    return weights


def _check_solvable(game: Game) -> None:
    if game.num_cells > SOLVABLE_CELLS:
        raise ValueError(f"{game.name}: exact tables are built for boards of at most {SOLVABLE_CELLS} cells "
                         f"(3x3, 4x4), not {game.num_cells}")


def solve_table(game: Game) -> SolvedTable:
    """Enumerate the symmetry classes of reachable positions and back their values up (no cache)."""
    _check_solvable(game)
    t0 = time.perf_counter()
    cells, k = game.num_cells, game.line_length
    powers = 3 ** np.arange(cells, dtype=np.int64)
    weights = image_weights(game)
    incidence = game.incidence.astype(np.int64)
    below = game.below

    level_keys: list[np.ndarray] = []
    level_children: list[np.ndarray] = []  # (N, cells) child keys, -1 where the move is not legal
    level_terminal: list[np.ndarray] = []
    level_winner: list[np.ndarray] = []
    keys = np.zeros(1, dtype=np.int64)
    for ply in range(cells + 1):
        digits = (keys[:, None] // powers) % 3
        winner = np.zeros(len(keys), dtype=np.int8)
        winner[((digits == 1).astype(np.int64) @ incidence == k).any(axis=1)] = FIRST
        winner[((digits == 2).astype(np.int64) @ incidence == k).any(axis=1)] = -FIRST
        terminal = (winner != 0) | (ply == cells)
        children = np.full((len(keys), cells), -1, dtype=np.int64)
        level_keys.append(keys)
        level_terminal.append(terminal)
        level_winner.append(winner)
        level_children.append(children)
        if terminal.all():
            break
        digit = 1 if ply % 2 == 0 else 2
        live = np.flatnonzero(~terminal)
        images = digits[live] @ weights  # (live, G) hashes of every image
        for c in range(cells):
            ok = digits[live, c] == 0
            if below[c] >= 0:
                ok &= digits[live, below[c]] != 0
            rows = live[ok]
            children[rows, c] = (images[ok] + digit * weights[c]).min(axis=1)
        keys = np.unique(children[children >= 0])

    values = [np.zeros(0, dtype=np.int8)] * len(level_keys)
    for ply in range(len(level_keys) - 1, -1, -1):
        v = np.array([encode(int(w), ply, cells) for w in (-1, 0, 1)], dtype=np.int8)[level_winner[ply] + 1]
        live = np.flatnonzero(~level_terminal[ply])
        if len(live):
            child_keys, child_values = level_keys[ply + 1], values[ply + 1]
            ch = level_children[ply][live]
            legal = ch >= 0
            idx = np.searchsorted(child_keys, np.where(legal, ch, 0)).clip(0, len(child_keys) - 1)
            cv = child_values[idx].astype(np.int16)
            if ply % 2 == 0:  # first player to move: maximise
                v[live] = np.where(legal, cv, -128).max(axis=1)
            else:
                v[live] = np.where(legal, cv, 127).min(axis=1)
        values[ply] = v
    all_keys = np.concatenate(level_keys)
    all_values = np.concatenate(values)
    order = np.argsort(all_keys, kind="stable")
    return SolvedTable(game, all_keys[order], all_values[order], time.perf_counter() - t0)


def cache_dir() -> Path:
    """Where solved tables are cached: ``$TTT_CACHE_DIR``, else ``$XDG_CACHE_HOME/ttt``, else ``~/.cache/ttt``."""
    if os.environ.get("TTT_CACHE_DIR"):
        return Path(os.environ["TTT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ttt"


def _fingerprint(game: Game) -> str:
    """Changes whenever the board's lines, symmetries or gravity change (then a cached table is stale)."""
    h = hashlib.sha256()
    for part in (game.lines, game.symmetries, game.below):
        h.update(np.ascontiguousarray(part, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def solved_table(game: Game) -> SolvedTable:
    """The exact table of ``game``: from memory, else from the disk cache, else solved and cached."""
    if game.name in _TABLES:
        return _TABLES[game.name]
    from ttt.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

    _check_solvable(game)
    path = cache_dir() / f"{TABLE_KIND}_{game.name}.npz"
    table = None
    if path.is_file():
        try:
            payload = load_checkpoint(path, kind=TABLE_KIND, game=game.name)
            if payload.get("fingerprint") == _fingerprint(game):
                table = SolvedTable(game, payload["keys"].astype(np.int64), payload["values"].astype(np.int8))
        except (CheckpointError, KeyError):
            table = None  # unreadable or stale: solve again and overwrite
    if table is None:
        table = solve_table(game)
        try:
            save_checkpoint(path, {"kind": TABLE_KIND, "game": game.name, "fingerprint": _fingerprint(game),
                                   "keys": table.keys, "values": table.values})
        except OSError:
            pass  # a read-only cache folder costs a re-solve next time, nothing else
    _TABLES[game.name] = table
    return table
