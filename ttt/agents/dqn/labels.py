"""Labels the rules give exactly, trained beside the TD(0) targets.

* Rule labels (``rule_targets``): every afterstate whose value the rules know (``ttt.games.exact``:
  a win +1, a move that lets the opponent win at once -1, a fork ``gamma``) with that value as its
  target, from the learner's own positions (``rule_labels``) or sampled from positions of random play
  (``random_labels``), and with ``search_labels`` random-play afterstates the rules do not value,
  toward the network's value of the opponent's best reply (``reply_targets``).
* Rank pairs (``rank_pairs``): two afterstates of one position whose order the rules know (a move that
  does not lose at once above one that does, a win above a non-win), trained by a hinge on the logits
  (``rank_loss``) at ``rank_weight`` beside the TD loss (``rank_labels``); with ``rank_head`` on the
  rank head's scores, not on the value.

``random_position_labels`` draws both from the trainer's games of random play: they reach positions
with several open threats at once, which the learner's own games rarely do.
"""

from __future__ import annotations

import numpy as np
import torch.nn.functional as F

from ttt.agents.dqn.moves import move_scores, selection_values
from ttt.agents.dqn.td import Targets
from ttt.games import BatchedGames, Game, random_legal_actions
from ttt.games.arrays import arrays_of
from ttt.games.exact import NO_RULES, Rules, rule_values
from ttt.games.threats import MoveTactics, move_tactics
from ttt.nets.structured import ValueNet

RANK_MARGIN = 1.0  # the margin of rank_loss, on the output unit's input (values are its tanh)


def rule_targets(rows: np.ndarray, views: np.ndarray, tactics: MoveTactics, gamma: float, game: Game,
                 defence: int = 0, rng: np.random.Generator | None = None) -> Targets:
    """The afterstates of ``views`` whose values the rules know (``rule_values``; with ``defence`` > 0 up
    to that many others per position checked for an opponent fork, drawn by ``rng``), as training examples."""
    xp = arrays_of(views)
    value, known = rule_values(views, tactics, gamma, game, defence, rng)
    e, cell = xp.nonzero(known)
    return Targets(_afterstates(views, e, cell), value[e, cell], rows[e])


def rank_orders(legal, tactics: MoveTactics, forced: bool = False) -> tuple[tuple, tuple]:
    """The two orders the rules know, as ``(higher, lower)`` move masks: a move that does not let the
    opponent win at once above one that does, a winning move above one that does not win. With
    ``forced`` the first order only where exactly one move does not lose (a forced block): there the
    higher move is the best move, and lifting it cannot reorder moves the rules do not value."""
    safe = legal & ~tactics.loss
    if forced:
        safe = safe & (safe.sum(1) == 1)[:, None]
    return (safe, tactics.loss), (tactics.win, legal & ~tactics.win)


