"""What the tabular learners share: position keys, exploration schedules, greedy choice, a sparse
row store, table <-> array conversion for ``.npz`` checkpoints, and a greedy table player.

Keys come from the engine's definitions: the ternary hash (``Game.ternary_hash``: cell ``c`` holds
digit 0 empty, 1 first player, 2 second player, weighted ``3**c``) and the symmetry group
(``Game.symmetries``). ``BoardKeys`` only rearranges them so that a key can be updated move by move
instead of recomputed from the whole board (the tests check it against ``Game.canonical_key``).
"""

from __future__ import annotations

import math
import resource
import sys

import numpy as np

from ttt.games import BatchedGames, Game, State, random_legal_actions
from ttt.players.base import BatchPlayer

MAX_CELLS = 39  # 3**cells must fit in an int64 key


def check_board(game: Game, learner: str) -> None:
    """Tabular learners key positions by 64-bit ternary hashes: boards up to 39 cells."""
    if game.num_cells > MAX_CELLS:
        raise ValueError(f"{learner}: board {game.name} has {game.num_cells} cells; tabular learners "
                         f"support boards of at most {MAX_CELLS} cells (3x3, 4x4, 3x3x3)")


def piece_digit(player: int) -> int:
    """The ternary digit of a piece: 1 for the first player (+1), 2 for the second (-1)."""
    return player % 3


class BoardKeys:
    """Ternary hashes of a board and of all its symmetric images, updated one move at a time.

    ``weights[c, g]`` is what a first-player piece on cell ``c`` adds to the ternary hash of the
    board's image under symmetry ``g`` (image ``g`` puts cell ``symmetries[g, i]`` at position i),
    so the hashes of all images are ``digits @ weights`` and a move adds one row. The canonical key
    of a board is the smallest of its image hashes, exactly ``Game.canonical_key``.
    """

    def __init__(self, game: Game, symmetric: bool = True) -> None:
        check_board(game, "BoardKeys")
        self.game = game
        sym = game.symmetries if symmetric else game.symmetries[:1]  # row 0 is the identity
        # inverse[g, a]: where image g puts cell a, i.e. the column of action a in a canonical row
        self.inverse = np.argsort(sym, axis=1)
        g_idx = np.repeat(np.arange(len(sym)), game.num_cells)
        self.weights = np.zeros((game.num_cells, len(sym)), dtype=np.int64)
        self.weights[sym.ravel(), g_idx] = np.tile(3 ** np.arange(game.num_cells, dtype=np.int64), len(sym))

    def images(self, board: np.ndarray) -> np.ndarray:
        """(G,) ternary hashes of every symmetric image of ``board`` (+1/-1/0 cells)."""
        return (np.asarray(board, dtype=np.int64) % 3) @ self.weights

    def afterstate_keys(self, images: np.ndarray, player: int, actions) -> np.ndarray:
        """Canonical keys of the boards after ``player`` plays each of ``actions``."""
        return (images + piece_digit(player) * self.weights[actions]).min(axis=1)

    def key(self, board: np.ndarray) -> int:
        """The canonical key of one board."""
        return int(self.images(board).min())

    def locate(self, images: np.ndarray) -> tuple[int, np.ndarray]:
        """(canonical key, column of each action in the canonical row) of a board's image hashes."""
        g = int(images.argmin())
        return int(images[g]), self.inverse[g]


# ---------------------------------------------------------------------- exploration schedules
def exponential_epsilon(eps0: float, kappa: float, episode: int) -> float:
    """epsilon = eps0 * exp(-kappa * episode)."""
    return eps0 * math.exp(-kappa * episode)


