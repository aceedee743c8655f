"""Value quality, the measures themselves: a player's values of afterstates, their sign classes,
the exact values they are compared with (3x3 and 4x4, ``ttt.games.solved``) and the opening values.
``python -m ttt.calibration`` reports them with the outcomes of the player's own games
(docs/calibration.md); ``ValueTags`` logs the cheap ones at every evaluation of a training run.

An afterstate is the board right after a move; its value is seen from the player who just moved (+1 a
win for that player, -1 a loss, 0 a draw). Its *sign class*: win above ``WIN_THRESHOLD`` = 1/3, loss
below -1/3, else draw.

Tags of ``ValueTags`` (``<group>/values/...``, ``group`` ``eval`` or ``eval_final``), for a player
that values a batch of moves at once (the dqn player; the network alone, without its rules):

=======================================  =====================================================
``eval/values/opening_median``           median of the values of every legal first move
``eval/values/opening_min``, ``_max``    their lowest and highest
``eval/values/opening/cell_<c>``         mean value of the first moves of the symmetry class
                                         of cell ``c`` (its smallest cell; 3x3: 0 corner, 1 edge,
                                         4 centre), ``ttt.plot figure=openings`` draws them
``eval/values/one_move/<class>``         mean value of a fixed sample of 200 afterstates of each
                                         class whose value one move decides: ``forced_loss``
                                         (exact -1), ``double_threat``, ``completed_line`` (+1)
``eval/values/sign_agreement``           share of a fixed sample of non-terminal afterstates
                                         whose sign class is the exact outcome (3x3, 4x4 only)
``eval/values/mae``                      their mean absolute error against the exact outcome
``eval/values/agreement_<class>``        the sign agreement within an exact class (win, draw, loss)
``eval/values/auc``                      ROC AUC of the values of the afterstates the player left in
                                         the evaluation's games, won against lost (``games_scalars``)
=======================================  =====================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ttt.evaluation.defence import defence
from ttt.evaluation.evaluate import PlayedMoves, Recorded
from ttt.evaluation.suites import tactics_rates
from ttt.games import BatchedGames, Game, opening_name, random_legal_actions
from ttt.games.solved import SOLVABLE_CELLS, image_weights, solved_table
from ttt.games.threats import move_tactics
from ttt.players import Player

WIN_THRESHOLD = 1.0 / 3.0  # a value above this is in the win class, below its negative the loss class
CLASSES = {"win": 1, "draw": 0, "loss": -1}
CHUNK = 2048  # positions valued in one call (bounds memory on Qubic: 2048 x 64 afterstates)


# ------------------------------------------------------------------------------ valuing afterstates
def move_values(player: Player, games: BatchedGames, rows: np.ndarray) -> np.ndarray:
    """(len(rows), cells) float64: ``player``'s value of every legal move of the games ``rows`` from the
    mover's view, NaN where a move is illegal.

    A player with batched ``values(games, rows)`` (the dqn player: one forward pass) is asked once per
    chunk; any other through ``action_values(state)``, one position at a time. A player that values
    no moves raises ValueError."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.full((len(rows), games.game.num_cells), np.nan)
    if callable(getattr(player, "values", None)):
        for start in range(0, len(rows), CHUNK):
            part = rows[start:start + CHUNK]
            v = player.values(games, part).detach().cpu().double().numpy()
            out[start:start + CHUNK] = np.where(np.isfinite(v), v, np.nan)
        return out
    for i, row in enumerate(rows.tolist()):
        values = player.action_values(games.state(row))
        if values is None:
            raise ValueError(f"player {getattr(player, 'name', player)!r} gives no values of its moves; "
                             "calibration needs one that does (a dqn or tabular checkpoint, perfect, alphabeta, mcts)")
        for cell, value in values.items():
            out[i, cell] = value
    return out


def movers(boards: np.ndarray) -> np.ndarray:
    """(N,) int8: the player who made the last move of each board (+1 first, -1 second), by the piece counts."""
    boards = np.asarray(boards)
    return np.where((boards == 1).sum(1) > (boards == -1).sum(1), 1, -1).astype(np.int8)