def rank_pairs(views: np.ndarray, legal: np.ndarray, tactics: MoveTactics, count: int, rng,
               values: np.ndarray | None = None, moves: int = 0, forced: bool = False,
               moves_wins: bool = True) -> tuple:
    """Pairs of afterstates of one position whose order the rules know exactly: ``(higher, lower,
    above)``, float32 boards from the mover's view, ``lower`` (N, cells) and ``higher`` (M, cells),
    with lower move i below ``higher[above[i]]``.

    A move that does not let the opponent win at once is worth more than one that does (-1), and a
    winning move (+1) more than one that does not win. From up to ``count // 2`` of the positions
    ``views`` (mover's view) that have both kinds of move, for each of the two orders, one pair each,
    the two moves drawn at random by ``rng``; ``above`` is then ``arange(N)``.

    With ``moves`` = K > 0 and the network's ``values`` of the afterstates ((B, cells); or logits: only
    their order counts), each position pairs its (random) higher move with the K lower moves the
    network values most instead (all of them when it has fewer; values closer than 1e-3 are ordered at
    random): the suites ask for the best move above every other, and the pairs it gets most wrong carry
    the hinge; ``higher`` then holds each position's higher move once (with ``moves_wins`` false only
    in the first order: the second pairs one non-win drawn at random). With ``forced`` the first order
    comes only from positions with one move that does not lose (``rank_orders``). numpy arrays or
    tensors on one device, alike.
    """
    xp = arrays_of(views)
    share = count // 2
    higher, lower, above, offset = [], [], [], 0  # offset: rows of higher so far
    for order, (hi, lo) in enumerate(rank_orders(legal, tactics, forced)):
        rows = xp.flatnonzero(hi.any(1) & lo.any(1))
        if len(rows) > share:
            keys = xp.random(rng, (1, len(rows)))
            rows = rows[keys[0] <= xp.kth_smallest(keys, share)[0]] if share else rows[:0]
        keys = xp.random(rng, (len(rows), hi.shape[1]))
        up = xp.where(hi[rows], keys, float("inf")).argmin(1)
        top = _afterstates(views, rows, up)
        higher.append(top)
        if moves and (order == 0 or moves_wins):
            noise = 1e-3 * xp.random(rng, (len(rows), lo.shape[1]))
            keys = xp.where(lo[rows], noise - values[rows], float("inf"))  # smallest: valued most
            e, cell = xp.nonzero(lo[rows] & (keys <= xp.kth_smallest(keys, min(moves, lo.shape[1]))))
            lower.append(_afterstates(views, rows[e], cell))
            above.append(offset + e)
        else:
            cell = xp.where(lo[rows], xp.random(rng, (len(rows), lo.shape[1])), 2.0).argmin(1)
            lower.append(_afterstates(views, rows, cell))
            above.append(offset + xp.arange(len(rows)))
        offset += len(rows)
    return xp.concat(higher), xp.concat(lower), xp.concat(above)


def _afterstates(views, rows, cells):
    """The boards ``views[rows]`` (mover's view) with the mover's piece on ``cells``, float32."""
    xp = arrays_of(views)
    after = xp.astype(views[rows], "float32")
    after[xp.arange(len(rows)), cells] = 1.0
    return after


def rank_loss(net: ValueNet, higher, lower, above=None):
    """Mean hinge loss ``max(0, RANK_MARGIN - (z(higher) - z(lower)))`` on the logits z of the value
    (values are tanh(z)): near -1 or +1 the values crowd together, their logits do not. With ``above``
    (``rank_pairs``), lower board i is paired with ``higher[above[i]]``. With a rank head
    (``agent.parts.labels.rank_head``) z is that head's score (``ValueNet.rank_logit``), and the value head is not
    trained by the hinge."""
    z = net.rank_logit(higher)
    return F.relu(RANK_MARGIN - ((z if above is None else z[above]) - net.rank_logit(lower))).mean()


def random_position_labels(games: BatchedGames, settings, net: ValueNet, rng, gamma: float,
                           rules: Rules) -> tuple[Targets, tuple | None]:
    """Up to ``settings.random_labels`` afterstates drawn from the rule labels (win, loss, fork) of the
    positions of the random-play ``games``, and up to ``settings.rank_labels`` pairs of their afterstates
    (``rank_pairs``: ``(higher, lower, above)``, None without); the games then move on one random ply.
    ``settings``: the ``labels`` part's (``parts.labels.LabelSettings``); ``gamma`` values the forks,
    ``rules`` (the training rules) the search labels' replies."""
    xp, game = games.xp, games.game
    board, to_play, legal = games.board, games.to_play, games.legal_mask()
    views = xp.astype(board * to_play[:, None], "float32")
    t = move_tactics(board, to_play, legal, game)
    if settings.random_labels:
        search = (legal, net, rules) if settings.search_labels else None
        labels = sampled_rule_labels(views, t, settings.random_labels, float(gamma), game, rng, search)
    else:  # rank pairs only
        labels = Targets(views[:0], xp.zeros(0, "float32"), xp.zeros(0, "int64"))
    pairs = None
    if settings.rank_labels:
        values = None
        if settings.rank_moves:
            # the network's values where rank_pairs may look: positions with both kinds of move
            (hi1, lo1), (hi2, lo2) = rank_orders(legal, t, settings.rank_forced)
            ranked = hi1.any(1) & lo1.any(1)
            if settings.rank_moves_wins:  # the win order looks too
                ranked = ranked | (hi2.any(1) & lo2.any(1))
            ranked = xp.flatnonzero(ranked)
            values = xp.full(tuple(legal.shape), float("-inf"), "float32")
            # the order the hinge trains: the rank head's scores, with one
            values[ranked] = xp.from_tensor(move_scores(net, games, ranked, NO_RULES)[0])
        pairs = rank_pairs(views, legal, t, settings.rank_labels, rng, values, settings.rank_moves,
                           settings.rank_forced, settings.rank_moves_wins)
    games.play(random_legal_actions(legal, rng), check=False)
    games.reset(games.done)
    return Targets(labels.obs, labels.targets, xp.full(len(labels.targets), -1, "int64")), pairs


