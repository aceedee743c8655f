"""Tabular Q-learning in self-play with one table for both players:
``python -m ttt.train +experiment=qlearn_33`` (or ``qlearn_44``).

Q(s, a) is the value of playing ``a`` in ``s`` for the FIRST player (+1 first player wins, -1 the
second wins, 0 draw), so one table serves both seats through the min-max switch: the value of the
next position s' is the max over its legal actions when the first player is to move there, the min
when the second player is. Illegal actions never enter the max or min. Update:

    Q(s, a) <- Q(s, a) + alpha * (target - Q(s, a)),
    target = winner                                       if s' ends the game
           = gamma * max_a' Q(s', a')  (first to move)    otherwise
           = gamma * min_a' Q(s', a')  (second to move)
    alpha  = alpha0 / (1 + count(s, a) * adapt_rate)      count: earlier updates of (s, a)

Both seats choose epsilon-greedily from the same table (the first player maximises Q, the second
minimises it). Exploration schedules: ``exponential`` (epsilon = eps0 * exp(-kappa * episode)) or
``step`` (epsilon = eps0 * step_factor ** (episode // step_every)).

Storage (``storage: auto``): a dense table indexed by the ternary hash when it holds at most
``dense_limit_mb`` (3x3: 3^9 rows x 9 actions), else a sparse store holding only visited states
(4x4: a dense table would be 3^16 x 16 float64, about 5.5 GB). With ``symmetric: true`` a state is
stored once per symmetry class: the row of its canonical image (``Game.canonical_key``), its actions
mapped through the symmetry that produced the image (4x4: 32 symmetries).

Logged scalars (besides ``eval/``): ``train/epsilon``, ``train/episodes_per_sec``, ``train/td_loss``
(mean squared TD error of the updates since the last log), ``train/states`` (rows updated at least
once), ``train/table_megabytes`` (memory held by the table).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ttt.agents.tabular import (
    BoardKeys,
    DenseRows,
    SparseRows,
    TablePlayer,
    check_board,
    exponential_epsilon,
    greedy_index,
    peak_rss_mb,
    piece_digit,
    step_epsilon,
)
from ttt.checkpoint import save_checkpoint
from ttt.config import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, UNIT, Range, agent_settings, check_choice, check_ranges
from ttt.games import FIRST, Game, State, make_game


@dataclass
class Config:
    """Settings of ``configs/agent/q_learning.yaml`` (the one home of each default; checked by Hydra at
    composition)."""

    name: str = "q_learning"
    alpha0: float = 0.5  # learning rate of an unvisited (state, action)
    adapt_rate: float = 0.05  # alpha = alpha0 / (1 + count * adapt_rate)
    gamma: float = 0.9  # discount: prefers quicker wins and later losses
    # exponential: eps0 * exp(-kappa * episode); step: eps0 * step_factor ** (episode // step_every)
    epsilon_schedule: str = "exponential"  # exponential | step
    eps0: float = 1.0
    kappa: float = 5e-5  # exponential decay rate per episode
    step_factor: float = 0.9  # step decay: epsilon *= step_factor every step_every episodes
    step_every: int = 10000
    storage: str = "auto"  # auto: dense (indexed by the ternary hash) where it fits in dense_limit_mb, else sparse
    symmetric: bool = False  # one row per symmetry class of states (Game.canonical_key), actions mapped
    dense_limit_mb: float = 64.0  # auto: dense when the table fits in this

    def __post_init__(self) -> None:
        """Fail early, naming the key, on values the schema's types cannot rule out."""
        check_choice("agent.", self, "epsilon_schedule", ("exponential", "step"))
        check_choice("agent.", self, "storage", ("auto", "dense", "sparse"))
        check_ranges("agent.", self, {"alpha0": Range(0, 1, low_open=True), "adapt_rate": NON_NEGATIVE, "gamma": UNIT,
                                      "eps0": UNIT, "kappa": NON_NEGATIVE, "step_factor": Range(0, 1, low_open=True),
                                      "step_every": AT_LEAST_ONE, "dense_limit_mb": POSITIVE})


