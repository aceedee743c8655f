"""TD(0) afterstate value learning with a neural network (van de Steeg, Drugan & Wiering 2015, Algorithm 1).

Reads top to bottom: settings, move selection, the TD(0) rule over a batch of games, the curriculum,
the training loop with evaluation and checkpoints, the trained player, and a throughput benchmark.

The network scores afterstates V(s'): the board right after a move, seen from the player who just
moved (+1 own piece, -1 opponent, 0 empty), so one network plays either seat.

The learning rule, per learning seat of each game:

* after each of its moves except its first, V(previous afterstate) moves toward
  ``gamma * V(new afterstate)`` (intermediate rewards are 0), the target detached;
* when its own move ends the game, the new afterstate is terminal: its exact value is the reward
  r (+1 win, 0 draw), so the previous afterstate's target is ``gamma * r`` and the terminal
  afterstate itself moves toward r (so that winning moves score +1 when moves are chosen);
* when the opponent's move ends the game, its last afterstate moves toward the reward (-1 loss,
  0 draw), with no bootstrap. Losses are learned.

``num_envs`` games run side by side; each ply is one forward pass over every legal afterstate of
every game where a learner moves, and one optimiser step over every TD target of that ply. With
``num_envs=1`` this is exactly the online per-game algorithm.

Devices (``device=cpu|cuda``, ``ttt.device``). The trainer is written once against
``ttt.games.arrays``: on the CPU the games and the trainer's per-game arrays are numpy arrays and
random numbers come from a numpy generator; on a GPU they are torch tensors there, drawn from a
``torch.Generator``, and the networks, move selection, the TD targets and the random, benchmark and
frozen opponents run there too. Per ply only sizes (how many games a learner moves in, how many
ended) reach the host; the logged loss is summed on the device and read when it is logged.

TensorBoard tags (besides the ``eval/`` tags of ``ttt.training``): ``train/td_loss``,
``train/epsilon``, ``train/opponent`` (0 random, 1 frozen, 2 benchmark, 3 self_play),
``train/episodes_per_sec``, ``train/benchmark_share`` (share of the games in progress played against
the benchmark player) and ``train/frozen_refreshes`` (copies taken of the frozen opponent).
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf

from ttt.checkpoint import CheckpointError, save_checkpoint
from ttt.config import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, UNIT, agent_settings, check_choice, check_ranges
from ttt.device import array_device, module_device, torch_device
from ttt.games import BatchedGames, Game, State, make_game, random_legal_actions
from ttt.games.arrays import NUMPY, arrays_for, arrays_of
from ttt.games.threats import MoveTactics, completing_moves, move_tactics, playable, threat_depths
from ttt.nets.structured import ValueNet, build_value_net
from ttt.players import BatchPlayer, BenchmarkPlayer
from ttt.training import OPPONENT_PHASES, Run, run_command

USES_DEVICE = True  # runs on the run's device (ttt.train): games, networks, targets and opponents


# ---------------------------------------------------------------------------------------- settings
@dataclass
class Config:
    """Settings of ``configs/agent/dqn.yaml`` (checked by Hydra at composition)."""

    name: str = "dqn"
    optimizer: str = "adam"  # adam | sgd
    lr: float = 1e-3
    first_lr: float = 0.0  # learning rate of the first (line-detector) layer; 0 = lr
    gamma: float = 0.9
    loss: str = "huber"  # huber | mse
    epsilon: float = 0.1  # exploration rate at the start
    epsilon_final: float = 0.1  # reached linearly after epsilon_decay_episodes (equal: constant)
    epsilon_decay_episodes: int = 0
    opponent: str = "random"  # random | frozen | benchmark | self_play: before switch_episode
    opponent_after: str = "frozen"  # from switch_episode on
    switch_episode: int = 5000
    refresh_every: int = 0  # re-take the frozen copy every this many episodes (0 = never)
    frozen_epsilon: float = 0.0  # the frozen copy's own exploration
    benchmark_fraction: float = 0.0  # share of games against the benchmark player after the switch
    final_eval_games: int = 2000  # games per opponent in the final evaluation (half per seat)
    exact_wins: bool = True  # a winning afterstate scores its reward (+1) in move selection
    exact_losses: bool = False  # an afterstate that lets the opponent win at once scores -1 in move selection
    exact_forks: bool = False  # a fork scores gamma, a move that lets the opponent fork -gamma, in move selection
    play_forks: bool = False  # the trained player (evaluations, checkpoint) uses the fork rule; training moves do not
    play_threats: int = 0  # ... and chains of up to this many forcing threats ending in a fork (Rules.threats)
    rule_labels: bool = False  # also train every legal afterstate the rules value exactly (win, loss, fork)
    fork_defence_labels: int = 0  # with rule_labels, up to this many other afterstates per position are
    # checked for an opponent fork (a loss in two of its moves, worth -gamma); 0 = none
    frozen_pool: int = 1  # past frozen copies kept; each frozen-opponent game draws one of them
    random_labels: int = 0  # rule-labelled afterstates per ply drawn from as many games of random play (0 = none)
    rank_labels: int = 0  # pairs of afterstates per ply, from as many games of random play, whose order the
    # rules know (a non-losing move above a losing one, a win above a non-win), trained by a margin loss (rank_pairs)
    rank_hardest: bool = False  # with rank_labels, each position also gives a pair whose lower move is the one
    # the network values most
    rank_moves: int = 0  # with rank_labels, each position pairs its higher move with the K lower moves the
    # network values most (rank_labels // 2 positions of each order); 0 = with one drawn at random
    rank_weight: float = 1.0  # the weight of the rank loss beside the TD loss
    rank_higher: str = "random"  # with rank_labels: each pair's higher move drawn at random, or (best) the one of
    # its kind the network values most, so that the hinge leaves the order among the higher moves as it is
    rank_forced: bool = False  # with rank_labels: the non-losing-above-losing pairs only from positions where
    # exactly one move does not lose (a forced block), whose higher move is then the best move
    rank_losses: str = "hinge"  # with rank_labels: the losing moves of the non-losing-above-losing pairs are
    # trained by the hinge (both moves of a pair move), or (label) toward their exact value -1 beside the TD
    # targets, their higher moves untrained, or (both) by the hinge and as labels
    rank_moves_wins: bool = True  # with rank_moves: the win-above-non-win pairs take the K non-wins valued most
    # too; false: one drawn at random (the network alone takes its wins without), and no values are needed there
    search_labels: bool = False  # with random_labels, a quarter of them are afterstates the rules do not value,
    # trained toward the network's value of the opponent's best reply (reply_targets)
    symmetry_augment: bool = False  # train each target on a random symmetric image of its afterstate

    def __post_init__(self) -> None:
        """Fail early, naming the key, on values the schema's types cannot rule out."""
        for key in ("opponent", "opponent_after"):
            check_choice("agent.", self, key, OPPONENTS)
        check_choice("agent.", self, "optimizer", ("adam", "sgd"))
        check_choice("agent.", self, "loss", ("huber", "mse"))
        check_choice("agent.", self, "rank_higher", ("random", "best"))
        check_choice("agent.", self, "rank_losses", ("hinge", "label", "both"))
        check_ranges("agent.", self, {"lr": NON_NEGATIVE, "first_lr": NON_NEGATIVE, "gamma": UNIT, "epsilon": UNIT,
                                      "epsilon_final": UNIT,
                                      "frozen_epsilon": UNIT, "benchmark_fraction": UNIT,
                                      "epsilon_decay_episodes": NON_NEGATIVE, "switch_episode": NON_NEGATIVE,
                                      "refresh_every": NON_NEGATIVE, "final_eval_games": AT_LEAST_ONE,
                                      "frozen_pool": AT_LEAST_ONE, "fork_defence_labels": NON_NEGATIVE,
                                      "random_labels": NON_NEGATIVE, "rank_labels": NON_NEGATIVE,
                                      "rank_moves": NON_NEGATIVE, "rank_weight": NON_NEGATIVE})


