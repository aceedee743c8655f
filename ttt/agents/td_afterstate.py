"""Tabular TD learning of afterstate values in self-play:
``python -m ttt.train +experiment=td_333_shaped`` (also ``td_33_boltzmann``, ``td_44_boltzmann``).

An afterstate is the board just after a move; its value is for the player who made that move. The
table is a dict keyed by the afterstate's canonical key (``Game.canonical_key``: the smallest ternary
hash over the board's full symmetry group), so symmetric afterstates share one entry. Unseen
afterstates are worth ``init_value``. ``learners: 1`` keeps one table for both seats; ``learners: 2``
keeps one per seat (a checkpoint with two still loads as one player that reads the table of the seat
it is in).

Move choice (over the legal afterstates of the mover's table):
``exploration: epsilon``: epsilon-greedy, epsilon = 1 - (1 - exp_rate) * progress (progress = games
played / games), so 1.0 at the start and ``exp_rate`` at the end;
``exploration: boltzmann``: P(move) proportional to exp(V / tau), tau going geometrically from
``tau_start`` to ``tau_end`` over training.

Updates, for each seat over the afterstates it created in the game (s_1 .. s_T):
``update: backward``: at a reward r, walk back from the latest afterstate:
V(s) <- V(s) + lr * (gamma * r - V(s)), then r <- V(s) (the episodic rule of many tic-tac-toe tutorials);
``update: td0``: after each move V(s_{t-1}) <- V(s_{t-1}) + lr * (gamma * V(s_t) - V(s_{t-1})), and at a
reward r the latest afterstate moves toward r: V(s_T) <- V(s_T) + lr * (r - V(s_T)).

Rewards (``rewards``): ``plain``: win +1, loss -1, draw 0 at the end. ``shaped``: win 1, loss -0.1,
draw 0.5 for the first player and 1 for the second at the end, plus rewards given at the move: 0.8
for the first player's opening move in the centre (the middle cell; the 2^d middle cells on even
boards) and 0.8 for a move that blocks a line where the opponent would win next move. Each reward is
applied when it happens, by the update rule above.

Logged scalars (besides ``eval/``): ``train/epsilon`` (0 under Boltzmann exploration), ``train/tau``
(Boltzmann only), ``train/episodes_per_sec``, ``train/first_win_rate`` (self-play games since the last log),
``train/states`` (table entries, all learners), ``train/table_megabytes``, and
``train/opening_value/cell_<c>``: the first-seat table's value of each distinct opening move
(``c`` is the smallest cell of its symmetry class; 3x3: 0 corner, 1 edge, 4 centre; ``ttt.games.opening_name``
names them). ``python -m ttt.plot DIR figure=openings`` draws them over training.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from functools import cache

import numpy as np

from ttt.agents.tabular import (
    BoardKeys,
    TablePlayer,
    arrays_to_dict,
    boltzmann_index,
    check_board,
    dict_nbytes,
    dict_to_arrays,
    geometric_schedule,
    greedy_index,
    peak_rss_mb,
    piece_digit,
    progress_epsilon,
)
from ttt.checkpoint import save_checkpoint
from ttt.config import POSITIVE, UNIT, Range, agent_settings, check_choice, check_ranges
from ttt.games import FIRST, Game, State, make_game
from ttt.games.threats import blocks_line


@dataclass
class Config:
    """Settings of ``configs/agent/td_afterstate.yaml`` (the one home of each default; checked by Hydra at
    composition)."""

    name: str = "td_afterstate"
    learners: int = 1  # 1: one table for both seats; 2: one table per seat
    # backward: V += lr * (gamma * r - V), r <- V, back through the game; td0: V(s) += lr * (gamma * V(s') - V(s))
    update: str = "backward"  # backward | td0
    lr: float = 0.3
    gamma: float = 0.9
    exploration: str = "epsilon"  # epsilon: 1 - (1 - exp_rate) * progress; boltzmann: P ~ exp(V / tau)
    exp_rate: float = 0.3  # epsilon at the end of training (1.0 at the start)
    tau_start: float = 1.0  # Boltzmann temperature at the start, geometric ...
    tau_end: float = 0.05  # ... and at the end
    rewards: str = "plain"  # plain: +1 / -1 / 0; shaped: see the module docstring
    init_value: float = 0.0  # value of an afterstate not seen yet (td_333_shaped: 0.2)

    def __post_init__(self) -> None:
        """Fail early, naming the key, on a setting the loop would not understand."""
        for key, allowed in (("update", ("backward", "td0")), ("exploration", ("epsilon", "boltzmann")),
                             ("rewards", ("plain", "shaped")), ("learners", (1, 2))):
            check_choice("agent.", self, key, allowed)
        check_ranges("agent.", self, {"lr": Range(0, 1, low_open=True), "gamma": UNIT, "exp_rate": UNIT,
                                      "tau_start": POSITIVE, "tau_end": POSITIVE})


# ---------------------------------------------------------------------- rewards
@cache
def centre_cells(game: Game) -> frozenset[int]:
    """The middle cell (odd n) or the 2^d middle cells (even n)."""
    mid = {(game.n - 1) // 2, game.n // 2}
    return frozenset(int(c) for c in range(game.num_cells) if all(int(x) in mid for x in game.coords[c]))


def move_reward(game: Game, state: State, action: int, settings: Config) -> float:
    """The shaped reward of playing ``action`` in ``state`` (0 with plain rewards)."""
    if settings.rewards != "shaped":
        return 0.0
    mover = state.to_play()
    if state.num_moves == 0 and mover == FIRST and action in centre_cells(game):
        return 0.8
    if blocks_line(game, state.board, action, mover):
        return 0.8
    return 0.0


def final_reward(winner: int, seat_player: int, settings: Config) -> float:
    """The end-of-game reward of the player ``seat_player`` (+1 first, -1 second)."""
    if settings.rewards == "plain":
        return float(winner * seat_player)
    if winner == 0:
        return 0.5 if seat_player == FIRST else 1.0
    return 1.0 if winner == seat_player else -0.1


# ---------------------------------------------------------------------- learning
class AfterstateLearner:
    """The afterstates one seat created in the current game, and the update rule over them."""

    def __init__(self, table: dict[int, float], settings: Config) -> None:
        self.table = table
        self.visited: list[int] = []
        self.backward = settings.update == "backward"
        self.lr, self.gamma, self.init = settings.lr, settings.gamma, settings.init_value

    def moved(self, key: int) -> None:
        """The seat created afterstate ``key``."""
        if not self.backward and self.visited:
            prev, t = self.visited[-1], self.table
            v = t.get(prev, self.init)
            t[prev] = v + self.lr * (self.gamma * t.get(key, self.init) - v)
        self.visited.append(key)

    def reward(self, r: float) -> None:
        """A reward now, for the latest afterstate (and, backward, the ones before it)."""
        t, init, lr = self.table, self.init, self.lr
        if self.backward:
            for key in reversed(self.visited):
                v = t.get(key, init)
                v += lr * (self.gamma * r - v)
                t[key] = v
                r = v
        elif self.visited:
            key = self.visited[-1]
            v = t.get(key, init)
            t[key] = v + lr * (r - v)

    def end(self, r: float) -> None:
        """The game is over with reward ``r`` for this seat."""
        if self.visited:
            self.reward(r)
        self.visited = []


def seat_learners(tables: list[dict[int, float]], settings: Config) -> list[AfterstateLearner]:
    """One learner per seat (first, second); with one table both write to it."""
    return [AfterstateLearner(tables[0], settings), AfterstateLearner(tables[-1], settings)]


def record_move(game: Game, learners: list[AfterstateLearner], state: State, action: int, key: int,
                settings: Config) -> None:
    """Tell the mover's learner about its new afterstate ``key`` and any shaped reward of the move."""
    learner = learners[0 if state.to_play() == FIRST else 1]
    learner.moved(key)
    r = move_reward(game, state, action, settings)
    if r:
        learner.reward(r)