def epsilon_at(settings, episode: int) -> float:
    """The exploration rate of ``episode`` under the configured schedule."""
    if settings.epsilon_schedule == "exponential":
        return exponential_epsilon(settings.eps0, settings.kappa, episode)
    if settings.epsilon_schedule == "step":
        return step_epsilon(settings.eps0, settings.step_factor, settings.step_every, episode)
    raise ValueError(f"q_learning: epsilon_schedule must be 'exponential' or 'step', got {settings.epsilon_schedule!r}")


def make_store(game: Game, storage: str = "auto", dense_limit_mb: float = 64.0) -> DenseRows | SparseRows:
    """A dense table indexed by the ternary hash, or a sparse store of visited states."""
    check_board(game, "q_learning")
    rows = 3**game.num_cells
    if storage == "auto":
        storage = "dense" if rows * game.num_cells * 12 <= dense_limit_mb * 2**20 else "sparse"
    if storage == "dense":
        return DenseRows(rows, game.num_cells)
    if storage == "sparse":
        return SparseRows(game.num_cells, dtype=np.float32)  # half the memory; Q needs no more precision
    raise ValueError(f"q_learning: storage must be 'auto', 'dense' or 'sparse', got {storage!r}")


def next_value(store, next_state: State, next_key: int, next_cols: np.ndarray, gamma: float) -> float:
    """The bootstrap target from ``next_state``: its winner if over, else gamma times the max (first
    player to move) or min (second player to move) of Q over its legal actions only. ``next_cols``
    maps actions to the columns of the state's row (the identity without symmetry keys)."""
    if next_state.is_terminal():
        return float(next_state.winner())
    q = store.get(next_key)[next_cols[next_state.legal_actions()]]
    return gamma * float(q.max() if next_state.to_play() == FIRST else q.min())


def q_update(store, key: int, col: int, target: float, alpha0: float, adapt_rate: float) -> float:
    """Move Q(key, col) toward ``target`` with alpha = alpha0 / (1 + count * adapt_rate); returns the TD error."""
    r = store.row(key)
    count = int(store.counts[r, col])
    q = float(store.values[r, col])
    delta = target - q
    store.values[r, col] = q + alpha0 / (1.0 + count * adapt_rate) * delta
    store.counts[r, col] = count + 1
    return delta


class QPlayer(TablePlayer):
    """Greedy on the shared Q table: the first player takes the largest Q, the second the smallest.

    ``learn_from_game`` keeps updating the table from games it plays (``ttt.play learn=true``).
    """

    def __init__(self, game: Game, store, gamma: float = 0.9, alpha0: float = 0.5, adapt_rate: float = 0.05,
                 symmetric: bool = False, epsilon: float = 0.0, meta: dict | None = None) -> None:
        super().__init__(game, epsilon)
        self.store, self.gamma, self.alpha0, self.adapt_rate = store, gamma, alpha0, adapt_rate
        self.symmetric = symmetric
        self.keys = BoardKeys(game, symmetric)
        self.meta = dict(meta or {})

    def move_values(self, board: np.ndarray, to_play: int, legal: np.ndarray) -> np.ndarray:
        key, cols = self.keys.locate(self.keys.images(board))
        return self.store.get(key)[cols] * to_play

    def learn_from_game(self, states: list[State]) -> bool:
        located = [self.keys.locate(self.keys.images(s.array())) for s in states]
        for i in range(len(states) - 1):
            (key, cols), (next_key, next_cols) = located[i], located[i + 1]
            target = next_value(self.store, states[i + 1], next_key, next_cols, self.gamma)
            q_update(self.store, key, int(cols[states[i + 1].last_action]), target, self.alpha0, self.adapt_rate)
        return True

    def checkpoint(self) -> dict:
        keys, q, counts = self.store.to_arrays()
        return {"kind": "q_learning", "game": self.game.name, "keys": keys, "q": q, "counts": counts,
                "gamma": self.gamma, "alpha0": self.alpha0, "adapt_rate": self.adapt_rate,
                "symmetric": self.symmetric, **self.meta}

    def save(self, path) -> None:
        save_checkpoint(path, self.checkpoint())