OPPONENTS = tuple(OPPONENT_PHASES)  # random, frozen, benchmark, self_play


def epsilon_at(a, episode: int) -> float:
    """The exploration rate after ``episode`` training games (linear schedule)."""
    if a.epsilon_decay_episodes <= 0:
        return float(a.epsilon)
    frac = min(episode / a.epsilon_decay_episodes, 1.0)
    return float(a.epsilon + frac * (a.epsilon_final - a.epsilon))


def make_optimizer(a, net: torch.nn.Module) -> torch.optim.Optimizer:
    """SGD or Adam at ``a.lr``; the first layer's parameters at ``a.first_lr`` when that is set (> 0)."""
    if a.first_lr > 0:
        params = [{"params": net.first.parameters(), "lr": a.first_lr}, {"params": net.rest.parameters()}]
    else:
        params = net.parameters()
    if a.optimizer == "sgd":
        return torch.optim.SGD(params, lr=a.lr)
    return torch.optim.Adam(params, lr=a.lr)


# ---------------------------------------------------------------------------------- move selection
@dataclass(frozen=True)
class Rules:
    """Exact values the rules give, used in move selection in place of the network's estimates.

    ``wins``: a move that completes a line scores its reward, +1 (a tanh output only approaches 1, and
    a position one move from a win is worth gamma, so the estimate alone ranks them too close).
    ``losses``: a move after which the opponent can complete a line scores -1. ``forks``: a move that
    makes two winning cells the opponent cannot both block scores ``gamma`` (a win on the next move),
    and one after which the opponent has such a move scores ``-gamma``. ``threats`` = D: a move that wins
    through a chain of d <= D threats (each block forced) ending in a fork scores ``gamma**(d+1)``, and
    one after which the opponent has such a move ``-gamma**(d+1)`` (``threat_forks``). All off: the network alone.
    """

    wins: bool = True
    losses: bool = False
    forks: bool = False
    gamma: float = 0.9
    threats: int = 0

    @staticmethod
    def of(a: Config) -> Rules:
        return Rules(bool(a.exact_wins), bool(a.exact_losses), bool(a.exact_forks), float(a.gamma))

    def needs_tactics(self) -> bool:
        return self.losses or self.forks or self.threats > 0


NO_RULES = Rules(wins=False)


@torch.inference_mode()
def afterstate_values(net: ValueNet, games: BatchedGames, rows: np.ndarray, rules: Rules = Rules(),
                      tactics: MoveTactics | None = None) -> torch.Tensor:
    """(len(rows), cells) values of every legal afterstate of the games ``rows``, -inf where illegal.

    A tensor where the games are: on the CPU for numpy games, else on their device.

    One forward pass, no autograd; the board is seen from the player to move, whose piece is +1.
    ``rules`` replace the estimates of the afterstates the rules value exactly; ``tactics``
    (``move_tactics`` of these rows) is computed when needed and not given.
    """
    xp = games.xp
    board, to_play, legal = games.board[rows], games.to_play[rows], games.legal_mask()[rows]
    views = board * to_play[:, None]
    device = module_device(net)

    def tensor(x):  # the games' arrays as tensors where the network is
        return xp.to_tensor(x).to(device)

    values = net.afterstate_values(tensor(xp.astype(views, "float32")), tensor(legal))
    if rules.needs_tactics():
        t = move_tactics(board, to_play, legal, games.game) if tactics is None else tactics
        if rules.forks or rules.threats > 0:
            exact, known = rule_values(views, t, rules.gamma, games.game, defence=games.game.num_cells,
                                       threats=rules.threats)
            values = torch.where(tensor(known), tensor(exact), values)
        if rules.losses:
            values.masked_fill_(tensor(t.loss), -1.0)
    if rules.wins:
        values.masked_fill_(tensor(completing_moves(board, to_play, legal, games.game)), 1.0)
    return values.to(games.device or "cpu")


def epsilon_greedy(values: torch.Tensor, epsilon: float, rng, xp=NUMPY):
    """Argmax of each row (illegal entries are -inf), or with probability epsilon a random legal move.

    numpy actions and a numpy ``rng`` by default; with ``xp`` a device's arrays, tensors there and a
    ``torch.Generator``.
    """
    values = xp.from_tensor(values)
    actions = values.argmax(1)
    if epsilon > 0:
        explore = xp.random(rng, len(actions)) < epsilon
        if explore.any():
            actions[explore] = random_legal_actions(values[explore] > float("-inf"), rng)
    return actions


