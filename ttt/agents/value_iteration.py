"""Minimax value iteration over every reachable position: ``python -m ttt.train +experiment=vi_33``.

Positions are keyed by their ternary hash (``Game.ternary_hash``) and enumerated ply by ply from
the empty board with numpy (a level is a sorted array of hashes; a child's hash is its parent's plus
the mover's digit times ``3**cell``). The value of a position is +1 when the first player wins with
best play, -1 when the second does, 0 for a draw: the first player maximises over its children, the
second minimises, a finished game is worth its winner. Sweeps repeat until no value changes.

* ``in_place: false`` (default): synchronous sweeps, each reads the previous sweep's values, so
  information travels one ply per sweep (textbook value iteration).
* ``in_place: true``: each sweep updates the last ply first and reads the fresh values, so one sweep
  solves the game and a second confirms it (for 4x4, where a sweep costs seconds).

Logged scalars (besides the ``eval/`` tags of ``ttt.harness.training``):
``train/changed_positions`` (values changed by each sweep), ``train/positions`` (reachable
positions), ``train/positions_per_sec`` (position updates per second of the sweep),
``train/start_value`` (value of the empty board after each sweep). There are no episodes and no
exploration, so ``train/episodes_per_sec`` and ``train/epsilon`` are not logged.

After solving, the greedy policy plays itself (``selfplay_games``) greedily and epsilon-greedily;
the results go to ``final_eval.json`` under ``selfplay``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ttt.agents.tabular import TablePlayer, check_board, peak_rss_mb, piece_digit
from ttt.checkpoint import save_checkpoint
from ttt.config import NON_NEGATIVE, UNIT, agent_settings, check_ranges
from ttt.evaluation.evaluate import play_match
from ttt.games import FIRST, Game, State, make_game
from ttt.games.solved import digits_of, legal_cells, winners_of
from ttt.players import Player


@dataclass
class Config:
    """Settings of ``configs/agent/value_iteration.yaml`` (the one home of each default; checked by Hydra at
    composition)."""

    name: str = "value_iteration"
    in_place: bool = False  # update the last ply first, reading fresh values: one solving sweep + one check
    # (see module docstring)
    selfplay_games: int = 1000  # games of the solved policy against itself, per mode
    selfplay_epsilon: float = 0.1  # exploration rate of the epsilon-greedy self-play games

    def __post_init__(self) -> None:
        """Fail early, naming the key, on values the schema's types cannot rule out."""
        check_ranges("agent.", self, {"selfplay_games": NON_NEGATIVE, "selfplay_epsilon": UNIT})


@dataclass
class Level:
    """All reachable positions after ``ply`` moves: sorted hashes, and the value of each."""

    ply: int
    hashes: np.ndarray  # (N,) int64, sorted
    terminal: np.ndarray  # (N,) bool
    values: np.ndarray  # (N,) int8: the winner on terminal positions, the current estimate elsewhere


def enumerate_positions(game: Game) -> list[Level]:
    """Every position reachable from the empty board, ply by ply."""
    levels = []
    hashes = np.zeros(1, dtype=np.int64)
    for ply in range(game.num_cells + 1):
        digits = digits_of(game, hashes)
        values = winners_of(game, digits)
        terminal = (values != 0) | (ply == game.num_cells)
        levels.append(Level(ply, hashes, terminal, values))
        if ply == game.num_cells:
            break
        mover = piece_digit(FIRST if ply % 2 == 0 else -FIRST)
        live = ~terminal
        children = [hashes[live & legal_cells(game, digits, c)] + mover * 3**c for c in range(game.num_cells)]
        hashes = np.unique(np.concatenate(children))
        if len(hashes) == 0:
            break
    return levels


def backup(game: Game, level: Level, child: Level) -> np.ndarray:
    """New values of ``level``'s positions from ``child``'s values (max for the first player, min
    for the second); terminal positions keep their winner."""
    mover = FIRST if level.ply % 2 == 0 else -FIRST
    live = np.flatnonzero(~level.terminal)
    best = np.full(len(live), -2 * mover, dtype=np.int8)  # worse than any value for the mover
    h = level.hashes[live]
    digits = digits_of(game, h)
    for c in range(game.num_cells):
        ok = legal_cells(game, digits, c)
        idx = np.searchsorted(child.hashes, h[ok] + piece_digit(mover) * 3**c)
        v = child.values[idx]
        best[ok] = np.maximum(best[ok], v) if mover == FIRST else np.minimum(best[ok], v)
    new = level.values.copy()
    new[live] = best
    return new


def sweep(game: Game, levels: list[Level], in_place: bool) -> int:
    """One sweep over all positions; returns how many values changed."""
    changed = 0
    if in_place:
        for ply in range(len(levels) - 2, -1, -1):
            new = backup(game, levels[ply], levels[ply + 1])
            changed += int((new != levels[ply].values).sum())
            levels[ply].values = new
    else:
        news = [backup(game, levels[p], levels[p + 1]) for p in range(len(levels) - 1)]
        for lvl, new in zip(levels, news, strict=False):
            changed += int((new != lvl.values).sum())
            lvl.values = new
    return changed


