"""The games that the value measures sample, shared by ``ttt.calibration`` (which measures a player's
values) and ``ttt.recalibrate`` (which fits their scale): epsilon-greedy self-play and games against an
opponent, continuations of afterstates (rollouts), the reliability table, and the fit of a scale and
shift of the value head's logit to outcomes (Platt scaling).

The games are the player's own, rules included, except the dqn player's threat-chain rule
(``without_threat_chains``): training moved without it, and its search costs about 0.3 s per Qubic game.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np

from ttt.evaluation.value_quality import PHASES, discrimination, movers, values_of_afterstates
from ttt.games import BatchedGames, Game, random_legal_actions
from ttt.players import Player


class EpsilonGreedy(Player):
    """``player``'s moves, each replaced with probability ``epsilon`` by a random legal move."""

    def __init__(self, player: Player, epsilon: float) -> None:
        super().__init__(player.game)
        self.player, self.epsilon = player, float(epsilon)

    def act_batch(self, games: BatchedGames, rng: np.random.Generator) -> np.ndarray:
        actions = np.asarray(self.player.act_batch(games, rng), dtype=np.int64).copy()
        if self.epsilon > 0:
            explore = (rng.random(len(games)) < self.epsilon) & ~games.done
            if explore.any():
                actions[explore] = random_legal_actions(games.legal_mask()[explore], rng)
        return actions


def self_play(player: Player, games: BatchedGames, rng: np.random.Generator) -> list[np.ndarray]:
    """Play ``games`` to their ends, ``player`` moving in every game; returns the boards after each ply."""
    history = []
    while not games.done.all():
        games.play(player.act_batch(games, rng))
        history.append(games.board.copy())
    return history