def play_episode(game: Game, keys: BoardKeys, store, epsilon: float, settings,
                 rng: np.random.Generator) -> tuple[float, int]:
    """One self-play game, updating after every move; returns (sum of squared TD errors, moves)."""
    state = game.initial_state()
    images = np.zeros(keys.weights.shape[1], dtype=np.int64)  # the empty board's image hashes
    key, cols = keys.locate(images)
    sq = 0.0
    moves = 0
    while not state.is_terminal():
        legal = state.legal_actions()
        mover = state.to_play()
        if rng.random() < epsilon:
            action = legal[rng.integers(len(legal))]
        else:
            action = legal[greedy_index(store.get(key)[cols[legal]] * mover, rng)]
        nxt = state.apply(action)
        images = images + piece_digit(mover) * keys.weights[action]  # one digit changes in every image
        next_key, next_cols = keys.locate(images)
        target = next_value(store, nxt, next_key, next_cols, settings.gamma)
        delta = q_update(store, key, int(cols[action]), target, settings.alpha0, settings.adapt_rate)
        sq += delta * delta
        moves += 1
        state, key, cols = nxt, next_key, next_cols
    return sq, moves


def check(cfg, game: Game) -> None:
    """Refuse settings or a board this learner cannot use, before any work (``ttt.harness.learners.check_learner``)."""
    check_board(game, "q_learning")
    agent_settings(cfg.agent, Config)


def train(cfg, run) -> dict:
    """Self-play Q-learning for ``cfg.episodes`` games on the schedule of ``run``."""
    game = run.game
    settings = agent_settings(cfg.agent, Config)
    rng = np.random.default_rng(int(cfg.seed))
    rss0 = peak_rss_mb()
    store = make_store(game, settings.storage, settings.dense_limit_mb)
    start = 0
    path = run.checkpoint_path(".npz")
    if run.resumed is not None:
        payload = run.resumed
        store.load_arrays(payload["keys"], payload["q"], payload["counts"])
        start = int(payload["episode"])
        rng = np.random.default_rng([int(cfg.seed), start])  # a fresh stream for the continuation
    player = QPlayer(game, store, settings.gamma, settings.alpha0, settings.adapt_rate, settings.symmetric)

    def greedy() -> QPlayer:
        return player

    def save(episode: int) -> None:
        player.meta = {"episode": episode, "config": run.config_dict()}
        player.save(path)

    episodes = int(cfg.episodes)
    sq_sum, updates = 0.0, 0
    eps = epsilon_at(settings, start)

    def log(done: int) -> str:
        nonlocal sq_sum, updates
        states = len(store)  # a dense table counts its rows: slower than an episode, so only here
        run.log("train/epsilon", eps, done)
        run.log("train/td_loss", sq_sum / max(updates, 1), done)
        run.log("train/states", states, done)
        run.log("train/table_megabytes", store.nbytes() / 2**20, done)
        sq_sum, updates = 0.0, 0
        return f"eps {eps:.3f} states {states}"

    t0 = time.perf_counter()
    run.start(start, greedy)
    for ep in range(start, episodes):
        eps = epsilon_at(settings, ep)
        sq, moves = play_episode(game, player.keys, store, eps, settings, rng)
        sq_sum, updates = sq_sum + sq, updates + moves
        run.tick(ep + 1, greedy, save, log)
    seconds = time.perf_counter() - t0
    results = run.finish(greedy, episodes, save)
    extra = {"states": len(store), "storage": type(store).__name__, "final_epsilon": eps,
             "train_seconds": round(seconds, 2),
             "episodes_per_sec": round((episodes - start) / max(seconds, 1e-9), 1),
             "table_megabytes": round(store.nbytes() / 2**20, 2),
             "peak_rss_megabytes": round(peak_rss_mb(), 1), "rss_growth_megabytes": round(peak_rss_mb() - rss0, 1)}
    return run.write_final(results, extra)


def player_from_checkpoint(payload: dict) -> QPlayer:
    """The greedy player of a ``q_learning`` checkpoint (it can keep learning and be saved)."""
    game = make_game(payload["game"])
    store = make_store(game)
    store.load_arrays(payload["keys"], payload["q"], payload["counts"])
    meta = {k: payload[k] for k in ("episode", "config") if k in payload}
    return QPlayer(game, store, float(payload["gamma"]), float(payload["alpha0"]), float(payload["adapt_rate"]),
                   bool(payload.get("symmetric", False)), meta=meta)