def finish_game(learners: list[AfterstateLearner], winner: int, settings: Config) -> None:
    learners[0].end(final_reward(winner, FIRST, settings))
    learners[1].end(final_reward(winner, -FIRST, settings))


class TDPlayer(TablePlayer):
    """Greedy over afterstate values, reading the table of the seat it is in.

    ``learn_from_game`` keeps learning from games it plays (both seats' moves, with its settings);
    ``save`` writes a checkpoint ``ttt.agents.load_player`` reads back.
    """

    def __init__(self, game: Game, tables: list[dict[int, float]], settings: Config, epsilon: float = 0.0,
                 meta: dict | None = None) -> None:
        super().__init__(game, epsilon)
        self.tables, self.settings = tables, settings
        self.keys = BoardKeys(game)
        self.meta = dict(meta or {})

    def table(self, to_play: int) -> dict[int, float]:
        return self.tables[0 if to_play == FIRST else -1]  # as seat_learners: one table serves both seats

    def move_values(self, board: np.ndarray, to_play: int, legal: np.ndarray) -> np.ndarray:
        keys = self.keys.afterstate_keys(self.keys.images(board), to_play, legal)
        table, init = self.table(to_play), self.settings.init_value
        out = np.zeros(self.game.num_cells)
        out[legal] = [table.get(k, init) for k in keys.tolist()]
        return out

    def learn_from_game(self, states: list[State]) -> bool:
        learners = seat_learners(self.tables, self.settings)
        for state, nxt in zip(states[:-1], states[1:], strict=True):
            record_move(self.game, learners, state, nxt.last_action, self.keys.key(nxt.array()), self.settings)
        finish_game(learners, states[-1].winner(), self.settings)
        return True

    def checkpoint(self) -> dict:
        payload = {"kind": "td_afterstate", "game": self.game.name, "learners": len(self.tables),
                   "settings": asdict(self.settings), **self.meta}
        for i, table in enumerate(self.tables):
            payload[f"keys_{i}"], payload[f"values_{i}"] = dict_to_arrays(table)
        return payload

    def save(self, path) -> None:
        save_checkpoint(path, self.checkpoint())


