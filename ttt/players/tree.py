"""One Monte Carlo tree search for every search player: the tree, two rules for choosing a move
inside it, the backup, and simulations from many roots in lock step with a pluggable leaf evaluator.
``ttt.players.array_tree`` runs the PUCT search of this module over arrays (AlphaZero's), step for step.

A simulation walks down from a root. At every *expanded* node it takes the move its selection rule
prefers, until it reaches a node that has not been expanded yet or whose result is known (the game
is over there, or an evaluator proved it). That leaf is scored by the *leaf evaluator* (random
rollouts for ``mcts``, the policy-value network for ``alphazero``), which may also give it move
priors or a known result; it is then expanded. The result is added to every move on the path with
the sign of the player who chose it (``backup``).

Selection rules, with ``Q(s, a)`` the mean result of move a from the view of the player to move at s
(0 for a move never tried) and ``N(s, a)`` its visits:

* ``UCT(c)``: the moves never tried first, in a random order; then the largest
  ``U(s, a) = Q(s, a) + c * sqrt(ln(sum_b N(s, b)) / (1 + N(s, a)))`` (the sum taken as at least 1);
* ``PUCT(c_puct)``: the largest ``U(s, a) = Q(s, a) + c_puct * P(s, a) * sqrt(N_s) / (1 + N(s, a))``
  with ``N_s = max(sum_b N(s, b), 1)`` and ``P`` the node's prior (a fresh node follows its prior).

Equal scores go to the first move. Results are on the first player's scale: +1 the first player won,
-1 the second, 0 a draw, or an estimate in between.

A leaf evaluator is any callable ``evaluate(leaves, rng) -> results``: one result per leaf (unfinished
positions, never expanded), in one call for the leaves of all roots, so a network scores them in one
batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ttt.games import State
from ttt.players.stop import check_stop

Evaluator = Callable[[list["Node"], "np.random.Generator | None"], Sequence[float]]


class Node:
    """A position in the tree; statistics are per legal move, from the view of ``to_play``.

    ``N`` and ``W`` hold the visits and the summed results of each move of ``actions``; ``children``
    the nodes they lead to (None until first chosen). ``value`` is the known result (+1 / -1 / 0 on
    the first player's scale) when the game is over here or an evaluator proved it, else None.
    ``prior`` holds the evaluator's move probabilities when it gives them; ``untried`` the moves the
    UCT rule has still to try, in its random order.
    """

    __slots__ = ("state", "to_play", "moves", "actions", "N", "W", "children", "value", "prior", "expanded",
                 "untried")

    def __init__(self, state: State) -> None:
        self.state = state
        self.to_play = state.to_play()
        self.moves = state.legal_actions()  # ``actions`` as Python ints, for the loops of the search
        self.actions = np.array(self.moves, dtype=np.int64)
        self.N = np.zeros(len(self.actions))
        self.W = np.zeros(len(self.actions))
        self.children: list[Node | None] = [None] * len(self.actions)
        self.value: float | None = float(state.winner()) if state.is_terminal() else None
        self.prior: np.ndarray | None = None
        self.expanded = False
        self.untried: list[int] | None = None

    def q(self) -> np.ndarray:
        """Mean result of each move from the view of ``to_play`` (0 for moves never tried)."""
        return np.divide(self.W, self.N, out=np.zeros_like(self.W), where=self.N > 0)

    def child(self, idx: int) -> Node:
        """The node after move ``actions[idx]``, created on first use."""
        node = self.children[idx]
        if node is None:
            node = self.children[idx] = Node(self.state.apply(self.moves[idx]))
        return node


# ------------------------------------------------------------------------------- selection rules
def _means(w: list[float], n: list[float]) -> list[float]:
    return [wi / ni if ni > 0 else 0.0 for wi, ni in zip(w, n, strict=True)]


def _uct(q: list[float], n: list[float], c: float) -> list[float]:
    log_total = math.log(max(float(sum(n)), 1.0))  # ln(1) = 0: a node visited once only compares Q
    return [qi + c * math.sqrt(log_total / (1.0 + ni)) for qi, ni in zip(q, n, strict=True)]


def _puct(q: list[float], prior: list[float], n: list[float], c_puct: float) -> list[float]:
    root_total = math.sqrt(max(float(sum(n)), 1.0))
    return [qi + c_puct * pi * root_total / (1.0 + ni) for qi, pi, ni in zip(q, prior, n, strict=True)]


def _first_max(scores: list[float]) -> int:
    return max(range(len(scores)), key=scores.__getitem__)  # max keeps the first of equal scores


def uct_scores(q: np.ndarray, n: np.ndarray, c: float) -> np.ndarray:
    """U(s, a) = Q(s, a) + c * sqrt(ln(sum_b N(s, b)) / (1 + N(s, a))) for every move a of a node."""
    return np.array(_uct(np.asarray(q, float).tolist(), np.asarray(n, float).tolist(), float(c)))


def puct_scores(q: np.ndarray, prior: np.ndarray, n: np.ndarray, c_puct: float) -> np.ndarray:
    """U(s, a) = Q(s, a) + c_puct * P(s, a) * sqrt(N_s) / (1 + N(s, a)) with N_s = max(sum_b N(s, b), 1)."""
    return np.array(_puct(np.asarray(q, float).tolist(), np.asarray(prior, float).tolist(),
                          np.asarray(n, float).tolist(), float(c_puct)))


class UCT:
    """Moves never tried first (in an order drawn from the search's generator), then the largest UCT score."""

    def __init__(self, c: float = math.sqrt(2)) -> None:
        self.c = float(c)

    def __call__(self, node: Node, rng: np.random.Generator) -> int:
        if node.untried is None:
            node.untried = rng.permutation(len(node.actions)).tolist()
        if node.untried:
            return node.untried.pop()
        n = node.N.tolist()
        return _first_max(_uct(_means(node.W.tolist(), n), n, self.c))


class PUCT:
    """The largest PUCT score over the node's prior (set by the evaluator)."""

    def __init__(self, c_puct: float = 1.5) -> None:
        self.c_puct = float(c_puct)

    def __call__(self, node: Node, rng: np.random.Generator | None = None) -> int:
        n = node.N.tolist()
        return _first_max(_puct(_means(node.W.tolist(), n), node.prior.tolist(), n, self.c_puct))


# ------------------------------------------------------------------------------- search
def backup(path: list[tuple[Node, int]], result: float) -> None:
    """Add ``result`` (first player's scale) to every move on ``path``, signed for the player who chose it."""
    for node, idx in path:
        node.N[idx] += 1.0
        node.W[idx] += result * node.to_play


def expand(nodes: list[Node], evaluate: Evaluator, rng: np.random.Generator | None = None) -> list[float]:
    """Score the unfinished ``nodes`` with ``evaluate`` and mark them expanded; returns every node's
    result (the known value where the game is over)."""
    open_ = [n.value is None for n in nodes]
    todo = [n for n, o in zip(nodes, open_, strict=True) if o]
    values = iter(evaluate(todo, rng) if todo else ())
    for n in todo:
        n.expanded = True
    return [float(next(values)) if o else n.value for n, o in zip(nodes, open_, strict=True)]


def simulate(roots: list[Node], simulations: int, select: Callable[[Node, np.random.Generator | None], int],
             evaluate: Evaluator, rng: np.random.Generator | None = None) -> None:
    """``simulations`` simulations from every root whose result is unknown, in lock step: each step
    walks down every tree by ``select`` and scores all their leaves with one call of ``evaluate``.

    The roots must be expanded (``expand``, or marked so when the evaluator has nothing to give them).
    Each simulation first calls ``check_stop`` (``ttt.players.stop``: a server's deadline or cancel).
    """
    live = [r for r in roots if r.value is None]
    for _ in range(simulations if live else 0):
        check_stop()
        paths, leaves = [], []
        for root in live:
            node, path = root, []
            while node.expanded and node.value is None:
                idx = select(node, rng)
                path.append((node, idx))
                node = node.child(idx)
            paths.append(path)
            leaves.append(node)
        for path, result in zip(paths, expand(leaves, evaluate, rng), strict=True):
            backup(path, result)