def values_of_afterstates(player: Player, game: Game, boards: np.ndarray) -> np.ndarray:
    """(N,) ``player``'s values of the afterstates ``boards`` (N, cells; +1 first player, -1 second,
    none terminal, at least one piece), each from the view of the player who just moved.

    A player that values afterstates themselves (``value_of_afterstates(views)``, the dqn player's
    network alone) is asked so, in one pass. Any other is asked for a move: from the board without one
    of the mover's pieces (the highest cell with nothing above it, so a legal move under gravity too),
    the move that puts it back."""
    boards = np.asarray(boards, dtype=np.int8)
    n = len(boards)
    if n == 0:
        return np.zeros(0)
    mover = movers(boards)
    direct = getattr(player, "value_of_afterstates", None)
    values = direct(boards * mover[:, None]) if callable(direct) else None
    if values is not None:
        return np.asarray(values, dtype=np.float64)
    above = game.above
    free_above = np.where(above >= 0, boards[:, np.maximum(above, 0)] == 0, True)
    removable = (boards == mover[:, None]) & free_above
    if not removable.any(1).all():
        raise ValueError("an afterstate has no piece of the player who just moved that could have been played last")
    cell = (removable * np.arange(1, game.num_cells + 1)).argmax(1)
    games = BatchedGames(game, n)
    games.board[:] = boards
    games.board[np.arange(n), cell] = 0
    games.to_play[:] = mover
    games.num_moves[:] = (games.board != 0).sum(1)
    values = move_values(player, games, np.arange(n))
    return values[np.arange(n), cell]


def sign_class(values: np.ndarray) -> np.ndarray:
    """(N,) int8: +1 (win) above ``WIN_THRESHOLD``, -1 (loss) below its negative, else 0 (draw)."""
    values = np.asarray(values, dtype=np.float64)
    return np.where(values > WIN_THRESHOLD, 1, np.where(values < -WIN_THRESHOLD, -1, 0)).astype(np.int8)


def pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson's correlation of ``a`` and ``b``; None when either is constant."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not len(a) or (a == a[0]).all() or (b == b[0]).all():  # constant: the mean's rounding is no spread
        return None
    a, b = a - a.mean(), b - b.mean()
    denom = np.sqrt((a * a).sum() * (b * b).sum())
    return None if denom == 0 else float((a * b).sum() / denom)


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation of ``a`` and ``b`` (ties: mean ranks); None when either is constant."""
    return pearson(_ranks(np.asarray(a, dtype=np.float64)), _ranks(np.asarray(b, dtype=np.float64)))


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return (sums / counts)[inverse]  # each tie group gets its mean rank


# ------------------------------------------------------------------------------ telling won from lost
# the ply of the move (1: the first); "11+" joins the last two, the span the values are judged on
PHASES = (("1-10", 1, 10), ("11-20", 11, 20), ("21+", 21, None), ("11+", 11, None))


def roc_auc(values: np.ndarray, won: np.ndarray) -> float | None:
    """The area under the ROC curve of ``values`` separating ``won`` (True) from lost (False): the
    probability that a won position's value is above a lost one's, ties counting half (0.5: no
    discrimination, a constant's); None without both kinds."""
    values, won = np.asarray(values, dtype=np.float64), np.asarray(won, dtype=bool)
    wins, losses = int(won.sum()), int((~won).sum())
    if not wins or not losses:
        return None
    ranks = _ranks(values) + 1.0  # 1-based, ties their mean rank (Mann-Whitney U)
    return float((ranks[won].sum() - wins * (wins + 1) / 2) / (wins * losses))


def grouped_auc(values: np.ndarray, won: np.ndarray, groups: np.ndarray) -> float | None:
    """``roc_auc`` over the (won, lost) pairs taken within each group only (e.g. one opponent's games
    from one seat): the groups' AUCs weighted by their pairs; None when no group has both kinds."""
    values, won, groups = np.asarray(values, dtype=np.float64), np.asarray(won, dtype=bool), np.asarray(groups)
    hits = pairs = 0.0
    for g in np.unique(groups):
        mask = groups == g
        auc = roc_auc(values[mask], won[mask])
        if auc is not None:
            n = float(won[mask].sum()) * float((~won[mask]).sum())
            hits, pairs = hits + auc * n, pairs + n
    return hits / pairs if pairs else None


AUC_RESAMPLES = 1000  # bootstrap resamples of the games for the AUC's interval (auc_interval)


def auc_interval(values: np.ndarray, won: np.ndarray, games: np.ndarray,
                 resamples: int = AUC_RESAMPLES) -> list[float] | None:
    """The 95% interval of ``roc_auc(values, won)`` over the games the positions come from (``games``,
    one id per position): the 2.5th and 97.5th percentiles of the AUC over ``resamples`` draws of the
    games with replacement, each drawn game bringing all its positions (they are not independent: every
    afterstate of a lost game is lost). A fixed generator of its own (seed 0), so the interval is the
    same for the same inputs and no other draw moves. None when the AUC is."""
    values, won, games = np.asarray(values, dtype=np.float64), np.asarray(won, dtype=bool), np.asarray(games)
    if roc_auc(values, won) is None:
        return None
    ids, game_of = np.unique(games, return_inverse=True)
    levels, level = np.unique(values, return_inverse=True)  # sorted once: equal values share a level
    rng = np.random.default_rng(0)
    found = []
    for _ in range(resamples):
        # a draw of the games as a weight per position (how often its game was drawn): roc_auc of the
        # positions repeated that often, by weighted counts per level in place of a sort of the copies
        weight = np.bincount(rng.integers(len(ids), size=len(ids)), minlength=len(ids))[game_of].astype(np.float64)
        w_won = np.bincount(level[won], weight[won], minlength=len(levels))
        w_lost = np.bincount(level[~won], weight[~won], minlength=len(levels))
        pairs = w_won.sum() * w_lost.sum()
        if pairs:  # each won position above the lost ones below its level, ties counting half
            found.append(float((w_won * (np.cumsum(w_lost) - 0.5 * w_lost)).sum() / pairs))
    return [float(np.percentile(found, 2.5)), float(np.percentile(found, 97.5))] if found else None


def discrimination(values: np.ndarray, outcomes: np.ndarray, plies: np.ndarray,
                   games: np.ndarray | None = None) -> dict[str, Any]:
    """How well ``values`` tell won from lost: the ROC AUC over the decided outcomes (+1 won, -1 lost;
    draws left out) and Pearson's correlation with every outcome (draws as 0), overall and by the
    phase of the move (``plies``: 1-10, 11-20, 21+, and 11+ the last two together). With ``games`` (the
    game of each position) also ``auc_95``, the AUC's 95% interval over the games (``auc_interval``)."""
    values, outcomes, plies = (np.asarray(x) for x in (values, outcomes, plies))

    def part(mask: np.ndarray) -> dict[str, Any]:
        v, o = values[mask].astype(np.float64), outcomes[mask].astype(np.float64)
        decided = o != 0
        found = {"positions": int(mask.sum()), "won": int((o > 0).sum()), "lost": int((o < 0).sum()),
                 "auc": roc_auc(v[decided], o[decided] > 0), "pearson": pearson(v, o) if len(v) else None}
        if games is not None:
            found["auc_95"] = auc_interval(v[decided], o[decided] > 0, np.asarray(games)[mask][decided])
        return found

    out = part(np.ones(len(values), dtype=bool))
    out["by_phase"] = {name: part((plies >= low) & (plies <= (np.inf if high is None else high)))
                       for name, low, high in PHASES}
    return out


ONE_MOVE = {"forced_loss": -1.0, "double_threat": 1.0, "completed_line": 1.0}  # each class and its exact value
ONE_MOVE_TAG = 200  # one-move afterstates of each class in the fixed sample of ValueTags


def one_move_afterstates(game: Game, count: int, rng: np.random.Generator) -> tuple[BatchedGames, dict[str, tuple]]:
    """``(positions, {class: (rows, cells)})``: every non-terminal position of ``count`` games of random
    play, and up to ``count`` moves of each ``ONE_MOVE`` class among them, drawn uniformly (see
    ``one_move_values``)."""
    played = BatchedGames(game, count)
    boards, to_play = [], []
    while not played.done.all():
        live = ~played.done
        boards.append(played.board[live].copy())
        to_play.append(played.to_play[live].copy())
        played.play(random_legal_actions(played.legal_mask(), rng))
    pool = BatchedGames(game, sum(len(b) for b in boards))
    pool.board[:] = np.concatenate(boards)
    pool.to_play[:] = np.concatenate(to_play)
    pool.num_moves[:] = (pool.board != 0).sum(1)
    tactics = move_tactics(pool.board, pool.to_play, pool.legal_mask(), game)
    picks = {}
    for name, mask in (("forced_loss", tactics.loss), ("double_threat", tactics.fork),
                       ("completed_line", tactics.win)):
        rows, cells = np.nonzero(mask)
        keep = np.sort(rng.choice(len(rows), size=min(count, len(rows)), replace=False)) if len(rows) else rows
        picks[name] = (rows[keep], cells[keep])
    return pool, picks


def one_move_values(player: Player, game: Game, count: int, rng: np.random.Generator | None,
                    sample: tuple | None = None) -> dict[str, Any]:
    """``player``'s values of the afterstates whose outcome one move decides, in positions of random
    play (every non-terminal position of ``count`` random games): ``forced_loss``, the opponent can
    then complete a line at once (exact value -1); ``double_threat``, no such reply, and two playable
    winning cells the opponent cannot both block (+1); ``completed_line``, the move completes a line
    (+1). Up to ``count`` of each, drawn uniformly: their mean and quartiles. ``sample``: a drawn
    ``one_move_afterstates`` to value instead."""
    pool, picks = sample if sample is not None else one_move_afterstates(game, count, rng)
    needed = np.unique(np.concatenate([rows for rows, _ in picks.values()]))
    values = np.full((len(pool), game.num_cells), np.nan)
    if len(needed):
        values[needed] = move_values(player, pool, needed)
    out: dict[str, Any] = {"positions": len(pool)}
    for name, (rows, cells) in picks.items():
        v = values[rows, cells]
        q = [float(x) for x in np.percentile(v, [25, 50, 75])] if len(v) else [None] * 3
        out[name] = {"afterstates": len(v), "exact": ONE_MOVE[name], "mean": float(v.mean()) if len(v) else None,
                     "q25": q[0], "median": q[1], "q75": q[2]}
    return out


# ------------------------------------------------------------------------------ against exact values
def has_exact_values(game: Game) -> bool:
    """Whether ``ttt.games.solved`` gives exact values of ``game`` (3x3, 4x4)."""
    return game.num_cells <= SOLVABLE_CELLS and not game.gravity


def _digits_to_boards(keys: np.ndarray, cells: int) -> np.ndarray:
    digits = (keys[:, None] // 3 ** np.arange(cells, dtype=np.int64)) % 3
    return np.where(digits == 1, 1, np.where(digits == 2, -1, 0)).astype(np.int8)


def _is_live_afterstate(boards: np.ndarray, game: Game) -> np.ndarray:
    """(N,) bool: at least one piece, no completed line, and an empty cell left."""
    sums = boards.astype(np.int64) @ game.incidence.astype(np.int64)
    won = (np.abs(sums) == game.line_length).any(1)
    pieces = (boards != 0).sum(1)
    return (pieces > 0) & (pieces < game.num_cells) & ~won


def afterstate_classes(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """The symmetry classes of the reachable afterstates of ``game`` that are not terminal:
    ``(boards, orbits)``, one canonical board (N, cells) per class and how many distinct positions
    the class holds. ``orbits.sum()`` is the number of such positions (3x3: 4,519)."""
    table = solved_table(game)
    boards = _digits_to_boards(table.keys, game.num_cells)
    boards = boards[_is_live_afterstate(boards, game)]
    weights = image_weights(game)
    orbits = np.empty(len(boards), dtype=np.int64)
    for start in range(0, len(boards), 65536):
        hashes = np.sort((boards[start:start + 65536].astype(np.int64) % 3) @ weights, axis=1)
        orbits[start:start + 65536] = (np.diff(hashes, axis=1) != 0).sum(1) + 1
    return boards, orbits


def exact_afterstates(game: Game, positions: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """``(boards, sampled)``: every reachable afterstate of ``game`` that is not terminal when there
    are at most ``positions`` of them (``sampled`` False), else ``positions`` drawn uniformly among
    them, with replacement: a class with probability proportional to its size, then one of its images
    under a symmetry drawn uniformly (every position of a class is as many symmetries' image)."""
    boards, orbits = afterstate_classes(game)
    sym = game.symmetries
    if int(orbits.sum()) <= positions:
        images = boards[:, sym]  # (N, G, cells); image g puts cell sym[g, i] at i
        flat = images.reshape(-1, game.num_cells)
        return np.unique(flat, axis=0), False
    picks = rng.choice(len(boards), size=positions, p=orbits / orbits.sum())
    g = rng.integers(len(sym), size=positions)
    return boards[picks[:, None], sym[g]], True


def exact_outcomes(game: Game, boards: np.ndarray) -> np.ndarray:
    """(N,) the outcome under best play of each afterstate, +1 / 0 / -1 for the player who just moved."""
    table = solved_table(game)
    keys = ((np.asarray(boards, dtype=np.int64) % 3) @ image_weights(game)).min(axis=1)  # canonical keys
    idx = np.searchsorted(table.keys, keys).clip(0, len(table.keys) - 1)
    if not np.array_equal(table.keys[idx], keys):
        raise ValueError(f"{game.name}: an afterstate is not reachable from the empty board")
    return (np.sign(table.values[idx]).astype(np.int64) * movers(boards)).astype(np.int8)


def exact_measures(values: np.ndarray, exact: np.ndarray) -> dict[str, Any]:
    """Sign agreement (overall and per exact class), mean absolute error and Spearman's rank
    correlation of ``values`` against the exact outcomes ``exact`` (+1, 0, -1)."""
    values, exact = np.asarray(values, dtype=np.float64), np.asarray(exact)
    right = sign_class(values) == exact
    classes = {}
    for name, c in CLASSES.items():
        mask = exact == c
        classes[name] = {"positions": int(mask.sum()),
                         "agreement": float(right[mask].mean()) if mask.any() else None,
                         "mean_value": float(values[mask].mean()) if mask.any() else None}
    return {"positions": len(values), "sign_agreement": float(right.mean()),
            "mae": float(np.abs(values - exact).mean()), "spearman": spearman(values, exact), "classes": classes}


# ------------------------------------------------------------------------------ opening values
def cell_orbits(game: Game) -> list[list[int]]:
    """The cells grouped by the board's symmetries (each orbit sorted, orbits by their smallest cell)."""
    seen, orbits = set(), []
    for cell in range(game.num_cells):
        if cell not in seen:
            orbit = sorted({int(c) for c in game.symmetries[:, cell]})
            seen.update(orbit)
            orbits.append(orbit)
    return orbits


def opening_values(player: Player, game: Game) -> dict[str, Any]:
    """The value of each first move, grouped by orbit (``cell_orbits``; gravity: the legal ones), with
    the exact outcome of each class where the board has exact values."""

    games = BatchedGames(game, 1)
    values = move_values(player, games, np.array([0]))[0]
    exact = solved_table(game).move_values(game.initial_state()) if has_exact_values(game) else None
    classes = []
    for orbit in cell_orbits(game):
        legal = [c for c in orbit if np.isfinite(values[c])]
        if not legal:
            continue
        v = [float(values[c]) for c in legal]
        names = dict.fromkeys(opening_name(game, c) for c in orbit)  # Qubic's symmetries join corners and centres
        classes.append({"name": " / ".join(names), "cells": legal, "values": v, "mean": float(np.mean(v)),
                        "exact": None if exact is None else int(np.sign(exact[legal[0]]))})
    every = values[np.isfinite(values)]
    return {"median": float(np.median(every)), "min": float(every.min()), "max": float(every.max()),
            "classes": classes}


# ------------------------------------------------------------------------------ during training
TAG_POSITIONS = 5000  # the fixed sample of exact afterstates: all of 3x3's 4,519, 5,000 of 4x4's millions


class ValueTags:
    """The value measures of one board logged at each evaluation of a training run: the opening values,
    and on boards with exact values the sign agreement and mean absolute error over a fixed sample of
    non-terminal afterstates (``positions`` of them, drawn once with ``seed``; all when there are
    fewer), their exact outcomes computed once. A measure is one batched valuation of the sample."""

    def __init__(self, game: Game, positions: int = TAG_POSITIONS, seed: int = 0) -> None:
        self.game = game
        self.boards = self.exact = None
        if has_exact_values(game):
            self.boards, _ = exact_afterstates(game, positions, np.random.default_rng(seed))
            self.exact = exact_outcomes(game, self.boards)
        self.one_move = one_move_afterstates(game, ONE_MOVE_TAG, np.random.default_rng(seed))

    @staticmethod
    def applies(player: Player) -> bool:
        """Whether ``player`` values a batch of moves in one call (``values``), as the networks do."""
        return callable(getattr(player, "values", None))

    def measures(self, player: Player) -> dict[str, float]:
        """``{tag below <group>/values/: value}`` of ``player`` (its values as given: pass the network
        alone, ``without_rules()``, to measure the network)."""
        openings = opening_values(player, self.game)
        out = {f"opening_{k}": openings[k] for k in ("median", "min", "max")}
        out.update({f"opening/cell_{c['cells'][0]}": c["mean"] for c in openings["classes"]})
        one_move = one_move_values(player, self.game, 0, None, self.one_move)
        out.update({f"one_move/{name}": one_move[name]["mean"] for name in ONE_MOVE if one_move[name]["afterstates"]})
        if self.boards is not None:
            m = exact_measures(values_of_afterstates(player, self.game, self.boards), self.exact)
            out["sign_agreement"], out["mae"] = m["sign_agreement"], m["mae"]
            out.update({f"agreement_{name}": c["agreement"] for name, c in m["classes"].items()
                        if c["agreement"] is not None})
        return out


_TAGS: dict[str, ValueTags] = {}  # one fixed sample per board and process: every run and seed alike


def played_values(player: Player, game: Game, played: PlayedMoves) -> np.ndarray:
    """(N,) ``player``'s value of the afterstate of each move ``played`` (``values_of_afterstates``), NaN
    where the move ended its game."""
    values = np.full(len(played.moves), np.nan)
    live = ~played.ended
    if live.any():
        values[live] = values_of_afterstates(player, game, played.afterstates()[live])
    return values


def games_scalars(game: Game, played: PlayedMoves, valuer: Player | None) -> dict[str, float]:
    """``{tag below the group: value}`` of the moves ``played`` in an evaluation's games (``Recorded``):
    ``defence/{block_rate,miss_value,forced}`` (``ttt.evaluation.defence``) and, with a ``valuer`` (the network
    alone), ``values/auc``: ``grouped_auc`` of its values of the non-terminal afterstates of the moves
    against their games' results, won against lost (draws left out), pairs within each batch of games
    (one opponent, one seat). A measure the games leave undefined is left out."""
    values = played_values(valuer, game, played) if valuer is not None else None
    d = defence(game, played, values)
    out = {"defence/forced": float(d["forced"])}
    out.update({f"defence/{k}": d[k] for k in ("block_rate", "miss_value") if d[k] is not None})
    if values is not None:
        decided = ~played.ended & (played.outcomes != 0)
        auc = grouped_auc(values[decided], played.outcomes[decided] > 0, played.batches[decided])
        if auc is not None:
            out["values/auc"] = auc
    return out


def evaluation_scalars(player: Player, game: Game, tactics: bool) -> dict[str, float]:
    """What an evaluation logs besides its results (``ttt.harness.training.Run.evaluate``), ``{tag below the
    group: value}``: ``tactics/<suite>`` (``tactics``: ``ttt.evaluation.suites.tactics_rates``); for a player with
    batched values, ``values/<key>`` (``ValueTags.measures`` of its network alone); and for a player that
    kept its moves in the evaluation's games (``ttt.evaluation.evaluate.Recorded``), ``games_scalars`` of them."""
    out = {f"tactics/{suite}": rate for suite, rate in tactics_rates(player, game).items()} if tactics else {}
    alone = None
    if ValueTags.applies(player):
        tags = _TAGS.get(game.name) or _TAGS.setdefault(game.name, ValueTags(game))
        alone = player.without_rules() if callable(getattr(player, "without_rules", None)) else player
        out.update({f"values/{key}": value for key, value in tags.measures(alone).items()})
    if isinstance(player, Recorded):
        out.update(games_scalars(game, player.moves(), alone))
    return out