# ------------------------------------------------------------------------- TD(0) targets of one ply
@dataclass
class Targets:
    """Training examples of one ply: afterstates (mover's view), their targets and the games they came from."""

    obs: np.ndarray  # (N, cells) float32
    targets: np.ndarray  # (N,) float32
    rows: np.ndarray  # (N,) game index

    @staticmethod
    def concat(parts: list[Targets]) -> Targets:
        xp = arrays_of(parts[0].obs)
        return Targets(xp.astype(xp.concat([p.obs for p in parts]), "float32"),
                       xp.astype(xp.concat([p.targets for p in parts]), "float32"),
                       xp.astype(xp.concat([p.rows for p in parts]), "int64"))


def td0_targets(rows: np.ndarray, prev: np.ndarray, has_prev: np.ndarray, after: np.ndarray,
                new_value: np.ndarray, terminal: np.ndarray, reward: np.ndarray, gamma: float) -> Targets:
    """The TD(0) targets of the movers' seats after one move in the games ``rows``.

    Per mover: its previous afterstate ``prev`` (when ``has_prev``) moves toward ``gamma * V(after)``,
    or ``gamma * reward`` when the new afterstate ``after`` is terminal; a terminal ``after`` itself moves
    toward ``reward`` (+1 win, 0 draw). ``new_value`` is V(after) (a constant: no gradient).
    numpy arrays or tensors on one device, alike (``ttt.games.arrays``).
    """
    boot = arrays_of(reward).where(terminal, reward, new_value)
    return Targets.concat([
        Targets(prev[has_prev], gamma * boot[has_prev], rows[has_prev]),
        Targets(after[terminal], reward[terminal], rows[terminal]),
    ])


def reply_targets(net: ValueNet, after: np.ndarray, game: Game, gamma: float, rules: Rules) -> np.ndarray:
    """Targets for afterstates ``after`` (N, cells; mover's view, +1 the mover, none of them terminal)
    from a search of the opponent's replies, valued by ``net`` with ``rules`` (exact wins, ...).

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
    values = xp.from_tensor(afterstate_values(net, replies, xp.arange(n), rules))
    best = values.max(1) if not xp.is_torch else values.amax(1)
    full = ~replies.legal_mask().any(1)
    best = xp.where(full, 0.0, best)
    return xp.astype(xp.where(best > 0, -best, -gamma * best), "float32")


RANK_MARGIN = 1.0  # the margin of rank_loss, on the output unit's input (values are its tanh)


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
               values: np.ndarray | None = None, moves: int = 0, best_higher: bool = False,
               forced: bool = False, moves_wins: bool = True, hardest: bool = True,
               split: bool = False) -> tuple:
    """Pairs of afterstates of one position whose order the rules know exactly: ``(higher, lower,
    above)``, float32 boards from the mover's view, ``lower`` (N, cells) and ``higher`` (M, cells),
    with lower move i below ``higher[above[i]]``.

    A move that does not let the opponent win at once is worth more than one that does (-1), and a
    winning move (+1) more than one that does not win. From up to ``count // 2`` of the positions
    ``views`` (mover's view) that have both kinds of move, for each of the two orders, one pair each,
    the two moves drawn at random by ``rng``. Given the network's ``values`` of the afterstates
    ((B, cells)) and ``hardest``, each such position also gives a second pair: the same higher move
    above the lower move the network values most (the one it would wrongly prefer).

    With ``moves`` = K > 0 and the network's ``values`` (or logits: only their order counts), each
    position pairs its (random) higher move with the K lower moves the network values most instead
    (all of them when it has fewer; values closer than 1e-3 are ordered at random): the suites ask
    for the best move above every other, and the pairs it gets most wrong carry the hinge; ``higher``
    then holds each position's higher move once (with ``moves_wins`` false only in the first order:
    the second pairs one non-win drawn at random). Otherwise ``above`` is ``arange(N)``.

    With ``best_higher`` (needs ``values``) each position's higher move is the one of its kind the
    network values most (ties within 1e-3 at random), not one drawn at random: the hinge then lifts the
    move the network would play among the higher ones, and leaves their order as it was. With
    ``forced`` the first order comes only from positions with one move that does not lose
    (``rank_orders``). With ``split`` the result also holds ``(m, n)``: the first ``m`` rows of
    ``higher`` and ``n`` of ``lower`` are the first order's. numpy arrays or tensors on one device,
    alike.
    """
    xp = arrays_of(views)
    share = count // 2
    higher, lower, above, offset = [], [], [], 0  # offset: rows of higher so far
    first = (0, 0)
    for order, (hi, lo) in enumerate(rank_orders(legal, tactics, forced)):
        if order == 1:
            first = (offset, sum(len(x) for x in lower))
        rows = xp.flatnonzero(hi.any(1) & lo.any(1))
        if len(rows) > share:
            keys = xp.random(rng, (1, len(rows)))
            rows = rows[keys[0] <= xp.kth_smallest(keys, share)[0]] if share else rows[:0]
        keys = xp.random(rng, (len(rows), hi.shape[1]))
        if best_higher:  # smallest key: the higher move valued most
            keys = 1e-3 * keys - values[rows]
        up = xp.where(hi[rows], keys, float("inf")).argmin(1)
        top = _afterstates(views, rows, up)
        if moves and (order == 0 or moves_wins):
            noise = 1e-3 * xp.random(rng, (len(rows), lo.shape[1]))
            keys = xp.where(lo[rows], noise - values[rows], float("inf"))  # smallest: valued most
            e, cell = xp.nonzero(lo[rows] & (keys <= xp.kth_smallest(keys, min(moves, lo.shape[1]))))
            higher.append(top)
            lower.append(_afterstates(views, rows[e], cell))
            above.append(offset + e)
            offset += len(rows)
            continue
        higher.append(top)
        cell = xp.where(lo[rows], xp.random(rng, (len(rows), lo.shape[1])), 2.0).argmin(1)
        lower.append(_afterstates(views, rows, cell))
        above.append(offset + xp.arange(len(rows)))
        offset += len(rows)
        if values is not None and hardest and not moves:
            higher.append(top)
            lower.append(_afterstates(views, rows, xp.where(lo[rows], values[rows], float("-inf")).argmax(1)))
            above.append(offset + xp.arange(len(rows)))
            offset += len(rows)
    if split:
        return xp.concat(higher), xp.concat(lower), xp.concat(above), first
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
    (``rank_pairs``), lower board i is paired with ``higher[above[i]]``."""
    z = net.logit(higher)
    return F.relu(RANK_MARGIN - ((z if above is None else z[above]) - net.logit(lower))).mean()