def played_games(player: Player, game: Game, games: int, epsilon: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(history, length)``: the boards after every ply (plies, games, cells) of ``games`` games of
    ``player``'s epsilon-greedy self-play, and each game's number of plies."""
    played = BatchedGames(game, games)
    history = np.stack(self_play(EpsilonGreedy(player, epsilon), played, rng))
    return history, played.num_moves.astype(np.int64)


def outcome_samples(player: Player, game: Game, positions: int, rollouts: int, epsilon: float,
                    rng: np.random.Generator, valuer: Player | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(values, outcomes)``, (positions,) each: afterstates from ``player``'s epsilon-greedy
    self-play (one per game, its ply drawn uniformly among the game's non-terminal afterstates),
    ``valuer``'s value of each (default ``player``'s), and the mean outcome of ``rollouts``
    epsilon-greedy continuations of ``player`` against itself, both from the view of the player who
    made the move."""
    boards, outcomes = outcome_boards(player, game, positions, rollouts, epsilon, rng)
    return values_of_afterstates(valuer or player, game, boards), outcomes


def outcome_boards(player: Player, game: Game, positions: int, rollouts: int, epsilon: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(boards, outcomes)``: the afterstates of ``outcome_samples`` (positions, cells) and the mean
    outcome of their continuations (positions,), the same draws."""
    history, length = played_games(player, game, positions, epsilon, rng)
    ply = 1 + np.floor(rng.random(positions) * (length - 1)).astype(np.int64)  # 1 .. length - 1
    boards = history[ply - 1, np.arange(positions)]
    return boards, continuations(player, None, game, boards, rollouts, epsilon, rng).mean(1)


def own_afterstates(player: Player, game: Game, games: int, epsilon: float,
                    rng: np.random.Generator) -> np.ndarray:
    """(N, cells) every non-terminal afterstate of ``games`` games of ``player``'s epsilon-greedy
    self-play: the positions the player itself meets (with repeats), where its values are used."""
    history, length = played_games(player, game, games, epsilon, rng)
    live = np.arange(1, len(history) + 1)[:, None] < length[None, :]  # ply p's board is not the last
    return history[live]


def opponent_games(player: Player, opponent: Player | None, game: Game, games: int, epsilon: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(boards, plies, outcomes, game_ids)`` of every non-terminal afterstate of ``player``'s moves in
    ``games`` games against ``opponent`` (None: itself, both seats its moves), the player first in the
    even games, both epsilon-greedy: the ply of each move (1: the first), its game's outcome from the
    view of the player who made it (+1, 0, -1), and the index of its game."""
    played = BatchedGames(game, games)
    seat = np.where(np.arange(games) % 2 == 0, 1, -1).astype(np.int8)
    me = EpsilonGreedy(player, epsilon)
    other = EpsilonGreedy(opponent, epsilon) if opponent is not None else None
    boards, plies, rows, movers_ = [], [], [], []
    while not played.done.all():
        mine = ~played.done & ((played.to_play == seat) if other is not None else True)
        actions = me.act_batch(played, rng)
        if other is not None:
            actions = np.where(mine, actions, other.act_batch(played, rng))
        mover, ply = played.to_play.copy(), played.num_moves.astype(np.int64) + 1
        ended = played.play(actions)
        keep = mine & ~ended
        boards.append(played.board[keep].copy())
        plies.append(ply[keep])
        rows.append(np.flatnonzero(keep))
        movers_.append(mover[keep])
    rows, mover = np.concatenate(rows), np.concatenate(movers_).astype(np.int64)
    return np.concatenate(boards), np.concatenate(plies), (played.winner[rows].astype(np.int64) * mover), rows


def continuations(player: Player, opponent: Player | None, game: Game, boards: np.ndarray, rollouts: int,
                  epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """(N, rollouts) outcomes (+1, 0, -1 for the player who made the move) of ``rollouts`` games from each
    afterstate ``boards`` (N, cells): the player who moved there against ``opponent`` (None: itself, as
    both), both epsilon-greedy, as ``opponent_games`` plays them."""
    mover = movers(boards)
    n = len(boards)
    starts = BatchedGames(game, n * rollouts)
    starts.board[:] = np.repeat(boards, rollouts, axis=0)
    seat = np.repeat(mover, rollouts).astype(starts.to_play.dtype)
    starts.to_play[:] = -seat
    starts.num_moves[:] = (starts.board != 0).sum(1)
    me = EpsilonGreedy(player, epsilon)
    if opponent is None:
        self_play(me, starts, rng)
    else:
        other = EpsilonGreedy(opponent, epsilon)
        while not starts.done.all():
            starts.play(np.where(starts.to_play == seat, me.act_batch(starts, rng), other.act_batch(starts, rng)))
    return (starts.winner.astype(np.float64) * seat).reshape(n, rollouts)


def auc_ceiling(player: Player, opponent: Player | None, game: Game, boards: np.ndarray, plies: np.ndarray,
                won: np.ndarray, rollouts: int, epsilon: float, rng: np.random.Generator) -> dict[str, Any]:
    """The ROC AUC that no value of the afterstates alone can pass, estimated: each decided afterstate of
    ``opponent_games`` scored by its share of wins among the decided games of ``rollouts`` continuations by
    the same two players (``continuations``; the likelihood ratio of won to lost, the best order of the
    AUC, with half a win and one game added as a prior). What the games decide after the afterstate
    (exploration, the players' random tie-breaks) caps the AUC of any value below 1; finite rollouts put
    this estimate a little below the cap."""
    decided = won != 0
    outcome = continuations(player, opponent, game, boards[decided], rollouts, epsilon, rng)
    score = ((outcome > 0).sum(1) + 0.5) / ((outcome != 0).sum(1) + 1.0)
    found = discrimination(score, won[decided], plies[decided])
    return {"rollouts": rollouts, "auc": found["auc"],
            "by_phase": {name: found["by_phase"][name]["auc"] for name, *_ in PHASES}}


def reliability(values: np.ndarray, outcomes: np.ndarray, bins: int = 10) -> tuple[list[dict], float]:
    """The reliability table of ``values`` against mean ``outcomes`` in ``bins`` equal bins over
    [-1, 1] (a value of exactly 1 in the last), and the expected calibration error
    ``sum_b (n_b / n) |mean value_b - mean outcome_b|``."""
    values, outcomes = np.asarray(values, dtype=np.float64), np.asarray(outcomes, dtype=np.float64)
    edges = np.linspace(-1.0, 1.0, bins + 1)
    index = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        mask = index == b
        n = int(mask.sum())
        row = {"low": float(edges[b]), "high": float(edges[b + 1]), "positions": n,
               "mean_value": float(values[mask].mean()) if n else None,
               "mean_outcome": float(outcomes[mask].mean()) if n else None}
        if n:
            ece += n / len(values) * abs(row["mean_value"] - row["mean_outcome"])
        table.append(row)
    return table, float(ece)


def without_threat_chains(player: Player) -> Player:
    """A copy of a dqn player that plays without its threat-chain rule (``Rules.threats``), else
    ``player``: training moved without it too, and it searches the replies of every afterstate (about
    0.3 s per Qubic game), which thousands of games cannot afford."""
    rules = getattr(player, "rules", None)
    if not getattr(rules, "threats", 0):
        return player
    player = copy.copy(player)
    player.rules = replace(rules, threats=0)
    return player


def fit_scale_shift(logits: np.ndarray, outcomes: np.ndarray, shift: bool = True) -> tuple[float, float]:
    """``(a, b)`` that minimise the mean of ``(tanh(a * logit + b) - outcome) ** 2`` over the samples (Platt
    scaling on the value scale; ``shift=False``: ``b`` stays 0). ``a`` must come out positive: a value head
    whose logits fall as the outcomes rise has no order to keep, and is a ValueError."""
    import torch

    z = torch.as_tensor(np.asarray(logits, dtype=np.float64))
    o = torch.as_tensor(np.asarray(outcomes, dtype=np.float64))
    if z.shape != o.shape or z.ndim != 1 or len(z) < 2:
        raise ValueError(f"need matching 1-d logits and outcomes, at least 2; got {tuple(z.shape)}, {tuple(o.shape)}")
    a = torch.ones((), dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=shift)
    solver = torch.optim.LBFGS([a, b] if shift else [a], max_iter=500, tolerance_grad=1e-12,
                               tolerance_change=1e-15, line_search_fn="strong_wolfe")

    def loss() -> torch.Tensor:
        solver.zero_grad()
        value = ((torch.tanh(a * z + b) - o) ** 2).mean()
        value.backward()
        return value

    solver.step(loss)
    scale, shift = float(a.detach()), float(b.detach())
    if not scale > 0:
        raise ValueError(f"the fitted scale is {scale:.3g}: the values do not rise with the outcomes")
    return scale, shift