def step_epsilon(eps0: float, factor: float, every: int, episode: int) -> float:
    """epsilon = eps0 * factor ** (episode // every): multiplied by ``factor`` every ``every`` episodes."""
    return eps0 * factor ** (episode // every)


def progress_epsilon(exp_rate: float, progress: float) -> float:
    """epsilon = 1 - (1 - exp_rate) * progress: 1.0 at the start, ``exp_rate`` at the end."""
    return 1.0 - (1.0 - exp_rate) * min(max(progress, 0.0), 1.0)


def geometric_schedule(start: float, end: float, progress: float) -> float:
    """``start`` at progress 0, ``end`` at 1, geometric in between (for Boltzmann temperatures)."""
    return start * (end / start) ** min(max(progress, 0.0), 1.0)


# ---------------------------------------------------------------------- move choice
def greedy_index(values: np.ndarray, rng: np.random.Generator) -> int:
    """Index of the largest value, ties broken uniformly at random."""
    best = np.flatnonzero(values == values.max())
    return int(best[0]) if len(best) == 1 else int(best[rng.integers(len(best))])


def boltzmann_index(values: np.ndarray, tau: float, rng: np.random.Generator) -> int:
    """Index drawn with probability proportional to exp(value / tau)."""
    z = np.exp((values - values.max()) / tau)
    return int(np.searchsorted(np.cumsum(z), rng.random() * z.sum(), side="right").clip(0, len(z) - 1))


# ---------------------------------------------------------------------- storage
class SparseRows:
    """Rows of ``width`` numbers for the keys seen so far: a dict key -> row into growing arrays.

    Holds only visited states, so a 4x4 Q table needs memory for the states play reaches rather
    than all 3^16 boards. ``get`` of an unseen key returns a shared zero row (never written).
    """

    def __init__(self, width: int, dtype=np.float64, count_dtype=np.uint32, capacity: int = 1024) -> None:
        self.index: dict[int, int] = {}
        self.values = np.zeros((capacity, width), dtype=dtype)
        self.counts = np.zeros((capacity, width), dtype=count_dtype)
        self._zero = np.zeros(width, dtype=dtype)

    def __len__(self) -> int:
        return len(self.index)

    def row(self, key: int) -> int:
        """The row of ``key``, created (zeros) if new."""
        r = self.index.get(key)
        if r is None:
            r = len(self.index)
            if r == len(self.values):  # grow by half: doubling would leave up to half the rows unused
                extra = len(self.values) // 2 + 1
                self.values = np.concatenate([self.values, np.zeros((extra, self.values.shape[1]), self.values.dtype)])
                self.counts = np.concatenate([self.counts, np.zeros((extra, self.counts.shape[1]), self.counts.dtype)])
            self.index[key] = r
        return r

    def get(self, key: int) -> np.ndarray:
        """The values of ``key`` (a zero row if unseen; do not write to it)."""
        r = self.index.get(key)
        return self._zero if r is None else self.values[r]

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, values, counts) of the stored rows, in insertion order."""
        n = len(self.index)
        return (np.fromiter(self.index.keys(), dtype=np.int64, count=n), self.values[:n].copy(),
                self.counts[:n].copy())

    def load_arrays(self, keys: np.ndarray, values: np.ndarray, counts: np.ndarray) -> None:
        """Replace the contents with ``to_arrays``' output."""
        cap = max(len(keys), 1024)
        self.values = np.zeros((cap, values.shape[1]), dtype=self.values.dtype)
        self.counts = np.zeros((cap, values.shape[1]), dtype=self.counts.dtype)
        self.values[: len(keys)] = values
        self.counts[: len(keys)] = counts
        self.index = {int(k): i for i, k in enumerate(keys.tolist())}

    def nbytes(self) -> int:
        """Bytes held: the arrays (allocated capacity), the dict and its key and row objects."""
        objs = sum(sys.getsizeof(k) + sys.getsizeof(r) for k, r in self.index.items())
        return self.values.nbytes + self.counts.nbytes + sys.getsizeof(self.index) + objs


class DenseRows:
    """The same interface as ``SparseRows`` over a dense table with one row per possible key
    (``size`` rows): the key is the row."""

    def __init__(self, size: int, width: int, dtype=np.float64, count_dtype=np.uint32) -> None:
        self.values = np.zeros((size, width), dtype=dtype)
        self.counts = np.zeros((size, width), dtype=count_dtype)

    def __len__(self) -> int:
        """Rows updated at least once."""
        return int(self.counts.any(axis=1).sum())

    def row(self, key: int) -> int:
        return key

    def get(self, key: int) -> np.ndarray:
        return self.values[key]

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, values, counts) of the rows updated at least once."""
        keys = np.flatnonzero(self.counts.any(axis=1)).astype(np.int64)
        return keys, self.values[keys], self.counts[keys]

    def load_arrays(self, keys: np.ndarray, values: np.ndarray, counts: np.ndarray) -> None:
        self.values[keys] = values
        self.counts[keys] = counts

    def nbytes(self) -> int:
        return self.values.nbytes + self.counts.nbytes


def dict_to_arrays(table: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """A {key: value} table as (int64 keys, float64 values) for an ``.npz`` checkpoint."""
    return (np.fromiter(table.keys(), dtype=np.int64, count=len(table)),
            np.fromiter(table.values(), dtype=np.float64, count=len(table)))


def arrays_to_dict(keys: np.ndarray, values: np.ndarray) -> dict[int, float]:
    """The inverse of ``dict_to_arrays``."""
    return dict(zip(keys.tolist(), values.tolist(), strict=True))


def dict_nbytes(table: dict) -> int:
    """Bytes held by a {int: float} dict, its keys and values."""
    return sys.getsizeof(table) + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in table.items())


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------- players
class TablePlayer(BatchPlayer):
    """A player that reads a table: greedy over ``move_values`` (ties at random), or
    epsilon-greedy when ``epsilon`` > 0. Subclasses implement ``move_values``."""

    def __init__(self, game: Game, epsilon: float = 0.0) -> None:
        super().__init__(game)
        self.epsilon = float(epsilon)

    def move_values(self, board: np.ndarray, to_play: int, legal: np.ndarray) -> np.ndarray:
        """(cells,) values of each move from the mover's view (+1 good for the mover); only the
        entries of ``legal`` (int array of cells) are read."""
        raise NotImplementedError

    def action_values(self, state: State) -> dict[int, float]:
        legal = np.array(state.legal_actions(), dtype=np.int64)
        v = self.move_values(state.array(), state.to_play(), legal)
        return {int(a): float(v[a]) for a in legal}

    def greedy_values(self, state: State) -> dict[int, float] | None:
        """The table's values when the player is greedy (ties at random); None when it explores."""
        return self.action_values(state) if self.epsilon == 0 else None

    def act_batch(self, games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        legal = games.legal_mask()
        values = np.full(legal.shape, -np.inf)
        for i in np.flatnonzero(~games.done):
            cells = np.flatnonzero(legal[i])
            values[i, cells] = self.move_values(games.board[i], int(games.to_play[i]), cells)[cells]
        best = legal & (values == values.max(axis=1, keepdims=True))
        actions = random_legal_actions(best, rng)
        if self.epsilon > 0:
            explore = rng.random(len(games)) < self.epsilon
            actions = np.where(explore, random_legal_actions(legal, rng), actions)
        return actions