def sampled_rule_labels(views, tactics: MoveTactics, count: int, gamma: float, game: Game, rng,
                        search: tuple | None = None) -> Targets:
    """Up to ``count`` rule-labelled afterstates of the positions ``views``, a third of each kind
    (win, loss, fork). With ``search = (legal, net, rules)`` a quarter of each kind, and a quarter
    afterstates the rules do not value, trained toward the network's value of the opponent's best
    reply (``reply_targets``)."""
    xp = arrays_of(views)
    labels = rule_targets(xp.arange(len(views)), views, tactics, gamma, game)
    # a bounded sample, a third for each kind of label: immediate losses outnumber wins and forks by
    # some thirty to one in random play, and a uniform sample taught the network little but losses
    share = count // (4 if search is not None else 3)
    keys = xp.random(rng, (1, len(labels.targets)))[0]
    pick = []
    for label in (labels.targets == 1.0, labels.targets == -1.0, (labels.targets > 0) & (labels.targets < 1)):
        idx = xp.flatnonzero(label)
        if len(idx) > share:
            idx = idx[keys[idx] <= xp.kth_smallest(keys[idx][None], share)[0]] if share else idx[:0]
        pick.append(idx)
    pick = xp.concat(pick)
    labels = Targets(labels.obs[pick], labels.targets[pick], labels.rows[pick])
    if search is not None and share:
        legal, net, rules = search
        rest = legal & ~(tactics.win | tactics.loss | tactics.fork)
        keys = xp.where(rest, xp.random(rng, tuple(rest.shape)), 2.0).reshape(-1)
        if int(rest.sum()) > share:
            rest = rest & (keys <= xp.kth_smallest(keys[None], share)[0]).reshape(tuple(rest.shape))
        e, cell = xp.nonzero(rest)
        after = _afterstates(views, e, cell)
        labels = Targets.concat([labels, Targets(after, reply_targets(net, after, game, gamma, rules), e)])
    return labels


def reply_targets(net: ValueNet, after, game: Game, gamma: float, rules) -> np.ndarray:
    """Targets for afterstates ``after`` (N, cells; mover's view, +1 the mover, none of them terminal)
    from a search of the opponent's replies, valued by ``net`` with ``rules`` (exact wins, ...); the
    value head's values (a target is a value), the rank head's order plays no part.

    The opponent takes its best reply, worth v to it. By the TD(0) rule's values (a win on the
    opponent's next move -1, undiscounted; a win of the mover on its next move gamma) the afterstate is
    then worth ``-v`` when v > 0 (the opponent is winning: its win is as near to it as to us) and
    ``-gamma * v`` when v <= 0 (we are winning: our win is one move further from us than from the
    reply). A full board is a draw, 0. numpy arrays or tensors on one device, alike.
    """
    xp = arrays_of(after)
    n = len(after)
    if n == 0:
        return xp.zeros(0, "float32")
    replies = BatchedGames(game, n, xp.device)
    replies.board[:] = xp.astype(after, "int8")
    replies.to_play[:] = -1
    replies.num_moves[:] = xp.astype((replies.board != 0).sum(1), "int16")
    values = xp.from_tensor(selection_values(net, replies, xp.arange(n), rules, gamma=gamma))
    best = values.max(1) if not xp.is_torch else values.amax(1)
    full = ~replies.legal_mask().any(1)
    best = xp.where(full, 0.0, best)
    return xp.astype(xp.where(best > 0, -best, -gamma * best), "float32")