class ValueIterationPlayer(TablePlayer):
    """Plays the move whose resulting position has the best minimax value for the mover (ties at
    random); ``epsilon`` > 0 makes it epsilon-greedy."""

    def __init__(self, game: Game, hashes: np.ndarray, values: np.ndarray, epsilon: float = 0.0) -> None:
        super().__init__(game, epsilon)
        self.hashes = hashes  # sorted int64
        self.values = values  # int8, value for the first player

    def move_values(self, board: np.ndarray, to_play: int, legal: np.ndarray) -> np.ndarray:
        out = np.zeros(self.game.num_cells)
        children = self.game.ternary_hash(board) + piece_digit(to_play) * 3 ** legal.astype(np.int64)
        idx = np.searchsorted(self.hashes, children)
        out[legal] = self.values[idx] * to_play
        return out


def worst_result(player: Player, solver: Player, seat: int, opponent: str = "optimal") -> int:
    """The worst result for ``player`` in ``seat`` (+1 first, -1 second): +1 win, 0 draw, -1 loss.

    Searches every game in which ``player`` plays any of its greedy moves (all ties) and the
    opponent plays any move the ``solver`` rates best (``opponent="optimal"``: every line a
    randomised perfect player can take) or any legal move (``"any"``: the best response of
    ``ttt.evaluation.exploitability``). -1 means some such game is lost.
    """
    from ttt.evaluation.exploitability import best_response

    if opponent not in ("optimal", "any"):
        raise ValueError(f"opponent must be 'optimal' or 'any', got {opponent!r}")

    def best_moves(state: State) -> list[int]:
        values = solver.action_values(state)
        top = max(values.values())
        return [a for a, v in values.items() if v == top]

    return best_response(player, seat, ties="all", opponent_moves=best_moves if opponent == "optimal" else None).result


def solve(game: Game, in_place: bool = False, on_sweep=None) -> tuple[list[Level], int]:
    """Enumerate and sweep until no value changes; returns the levels and the number of sweeps
    (the last one changes nothing). ``on_sweep(sweep, changed, seconds, levels)`` is called after each."""
    levels = enumerate_positions(game)
    sweeps = 0
    while True:
        t0 = time.perf_counter()
        changed = sweep(game, levels, in_place)
        sweeps += 1
        if on_sweep is not None:
            on_sweep(sweeps, changed, time.perf_counter() - t0, levels)
        if changed == 0:
            return levels, sweeps


def table_arrays(levels: list[Level]) -> tuple[np.ndarray, np.ndarray]:
    """All positions' (hashes, values), sorted by hash."""
    hashes = np.concatenate([lv.hashes for lv in levels])
    values = np.concatenate([lv.values for lv in levels])
    order = np.argsort(hashes, kind="stable")
    return hashes[order], values[order]


def check(cfg, game: Game) -> None:
    """Refuse settings or a board this learner cannot use, before any work (``ttt.harness.learners.check_learner``)."""
    check_board(game, "value_iteration")
    agent_settings(cfg.agent, Config)


def train(cfg, run) -> dict:
    """Solve ``cfg.game`` by value iteration, evaluate, play the policy against itself, save.

    It plays no training games: the schedule's checkpoints do not apply, and a stop during the
    solve saves nothing (solving again from the start takes as long)."""
    game = run.game
    settings = agent_settings(cfg.agent, Config)
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()

    def on_sweep(sweeps: int, changed: int, dt: float, levels: list[Level]) -> None:
        positions = sum(len(lv.hashes) for lv in levels)
        run.log("train/positions", positions, sweeps)
        run.log("train/changed_positions", changed, sweeps)
        run.log("train/positions_per_sec", positions / max(dt, 1e-9), sweeps)
        run.log("train/start_value", int(levels[0].values[0]), sweeps)
        run.say(f"sweep {sweeps}: {changed} of {positions} values changed ({dt:.2f} s)", console=bool(cfg.progress))
        run.check_stop()

    run.start(0)
    levels, sweeps = solve(game, bool(settings.in_place), on_sweep)
    seconds = time.perf_counter() - t0
    positions = sum(len(lv.hashes) for lv in levels)
    hashes, values = table_arrays(levels)
    del levels
    player = ValueIterationPlayer(game, hashes, values)
    run.save(lambda _: save_checkpoint(run.checkpoint_path(".npz"), {
        "kind": "value_iteration", "game": game.name, "hashes": hashes, "values": values,
        "sweeps": sweeps, "config": run.config_dict()}), sweeps)
    results = run.evaluate_saved(lambda: player, sweeps)  # saved: a Ctrl-C stops it at once

    selfplay = {}
    n = int(settings.selfplay_games)
    if n > 0:
        explorer = ValueIterationPlayer(game, hashes, values, epsilon=float(settings.selfplay_epsilon))
        for mode, p in (("greedy", player), (f"epsilon_{settings.selfplay_epsilon:g}", explorer)):
            r = play_match(game, p, p, n, seed=int(cfg.seed), seats="first")
            selfplay[mode] = {"games": n, "first_wins": r.first.wins, "second_wins": r.first.losses,
                              "draws": r.first.draws}
    extra = {"positions": positions, "sweeps": sweeps, "in_place": bool(settings.in_place),
             "start_value": int(values[np.searchsorted(hashes, 0)]), "solve_seconds": round(seconds, 3),
             "table_megabytes": round((hashes.nbytes + values.nbytes) / 2**20, 3),
             "peak_rss_megabytes": round(peak_rss_mb(), 1), "rss_growth_megabytes": round(peak_rss_mb() - rss0, 1),
             "selfplay": selfplay}
    return run.write_final(results, extra, episodes=0)  # solved by sweeps, not by playing games


def player_from_checkpoint(payload: dict) -> ValueIterationPlayer:
    """The greedy minimax player of a ``value_iteration`` checkpoint."""
    return ValueIterationPlayer(make_game(payload["game"]), payload["hashes"], payload["values"])