def opening_classes(game: Game, keys: BoardKeys) -> dict[int, int]:
    """Distinct opening moves: {smallest cell of the class: canonical key of its afterstate}."""
    opening = keys.afterstate_keys(np.zeros(len(game.symmetries), dtype=np.int64), FIRST, np.arange(game.num_cells))
    out: dict[int, int] = {}
    for cell, key in enumerate(opening.tolist()):
        if key not in out.values():
            out[cell] = key
    return out


def play_episode(game: Game, keys: BoardKeys, learners: list[AfterstateLearner], settings: Config, epsilon: float,
                 tau: float, rng: np.random.Generator) -> int:
    """One self-play game with learning; returns the winner."""
    state = game.initial_state()
    images = np.zeros(len(game.symmetries), dtype=np.int64)
    boltzmann = settings.exploration == "boltzmann"
    while not state.is_terminal():
        mover = state.to_play()
        legal = state.legal_actions()
        after = keys.afterstate_keys(images, mover, legal).tolist()
        table, init = learners[0 if mover == FIRST else 1].table, settings.init_value
        if boltzmann:
            i = boltzmann_index(np.array([table.get(k, init) for k in after]), tau, rng)
        elif rng.random() < epsilon:
            i = int(rng.integers(len(legal)))
        else:
            i = greedy_index(np.array([table.get(k, init) for k in after]), rng)
        action = legal[i]
        record_move(game, learners, state, action, after[i], settings)
        state = state.apply(action)
        images = images + piece_digit(mover) * keys.weights[action]
    finish_game(learners, state.winner(), settings)
    return state.winner()


