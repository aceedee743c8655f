"""Elo ratings from match results: a Bradley-Terry maximum-likelihood fit with standard errors.

Model: player i scores against player j with probability ``1 / (1 + 10 ** ((R_j - R_i) / 400))``;
a draw counts as half a win and half a loss. The ratings maximise the likelihood of all the games
(Newton's method; the log-likelihood is concave), one player is held at 0 while fitting and the
result is shifted to the chosen anchor. Standard errors come from the inverse of the observed
information (the negative Hessian) at the optimum, propagated through that shift.

A player that wins every game has an infinite maximum-likelihood rating; ``prior_draws`` adds that
many virtual drawn games to every pair that played, which keeps every rating finite and shrinks
the differences a little. Use 0 for the plain maximum-likelihood fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ELO_PER_NAT = 400 / math.log(10)  # Elo points per unit of log-odds


@dataclass(frozen=True)
class PairResult:
    """Games between players ``a`` and ``b`` (indices), counted from ``a``'s side."""

    a: int
    b: int
    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses


@dataclass(frozen=True)
class Rating:
    """One player's fitted rating."""

    name: str
    elo: float
    se: float  # standard error of ``elo`` (relative to the anchor)
    games: int
    score: float  # (wins + draws / 2) / games over all the player's games

    @property
    def ci(self) -> tuple[float, float]:
        """Approximate 95% interval: elo +- 1.96 se."""
        return self.elo - 1.96 * self.se, self.elo + 1.96 * self.se


def expected_score(elo_a: float, elo_b: float) -> float:
    """The probability model: expected score of a player rated ``elo_a`` against one rated ``elo_b``."""
    return 1.0 / (1.0 + 10.0 ** ((elo_b - elo_a) / 400.0))


def check_prior_draws(prior_draws: float, name: str = "prior_draws") -> None:
    """Raise ValueError (one line naming ``name``) unless ``prior_draws`` is a finite number >= 0."""
    if not 0 <= prior_draws < math.inf:  # NaN fails too
        raise ValueError(f"{name} must be a finite number >= 0 (0: the plain maximum-likelihood fit), "
                         f"got {prior_draws}")


def fit_elo(names: list[str], results: list[PairResult], anchor: str | None = None,
            prior_draws: float = 1.0, max_iter: int = 100, tol: float = 1e-10) -> list[Rating]:
    """Fit Elo ratings to ``results``; returned in the order of ``names``.

    ``anchor``: the name of the player rated 0, or None for ratings with mean 0.
    Every player must be connected to every other through the games played.
    """
    check_prior_draws(prior_draws)
    m = len(names)
    if m < 2:
        raise ValueError("an Elo fit needs at least two players")
    if anchor is not None and anchor not in names:
        raise ValueError(f"anchor {anchor!r} is not one of the players")
    # score matrix: s[i, j] points of i against j, n[i, j] games
    s = np.zeros((m, m))
    n = np.zeros((m, m))
    for r in results:
        if r.a == r.b:
            raise ValueError(f"player {names[r.a]!r} cannot play itself in an Elo fit")
        pts = r.wins + 0.5 * r.draws
        s[r.a, r.b] += pts
        s[r.b, r.a] += r.games - pts
        n[r.a, r.b] += r.games
        n[r.b, r.a] += r.games
    played, score_raw = n.sum(1), s.sum(1)
    prior = np.where(n > 0, prior_draws, 0.0)
    s_fit, n_fit = s + 0.5 * prior, n + prior
    if not _connected(n_fit > 0):
        raise ValueError("the players do not all meet (directly or through others); ratings are not comparable")

    # theta in log-odds units; player 0 is held at 0 while fitting (the likelihood only sees differences)
    theta = np.zeros(m)
    free = np.arange(1, m)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j] = P(i scores against j)
        grad = (s_fit - n_fit * p).sum(1)
        w = n_fit * p * (1 - p)
        hess = w - np.diag(w.sum(1))  # negative definite on the free coordinates
        step = np.linalg.solve(hess[np.ix_(free, free)], -grad[free])
        step = np.clip(step, -3.0, 3.0)  # damped: near-separable results make the first steps large
        theta[free] += step
        if np.abs(step).max() < tol:
            break
    p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    w = n_fit * p * (1 - p)
    info = np.diag(w.sum(1)) - w
    cov = np.zeros((m, m))
    cov[np.ix_(free, free)] = np.linalg.inv(info[np.ix_(free, free)])
    # shift to the anchor: theta' = A theta with A = I - 1 e_a^T (anchor) or I - 11^T/m (mean 0)
    if anchor is None:
        shift = np.eye(m) - np.full((m, m), 1.0 / m)
    else:
        shift = np.eye(m)
        shift[:, names.index(anchor)] -= 1.0
    theta = shift @ theta
    cov = shift @ cov @ shift.T
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return [Rating(names[i], float(theta[i] * ELO_PER_NAT), float(se[i] * ELO_PER_NAT), int(played[i]),
                   float(score_raw[i] / played[i]) if played[i] else 0.0) for i in range(m)]


def _connected(adj: np.ndarray) -> bool:
    seen, todo = {0}, [0]
    while todo:
        i = todo.pop()
        for j in np.flatnonzero(adj[i]):
            if int(j) not in seen:
                seen.add(int(j))
                todo.append(int(j))
    return len(seen) == len(adj)