def final_targets(rows: np.ndarray, prev: np.ndarray, has_prev: np.ndarray, reward: np.ndarray) -> Targets:
    """When a game ends on the opponent's move, the waiting seat's last afterstate moves toward its
    reward, ``-reward`` of the mover (-1 loss, 0 draw), with no bootstrap."""
    return Targets(prev[has_prev], -reward[has_prev], rows[has_prev])


DEFENCE_SLICE = 512  # afterstates searched for threat chains at once (bounds memory)


def rule_values(views: np.ndarray, tactics: MoveTactics, gamma: float, game: Game, defence: int = 0,
                rng: np.random.Generator | None = None, threats: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Exact values the rules give for afterstates of the boards ``views`` (mover's view, +1 own):
    ``(value, known)``, both (B, cells).

    A winning move's afterstate is worth +1, a move that lets the opponent win at once -1, and a fork
    (two winning cells the opponent cannot both block) ``gamma``, a win on the mover's next move. With
    ``defence`` > 0, up to that many other legal afterstates per board (drawn by ``rng`` when fewer
    than all) are checked for a fork of the opponent: one there is a loss in two of the opponent's
    moves, worth ``-gamma``. With ``threats`` = D > 0, a move that wins through a chain of d <= D
    threats, each block forced, ending in a fork (``threat_forks``) is worth ``gamma**(d+1)``, and,
    among the afterstates checked, one where the opponent has such a move ``-gamma**(d+1)``. numpy
    arrays or tensors on one device (``rng`` then a ``torch.Generator`` there), alike.
    """
    xp = arrays_of(views)
    value = xp.zeros(tuple(tactics.win.shape), "float32")
    value[tactics.fork] = gamma
    value[tactics.loss] = -1.0
    value[tactics.win] = 1.0
    known = tactics.win | tactics.loss | tactics.fork
    boards = xp.astype(views, "int8")
    reachable = playable(boards, game)
    if threats:  # the shortest chain of threats gives the value
        chain = _threat_depths(boards, xp.full(len(boards), 1, "int8"), reachable, game, tactics, threats)
        for d in range(1, threats + 1):
            attack = (chain == d) & ~known
            value[attack] = gamma ** (d + 1)
            known |= attack
    if defence > 0:
        rest = reachable & ~known
        if defence < rest.shape[1]:
            # a random subset of at most ``defence`` unlabelled moves per board: the smallest random keys
            keys = xp.where(rest, xp.random(rng, tuple(rest.shape)), 2.0)
            rest &= keys <= xp.kth_smallest(keys, defence)
        e_all, a_all = xp.nonzero(rest)
        # in slices of afterstates: the threat chains search every reply of every afterstate, and one
        # pass over a whole evaluation batch would hold gigabytes at once
        for start in range(0, len(e_all), DEFENCE_SLICE if threats else max(len(e_all), 1)):
            e, a = e_all[start: start + DEFENCE_SLICE], a_all[start: start + DEFENCE_SLICE]
            after = xp.astype(views[e], "int8")
            after[xp.arange(len(e)), a] = 1
            them = xp.full(len(e), -1, "int8")
            reach = playable(after, game)
            reply = move_tactics(after, them, reach, game)
            lost = reply.fork.any(1)
            value[e[lost], a[lost]] = -gamma
            known[e[lost], a[lost]] = True
            if threats:
                open_ = xp.flatnonzero(~known[e, a])  # afterstates whose value is not known yet
                e, a = e[open_], a[open_]
                sub = MoveTactics(reply.win[open_], reply.loss[open_], reply.fork[open_])
                chain = _threat_depths(after[open_], them[open_], reach[open_], game, sub, threats)
                longer = xp.where(chain > 0, chain, threats + 1)
                shortest = longer.amin(1) if xp.is_torch else longer.min(1)
                for d in range(1, threats + 1):
                    later = shortest == d
                    value[e[later], a[later]] = -gamma ** (d + 1)
                    known[e[later], a[later]] = True
    return value, known


def _threat_depths(board, player, legal, game: Game, tactics: MoveTactics, depth: int):
    """``threat_depths`` on numpy arrays or tensors (tensors go through the host)."""
    xp = arrays_of(board)
    if not xp.is_torch:
        return threat_depths(board, player, legal, game, tactics, depth)
    host = MoveTactics(*(xp.numpy(m) for m in (tactics.win, tactics.loss, tactics.fork)))
    return xp.asarray(threat_depths(xp.numpy(board), xp.numpy(player), xp.numpy(legal), game, host, depth))


def rule_targets(rows: np.ndarray, views: np.ndarray, tactics: MoveTactics, gamma: float, game: Game,
                 defence: int = 0, rng: np.random.Generator | None = None) -> Targets:
    """The afterstates of ``views`` whose values the rules know (``rule_values``), as training examples."""
    xp = arrays_of(views)
    value, known = rule_values(views, tactics, gamma, game, defence, rng)
    e, a = xp.nonzero(known)
    return Targets(_afterstates(views, e, a), value[e, a], rows[e])


# -------------------------------------------------------------------------- a batch of training games
# the per-game arrays a checkpoint holds: the BatchedGames state, then the trainer's own
GAME_ARRAYS = ("board", "to_play", "done", "winner", "num_moves", "last_action")
TRAINER_ARRAYS = ("agent_seat", "kind", "pool_index", "prev", "has_prev")


class Trainer:
    """``num_envs`` training games, the learning network, its optimiser and the opponents.

    ``step()`` plays one ply in every game and makes one TD(0) update; it returns that ply's training
    examples. Everything it needs to continue is in ``state_dict()``.

    ``device`` ``"cpu"`` (numpy games, ``rng`` a ``np.random.Generator``) or ``"cuda"`` (everything on
    the GPU, ``rng`` a ``torch.Generator`` there; ``arrays_for(array_device(device)).generator(seed)``
    makes either). ``ttt.device.TORCH_CPU`` runs the GPU's code path with tensors on the CPU.
    """

    def __init__(self, game: Game, network_cfg, agent_cfg, num_envs: int, rng,
                 net: ValueNet | None = None, device: str = "cpu") -> None:
        # a plain dataclass: the loop reads settings every ply, and DictConfig access is slow
        agent_cfg = agent_settings(agent_cfg, Config)
        self.game, self.a, self.rng = game, agent_cfg, rng
        self.rules = Rules.of(agent_cfg)
        self.device = device
        self.xp = xp = arrays_for(array_device(device))
        self.net = (build_value_net(network_cfg, game) if net is None else net).to(torch_device(device))
        self.optimizer = make_optimizer(agent_cfg, self.net)
        self.pool: list[ValueNet] = []  # frozen copies, oldest first
        self.frozen_taken_at = -1
        self.frozen_refreshes = 0
        self.benchmark = BenchmarkPlayer(game)
        self.games = BatchedGames(game, num_envs, xp.device)
        envs = xp.arange(num_envs)
        self.agent_seat = xp.astype(xp.where(envs % 2 == 0, 1, -1), "int8")  # seats alternate per game
        self.kind = xp.zeros(num_envs, "int8")  # each game's opponent (OPPONENT_PHASES code)
        self.pool_index = xp.zeros(num_envs, "int64")  # the frozen copy each game plays
        self.prev = xp.zeros((num_envs, 2, game.num_cells), "float32")  # last afterstate per seat
        self.has_prev = xp.zeros((num_envs, 2), "bool")
        self.episodes = 0
        self.steps = 0
        # the TD loss summed where the network is (float64: the same sums as Python floats), read when logged
        self.loss_sum = torch.zeros((), dtype=torch.float64, device=torch_device(device))
        self.loss_count = 0
        self._refresh_frozen()
        self._new_games(envs, xp.zeros(num_envs, "int64"))
        # positions of random play, one ply further every step, labelled by the rules alone: the positions
        # self-play rarely reaches (several open threats at once) still teach the network what the rules know
        labels = max(agent_cfg.random_labels, agent_cfg.rank_labels)
        self.label_games = BatchedGames(game, labels, xp.device) if labels else None

    @property
    def frozen(self) -> ValueNet | None:
        """The newest frozen copy (None before the curriculum takes one)."""
        return self.pool[-1] if self.pool else None

    # ---- curriculum
    def phase(self) -> str:
        """The opponent of games that start now."""
        return self.a.opponent if self.episodes < self.a.switch_episode else self.a.opponent_after

    def phase_label(self) -> str:
        """The opponents of games that start now, for people: e.g. ``80% benchmark / 20% frozen``."""
        name, share = self.phase(), self.a.benchmark_fraction
        if name == "frozen" and self.a.frozen_pool > 1:
            name = f"frozen (pool of {len(self.pool)})"
        if self.episodes < self.a.switch_episode or share <= 0:
            return name
        return "benchmark" if share >= 1 else f"{share:.0%} benchmark / {1 - share:.0%} {name}"

    def _new_games(self, envs, episodes) -> None:
        """Draw the opponents of the games starting in ``envs`` (and their frozen copies); game i
        starts when ``episodes[i]`` games have been played. Drawn in the order of ``envs``: the
        benchmark-share draws first, then the pool draws."""
        xp, a = self.xp, self.a
        before = episodes < a.switch_episode
        kind = xp.astype(xp.where(before, OPPONENT_PHASES[a.opponent], OPPONENT_PHASES[a.opponent_after]), "int8")
        if a.benchmark_fraction > 0:
            after = xp.flatnonzero(~before)
            if len(after):
                benchmark = xp.random(self.rng, len(after)) < a.benchmark_fraction
                kind[after] = xp.astype(xp.where(benchmark, OPPONENT_PHASES["benchmark"], kind[after]), "int8")
        self.kind[envs] = kind
        self.pool_index[envs] = max(len(self.pool) - 1, 0)
        if len(self.pool) > 1:
            frozen = envs[kind == OPPONENT_PHASES["frozen"]]
            if len(frozen):
                self.pool_index[frozen] = xp.integers(self.rng, len(self.pool), len(frozen))

    def _refresh_frozen(self) -> None:
        """Take a frozen copy of the weights when the curriculum switches to it, and every refresh_every;
        the pool keeps the newest ``frozen_pool`` copies."""
        if self.phase() != "frozen" and self.a.opponent != "frozen":
            return
        due = not self.pool or (self.a.refresh_every > 0
                                and self.episodes - self.frozen_taken_at >= self.a.refresh_every)
        if due:
            self.pool.append(copy.deepcopy(self.net).requires_grad_(False))
            if len(self.pool) > self.a.frozen_pool:
                self.pool.pop(0)
                self.pool_index -= 1  # games in progress keep their copy (or the oldest one left)
                self.xp.put_where(self.pool_index, self.pool_index < 0, 0)
            self.frozen_taken_at = self.episodes
            self.frozen_refreshes += 1

    def learner_mask(self):
        """Games whose player to move learns: the agent's seat, or both seats in self-play games."""
        return (self.games.to_play == self.agent_seat) | (self.kind == OPPONENT_PHASES["self_play"])

    def _tactics(self, rows) -> MoveTactics | None:
        if not (self.rules.needs_tactics() or self.a.rule_labels) or not len(rows):
            return None
        g = self.games
        return move_tactics(g.board[rows], g.to_play[rows], g.legal_mask()[rows], self.game)

    # ---- one ply in every game
    def step(self, actions=None) -> Targets:
        """Play one ply everywhere and learn from it; ``actions`` (one per game) scripts every move.

        Returns the ply's training examples (before any symmetry augmentation), on the trainer's device."""
        g, rng, a, xp = self.games, self.rng, self.a, self.xp
        mover = xp.copy(g.to_play)
        lrn = xp.flatnonzero(self.learner_mask())
        chosen = xp.full(len(g), -1, "int64")
        tactics = self._tactics(lrn)
        values = afterstate_values(self.net, g, lrn, self.rules, tactics) if len(lrn) else None
        if actions is not None:
            chosen[:] = xp.asarray(actions)
        else:
            if len(lrn):
                chosen[lrn] = epsilon_greedy(values, epsilon_at(a, self.episodes), rng, xp)
            self._opponent_moves(xp.flatnonzero(~self.learner_mask()), chosen)
        rows = xp.arange(len(lrn))
        new_value = xp.from_tensor(values[xp.to_tensor(rows), xp.to_tensor(chosen[lrn])]) if len(lrn) \
            else xp.zeros(0, "float32")
        # the learners' boards before the move and their new afterstates, from the mover's view
        views = xp.astype(g.board[lrn] * mover[lrn, None], "float32")
        after = xp.copy(views)
        after[rows, chosen[lrn]] = 1.0

        # scripted moves are checked; chosen ones come from legal masks (on a GPU, checking would wait for it)
        ended = xp.flatnonzero(g.play(chosen, check=actions is not None or not xp.is_torch))
        reward = xp.astype(xp.astype(g.winner, "int64") * mover, "float32")  # the mover's view, 0 if not over
        seat = xp.astype(mover[lrn] < 0, "int64")
        other = xp.astype(mover[ended] > 0, "int64")  # seat index of the player who did not move
        parts = [
            td0_targets(lrn, self.prev[lrn, seat], self.has_prev[lrn, seat], after, new_value,
                        g.done[lrn], reward[lrn], float(a.gamma)),
            final_targets(ended, self.prev[ended, other], self.has_prev[ended, other], reward[ended]),
        ]
        if a.rule_labels and tactics is not None:
            parts.append(rule_targets(lrn, views, tactics, float(a.gamma), self.game, a.fork_defence_labels, rng))
        pairs = None
        if self.label_games is not None:
            labels, pairs = self._random_position_labels()
            parts.append(labels)
        batch = Targets.concat(parts)
        self._update(batch.obs, batch.targets, pairs)

        # remember the learners' afterstates; start new games where games ended
        self.prev[lrn, seat] = after
        self.has_prev[lrn, seat] = True
        self.steps += 1
        if len(ended):
            self.has_prev[ended] = False
            self.agent_seat[ended] *= -1
            g.reset(g.done)
            self._new_games(ended, self.episodes + 1 + xp.arange(len(ended)))
            self.episodes += len(ended)
            self._refresh_frozen()
        return batch

    def _random_position_labels(self) -> tuple[Targets, tuple | None]:
        """Up to ``random_labels`` afterstates drawn from the rule labels (win, loss, fork) of the positions of
        the random-play games, and up to ``rank_labels`` pairs of their afterstates (``rank_pairs``, None
        without); the games then move on one random ply."""
        lg, xp, a = self.label_games, self.xp, self.a
        board, to_play, legal = lg.board, lg.to_play, lg.legal_mask()
        views = xp.astype(board * to_play[:, None], "float32")
        t = move_tactics(board, to_play, legal, self.game)
        if a.random_labels:
            labels = self._sampled_rule_labels(views, legal, t)
        else:  # rank pairs only
            labels = Targets(views[:0], xp.zeros(0, "float32"), xp.zeros(0, "int64"))
        pairs = None
        if a.rank_labels:
            values = None
            if a.rank_hardest or a.rank_moves or a.rank_higher == "best":
                # the network's values where rank_pairs may look: positions with both kinds of move
                (hi1, lo1), (hi2, lo2) = rank_orders(legal, t, a.rank_forced)
                ranked = hi1.any(1) & lo1.any(1)
                if a.rank_hardest or a.rank_higher == "best" or a.rank_moves_wins:  # the win order looks too
                    ranked = ranked | (hi2.any(1) & lo2.any(1))
                ranked = xp.flatnonzero(ranked)
                values = xp.full(tuple(legal.shape), float("-inf"), "float32")
                values[ranked] = xp.from_tensor(afterstate_values(self.net, lg, ranked, NO_RULES))
            higher, lower, above, (m, n) = rank_pairs(
                views, legal, t, a.rank_labels, self.rng, values, a.rank_moves, a.rank_higher == "best",
                a.rank_forced, a.rank_moves_wins, a.rank_hardest, split=True)
            pairs = higher, lower, above
            if a.rank_losses != "hinge":  # the first order's losing moves as labels, -1
                losing = Targets(lower[:n], xp.full(n, -1.0, "float32"), xp.full(n, -1, "int64"))
                labels = Targets.concat([labels, losing])
            if a.rank_losses == "label":  # ... and no hinge for them
                pairs = higher[m:], lower[n:], above[n:] - m
        lg.play(random_legal_actions(legal, self.rng), check=False)
        lg.reset(lg.done)
        return Targets(labels.obs, labels.targets, xp.full(len(labels.targets), -1, "int64")), pairs

    def _sampled_rule_labels(self, views, legal, t: MoveTactics) -> Targets:
        """``random_labels`` rule-labelled afterstates of the random-play positions ``views`` (a third of
        each kind; with ``search_labels`` a quarter, and a quarter of reply-searched ones)."""
        xp, a = self.xp, self.a
        labels = rule_targets(xp.arange(len(views)), views, t, float(a.gamma), self.game)
        # a bounded sample, a third for each kind of label: immediate losses outnumber wins and forks by
        # some thirty to one in random play, and a uniform sample taught the network little but losses
        share = a.random_labels // (4 if a.search_labels else 3)
        keys = xp.random(self.rng, (1, len(labels.targets)))[0]
        pick = []
        for kind in (labels.targets == 1.0, labels.targets == -1.0, (labels.targets > 0) & (labels.targets < 1)):
            idx = xp.flatnonzero(kind)
            if len(idx) > share:
                idx = idx[keys[idx] <= xp.kth_smallest(keys[idx][None], share)[0]] if share else idx[:0]
            pick.append(idx)
        pick = xp.concat(pick)
        labels = Targets(labels.obs[pick], labels.targets[pick], labels.rows[pick])
        if a.search_labels and share:
            rest = legal & ~(t.win | t.loss | t.fork)
            keys = xp.where(rest, xp.random(self.rng, tuple(rest.shape)), 2.0).reshape(-1)
            if int(rest.sum()) > share:
                rest = rest & (keys <= xp.kth_smallest(keys[None], share)[0]).reshape(tuple(rest.shape))
            e, cell = xp.nonzero(rest)
            after = _afterstates(views, e, cell)
            searched = Targets(after, reply_targets(self.net, after, self.game, float(a.gamma), self.rules), e)
            labels = Targets.concat([labels, searched])
        return labels

    def _opponent_moves(self, rows, chosen) -> None:
        g, rng, a = self.games, self.rng, self.a
        kinds = self.kind[rows]
        pick = rows[kinds == OPPONENT_PHASES["random"]]
        if len(pick):
            chosen[pick] = random_legal_actions(g.legal_mask()[pick], rng)
        pick = rows[kinds == OPPONENT_PHASES["benchmark"]]
        if len(pick):
            chosen[pick] = self.benchmark.act_batch(g, rng)[pick]
        frozen = rows[kinds == OPPONENT_PHASES["frozen"]]
        for i in range(len(self.pool) if len(frozen) else 0):
            pick = frozen[self.pool_index[frozen] == i]
            if len(pick):
                # a frozen copy picks its own best move: the argmax of its afterstate values, same rules
                values = afterstate_values(self.pool[i], g, pick, self.rules, self._tactics(pick))
                chosen[pick] = epsilon_greedy(values, a.frozen_epsilon, rng, self.xp)

    def _symmetric(self, boards):
        """Each board as a random one of its symmetric images (``symmetry_augment``), else as it is."""
        if not self.a.symmetry_augment or not len(boards):
            return boards
        # a symmetry maps lines to lines, so the value is unchanged; the per-line detector weights
        # of every line in an orbit then learn from a threat seen on any of them
        xp = self.xp
        symmetries = xp.table(self.game.symmetries) if xp.is_torch else self.game.symmetries
        perms = symmetries[xp.integers(self.rng, len(symmetries), len(boards))]
        return boards[xp.arange(len(boards))[:, None], perms]

    def _update(self, obs, targets, pairs=None) -> None:
        """One optimiser step on the TD targets of this ply (targets are constants: detached), plus
        ``rank_weight`` times ``rank_loss`` on ``pairs`` (higher, lower, above) when given."""
        if len(targets) == 0:
            return
        xp = self.xp
        pred = self.net(xp.to_tensor(self._symmetric(obs)))
        target = xp.to_tensor(targets)
        loss = F.huber_loss(pred, target) if self.a.loss == "huber" else F.mse_loss(pred, target)
        td_loss = loss.detach()
        if pairs is not None and len(pairs[1]):
            higher, lower, above = pairs
            boards = self._symmetric(xp.concat([higher, lower]))
            higher, lower = xp.to_tensor(boards[:len(higher)]), xp.to_tensor(boards[len(higher):])
            loss = loss + self.a.rank_weight * rank_loss(self.net, higher, lower, xp.to_tensor(above))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.loss_sum += td_loss.double() * len(targets)
        self.loss_count += len(targets)

    def take_loss(self) -> float:
        """Mean TD loss since the previous call (nan when there was no update)."""
        mean = float(self.loss_sum) / self.loss_count if self.loss_count else float("nan")
        self.loss_sum.zero_()
        self.loss_count = 0
        return mean

    # ---- checkpoint state
    def state_dict(self) -> dict:
        g, xp = self.games, self.xp

        def saved(x):  # a CPU tensor copy of a per-game array
            return xp.to_tensor(xp.copy(x)).cpu()

        generator = {"device": self.rng.get_state()} if xp.is_torch else {"numpy": self.rng.bit_generator.state}
        return {
            "weights": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "pool": [f.state_dict() for f in self.pool],
            "frozen_taken_at": self.frozen_taken_at,
            "frozen_refreshes": self.frozen_refreshes,
            "episodes": self.episodes,
            "steps": self.steps,
            "envs": {**{name: saved(getattr(g, name)) for name in GAME_ARRAYS},
                     **{name: saved(getattr(self, name)) for name in TRAINER_ARRAYS}},
            "label_games": None if self.label_games is None else
            {name: saved(getattr(self.label_games, name)) for name in GAME_ARRAYS},
            "rng": {**generator, "torch": torch.get_rng_state(), "python": random.getstate()},
        }

    def load_state_dict(self, s: dict) -> None:
        self.net.load_state_dict(s["weights"])
        self.optimizer.load_state_dict(s["optimizer"])
        self.pool = []
        for weights in s["pool"]:
            frozen = copy.deepcopy(self.net).requires_grad_(False)
            frozen.load_state_dict(weights)
            self.pool.append(frozen)
        self.frozen_taken_at, self.frozen_refreshes = s["frozen_taken_at"], s["frozen_refreshes"]
        self.episodes, self.steps = s["episodes"], s["steps"]
        g, envs, xp = self.games, s["envs"], self.xp
        if tuple(envs["board"].shape) != tuple(g.board.shape):
            raise CheckpointError(f"checkpoint has {envs['board'].shape[0]} training games, config has {len(g)}")
        saved_on = "cuda" if "device" in s["rng"] else "cpu"
        if saved_on != ("cuda" if xp.is_torch else "cpu"):
            raise CheckpointError(f"this run was trained with device={saved_on}; resume it with device={saved_on}")
        for name in GAME_ARRAYS:
            getattr(g, name)[:] = xp.asarray(envs[name].numpy())
        for name in TRAINER_ARRAYS:
            getattr(self, name)[:] = xp.asarray(envs[name].numpy())
        if self.label_games is not None:
            for name in GAME_ARRAYS:
                getattr(self.label_games, name)[:] = xp.asarray(s["label_games"][name].numpy())
        if xp.is_torch:
            self.rng.set_state(s["rng"]["device"])
        else:
            self.rng.bit_generator.state = s["rng"]["numpy"]
        torch.set_rng_state(s["rng"]["torch"])
        random.setstate(s["rng"]["python"])


# ------------------------------------------------------------------------------------ training loop
def check(cfg: DictConfig, game: Game) -> None:
    """Refuse agent settings the training cannot use, before any work (``ttt.config.check_train_config``)."""
    a = agent_settings(cfg.agent, Config)  # the values every Config must have
    check_ranges("agent.", a, {"lr": POSITIVE})  # a Config may hold still (lr 0); a training run must learn


def train(cfg: DictConfig, run: Run) -> dict:
    """Train with the curriculum on the schedule of ``run`` (evaluations, checkpoints, log lines)."""
    a = cfg.agent
    rng = arrays_for(array_device(run.device)).generator(int(cfg.seed))
    trainer = Trainer(run.game, cfg.network, a, int(cfg.num_envs), rng, device=run.device)
    if run.resumed is not None:
        trainer.load_state_dict(run.resumed["trainer"])
    path = run.checkpoint_path()
    network = OmegaConf.to_container(cfg.network, resolve=True)

    play_rules = replace(trainer.rules, forks=trainer.rules.forks or bool(a.play_forks),
                         threats=max(trainer.rules.threats, int(a.play_threats)))
    # the periodic evaluations leave out the threat-chain rule (the costliest in move selection); the
    # final evaluation and the checkpoint use the trained player's whole rules
    eval_rules = replace(play_rules, threats=0)

    def player(final: bool = False) -> DQNPlayer:
        return DQNPlayer(run.game, trainer.net, network, play_rules if final else eval_rules)

    def save(done: int) -> None:
        save_checkpoint(path, {"kind": "dqn", "game": run.game.name, "config": run.config_dict(),
                               "network": network, "rules": asdict(play_rules),
                               "weights": trainer.net.state_dict(), "episodes": trainer.episodes,
                               "trainer": trainer.state_dict()})

    def log(ep: int) -> str:
        run.log("train/td_loss", trainer.take_loss(), ep)
        run.log("train/epsilon", epsilon_at(a, ep), ep)
        run.log("train/opponent", OPPONENT_PHASES[trainer.phase()], ep)
        share = float((trainer.kind == OPPONENT_PHASES["benchmark"]).sum()) / len(trainer.kind)
        run.log("train/benchmark_share", share, ep)
        run.log("train/frozen_refreshes", trainer.frozen_refreshes, ep)
        return f"opponent {trainer.phase_label()}"

    total = int(cfg.episodes)
    run.start(trainer.episodes)
    while trainer.episodes < total:
        trainer.step()
        run.tick(trainer.episodes, player, save, log)
    results = run.finish(lambda: player(final=True), trainer.episodes, save, games=int(a.final_eval_games))
    return run.write_final(results, extra={"command": run_command(), "seed": int(cfg.seed), "network": network})


# -------------------------------------------------------------------------------- the trained player
class DQNPlayer(BatchPlayer):
    """Greedy play by the afterstate values: one forward pass over every legal afterstate.

    ``rules`` (``Rules``): the exact values the rules give replace the network's in move selection;
    ``NO_RULES``, or ``without_rules()``, lets the network play alone.
    """

    name = "dqn"
    batched_on_device = True

    def __init__(self, game: Game, net: ValueNet, network: dict | None = None, rules: Rules = Rules()) -> None:
        super().__init__(game)
        self.net = net
        self.network = network
        self.rules = rules
        self._learner: Trainer | None = None

    def without_rules(self) -> DQNPlayer:
        """The same network playing alone, with no rule in move selection."""
        return DQNPlayer(self.game, self.net, self.network, NO_RULES)

    def values(self, games: BatchedGames, rows) -> torch.Tensor:
        """Afterstate values of the games ``rows`` as this player ranks them (its rules applied)."""
        return afterstate_values(self.net, games, rows, self.rules)

    def act_batch(self, games: BatchedGames, rng=None):
        """Greedy moves of numpy games, or of games on a device (wherever the network is)."""
        xp = games.xp
        actions = xp.full(len(games), -1, "int64")
        live = xp.flatnonzero(~games.done)
        if len(live):
            actions[live] = xp.from_tensor(self.values(games, live)).argmax(1)
        return actions

    def learn_from_game(self, states: list[State]) -> bool:
        """Replay a finished game through the TD(0) rule, learning from both seats (Adam 1e-3)."""
        if self._learner is None:
            r = self.rules
            cfg = Config(opponent="self_play", opponent_after="self_play", exact_wins=r.wins, exact_losses=r.losses,
                         exact_forks=r.forks, gamma=r.gamma)
            device = "cpu" if module_device(self.net).type == "cpu" else "cuda"  # learn where the network is
            self._learner = Trainer(self.game, None, cfg, 1, arrays_for(array_device(device)).generator(0),
                                    net=self.net, device=device)
        for state in states[1:]:
            self._learner.step(self._learner.xp.asarray(np.array([state.last_action])))
        return True

    def action_values(self, state: State) -> dict[int, float]:
        games = BatchedGames.from_states([state])
        values = self.values(games, np.array([0]))[0]
        return {a: float(values[a]) for a in state.legal_actions()}

    def save(self, path) -> None:
        save_checkpoint(path, {"kind": "dqn", "game": self.game.name, "network": self.network,
                               "rules": asdict(self.rules), "weights": self.net.state_dict()})


def player_from_checkpoint(payload: dict) -> DQNPlayer:
    """The greedy player of a ``dqn`` checkpoint (one saved before ``rules`` existed used exact wins)."""
    game = make_game(payload["game"])
    net = build_value_net(OmegaConf.create(payload["network"]), game)
    net.load_state_dict(payload["weights"])
    net.eval()
    rules = Rules(**payload["rules"]) if "rules" in payload else Rules(wins=bool(payload.get("exact_wins", True)))
    return DQNPlayer(game, net, payload["network"], rules)


# ------------------------------------------------------------------------------------- throughput
def training_throughput(num_envs: int, seconds: float, board: str = "4x4x4", seed: int = 0,
                        device: str = "cpu") -> float:
    """Training episodes per second of the structured deep network against random (``ttt.perf``).

    On a GPU the first plies (CUDA start-up, kernel selection) are played before the clock starts.
    """
    network = OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": False})
    agent = Config(opponent="random", opponent_after="random")
    torch.manual_seed(seed)
    xp = arrays_for(array_device(device))
    trainer = Trainer(make_game(board), network, agent, num_envs, xp.generator(seed), device=device)
    if xp.is_torch:
        for _ in range(3):
            trainer.step()
    xp.synchronize()
    start = trainer.episodes
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        trainer.step()
    xp.synchronize()
    return (trainer.episodes - start) / (time.perf_counter() - t0)