def check(cfg, game: Game) -> None:
    """Refuse settings or a board this learner cannot use, before any work (``ttt.harness.learners.check_learner``)."""
    check_board(game, "td_afterstate")
    agent_settings(cfg.agent, Config)


def train(cfg, run) -> dict:
    """Self-play TD learning of afterstate values for ``cfg.episodes`` games on the schedule of ``run``."""
    game = run.game
    settings = agent_settings(cfg.agent, Config)
    rng = np.random.default_rng(int(cfg.seed))
    rss0 = peak_rss_mb()
    keys = BoardKeys(game)
    tables: list[dict[int, float]] = [{} for _ in range(settings.learners)]
    start = 0
    path = run.checkpoint_path(".npz")
    if run.resumed is not None:
        payload = run.resumed
        tables = [arrays_to_dict(payload[f"keys_{i}"], payload[f"values_{i}"]) for i in range(settings.learners)]
        start = int(payload["episode"])
        rng = np.random.default_rng([int(cfg.seed), start])  # a fresh stream for the continuation
    learners = seat_learners(tables, settings)
    player = TDPlayer(game, tables, settings)
    openings = opening_classes(game, keys)

    def greedy() -> TDPlayer:
        return player

    def save(episode: int) -> None:
        player.meta = {"episode": episode, "config": run.config_dict()}
        player.save(path)

    episodes = int(cfg.episodes)
    outcomes = np.zeros(3, dtype=np.int64)  # first-player wins, draws, second-player wins since the last log
    eps = tau = 0.0

    def log(done: int) -> str:
        run.log("train/epsilon", 0.0 if settings.exploration == "boltzmann" else eps, done)
        if settings.exploration == "boltzmann":
            run.log("train/tau", tau, done)
        for cell, key in openings.items():
            run.log(f"train/opening_value/cell_{cell}", tables[0].get(key, settings.init_value), done)
        run.log("train/first_win_rate", outcomes[0] / max(outcomes.sum(), 1), done)
        states = sum(len(t) for t in tables)
        run.log("train/states", states, done)
        outcomes[:] = 0
        return (f"{'tau' if settings.exploration == 'boltzmann' else 'eps'} "
                f"{tau if settings.exploration == 'boltzmann' else eps:.3f} states {states}")

    t0 = time.perf_counter()
    run.start(start, greedy)
    for ep in range(start, episodes):
        progress = ep / episodes
        eps = progress_epsilon(settings.exp_rate, progress)
        tau = geometric_schedule(settings.tau_start, settings.tau_end, progress)
        winner = play_episode(game, keys, learners, settings, eps, tau, rng)
        outcomes[1 - winner] += 1
        run.tick(ep + 1, greedy, save, log)
    seconds = time.perf_counter() - t0
    results = run.finish(greedy, episodes, save)
    table_mb = sum(dict_nbytes(t) for t in tables) / 2**20
    run.log("train/table_megabytes", table_mb, episodes)
    extra = {"states": [len(t) for t in tables],
             "opening_values": {f"cell_{c}": round(tables[0].get(k, settings.init_value), 4)
                                for c, k in openings.items()},
             "train_seconds": round(seconds, 2),
             "episodes_per_sec": round((episodes - start) / max(seconds, 1e-9), 1),
             "table_megabytes": round(table_mb, 2), "peak_rss_megabytes": round(peak_rss_mb(), 1),
             "rss_growth_megabytes": round(peak_rss_mb() - rss0, 1)}
    return run.write_final(results, extra)


def player_from_checkpoint(payload: dict) -> TDPlayer:
    """The greedy player of a ``td_afterstate`` checkpoint (one table per seat, or one shared)."""
    game = make_game(payload["game"])
    tables = [arrays_to_dict(payload[f"keys_{i}"], payload[f"values_{i}"]) for i in range(int(payload["learners"]))]
    meta = {k: payload[k] for k in ("episode", "config") if k in payload}
    return TDPlayer(game, tables, agent_settings(payload["settings"], Config), meta=meta)
