"""The TD(0) rule: the targets of one ply, and the loss and the optimiser that move the values toward them.

Per learning seat of each game:

* after each of its moves except its first, V(previous afterstate) moves toward
  ``gamma * V(new afterstate)`` (intermediate rewards are 0), the target detached (``td0_targets``);
* when its own move ends the game, the new afterstate is terminal: its exact value is the reward
  r (+1 win, 0 draw), so the previous afterstate's target is ``gamma * r`` and the terminal
  afterstate itself moves toward r (so that winning moves score +1 when moves are chosen);
* when the opponent's move ends the game, its last afterstate moves toward the reward (-1 loss,
  0 draw), with no bootstrap (``final_targets``). Losses are learned.

With ``td_lambda`` > 0 the targets are λ-returns instead (``lambda_targets``, TD(λ) in its forward view,
as TD-Gammon learned): each seat's afterstates of a game are kept, and when the game ends each moves
toward ``gamma * ((1 - λ) * V(next afterstate) + λ * G(next afterstate))``, its last one toward the
seat's outcome. λ = 0 gives the TD(0) targets above (delivered when the game ends); λ = 1 the
discounted outcome (Monte Carlo), with no bootstrap, so no bias from the values' own errors.

The bootstrap V(new afterstate) is the value move selection gave the chosen move
(``bootstrap_values``): where the move-selection rules know an afterstate's value exactly (an exact
win +1, with ``exact_losses`` an exact loss -1), that value, not the network's estimate. This is a
choice of the design: the rules' values are what the player acts on, and they are the true values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ttt.agents.dqn.settings import lr_schedule
from ttt.games.arrays import arrays_of
from ttt.nets.runs import parameter_stacks


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


def final_targets(rows: np.ndarray, prev: np.ndarray, has_prev: np.ndarray, reward: np.ndarray) -> Targets:
    """When a game ends on the opponent's move, the waiting seat's last afterstate moves toward its
    reward, ``-reward`` of the mover (-1 loss, 0 draw), with no bootstrap."""
    return Targets(prev[has_prev], -reward[has_prev], rows[has_prev])


def lambda_targets(rows, obs, boot, length, outcome, gamma: float, lam: float) -> Targets:
    """The λ-return targets of the afterstates of the finished games ``rows``, one trace per seat.

    ``obs`` (E, 2, T, cells): each seat's afterstates in the order played; ``boot`` (E, 2, T): each one's
    value as the TD(0) bootstrap took it when it was played (``bootstrap_values``; the reward where
    terminal); ``length`` (E, 2): how many each seat played; ``outcome`` (E, 2): each seat's result
    (+1, 0, -1). The last afterstate of a trace moves toward the outcome (a terminal one's exact value;
    after the opponent's last move, TD(0)'s ``final_targets``), each earlier one toward
    ``G_k = gamma * ((1 - lam) * boot_{k+1} + lam * G_{k+1})``: lam = 0 is ``td0_targets``' target,
    lam = 1 the outcome discounted once per later afterstate of that seat. numpy or torch alike."""
    xp = arrays_of(boot)
    e, _, t = boot.shape
    ret = xp.zeros((e, 2, t), "float32")
    if e:  # last afterstate first; past a trace's end the entries are never read (``played``)
        ret[:, :, t - 1] = outcome
        for k in range(t - 2, -1, -1):
            later = gamma * ((1 - lam) * boot[:, :, k + 1] + lam * ret[:, :, k + 1])
            ret[:, :, k] = xp.where(length - 1 == k, outcome, later)
    played = xp.arange(t)[None, None, :] < length[:, :, None]
    game = xp.zeros((e, 2, t), "int64") + rows[:, None, None]
    return Targets(obs[played], ret[played], game[played])


def bootstrap_values(values: torch.Tensor | None, chosen, xp) -> np.ndarray:
    """V(new afterstate) of each learner's move: ``values`` (one row per learner, as move selection
    ranked the moves, the rules' exact values included, -inf where illegal) at the ``chosen`` cells;
    empty without learners."""
    if values is None:
        return xp.zeros(0, "float32")
    return xp.from_tensor(values[xp.to_tensor(xp.arange(len(chosen))), xp.to_tensor(chosen)])


def td_loss(pred: torch.Tensor, target: torch.Tensor, loss: str, reduction: str = "mean") -> torch.Tensor:
    """The ``huber`` or ``mse`` loss of the predictions against their (constant) targets: their mean,
    or with ``reduction="none"`` one per example."""
    if loss == "huber":
        return F.huber_loss(pred, target, reduction=reduction)
    return F.mse_loss(pred, target, reduction=reduction)


def example_weights(runs: torch.Tensor, td_count: int | None, k: int, label_weight: float) -> torch.Tensor:
    """Each example's weight in the loss, the sum of each run's own loss (``runs``: the run of each example).
    Without ``label_weight``: 1/n for each of a run's n examples, their mean. With ``label_weight`` w > 0 the
    examples from ``td_count`` on (None: none) are labels (part ``labels``: ``rule_labels``, ``random_labels``): a run's
    TD targets weigh 1/n_td each and its labels w/n_labels each, so its labels, however many, weigh w times
    its TD targets (a position under a threat has a label for nearly every move; their mean swamped the
    outcomes)."""
    first = len(runs) if td_count is None or not label_weight else td_count
    labelled = torch.arange(len(runs), device=runs.device) >= first
    key = runs * 2 + labelled
    counts = torch.bincount(key, minlength=2 * k).to(torch.float32).clamp(min=1.0)
    return torch.where(labelled, float(label_weight), 1.0) / counts[key]


def steps_stacks(settings, nets) -> bool:
    """Whether ``make_optimizer`` of ``nets`` steps their stacked parameters (``ttt.nets.runs.
    stack_parameters``) rather than each network's: plain SGD at one rate for all, where a step of a stack
    is each network's own step, and a zero gradient (a network without examples) no step at all."""
    return isinstance(nets, list) and len(nets) > 1 and settings.optimizer == "sgd" and not lr_schedule(settings) \
        and parameter_stacks(nets) is not None


def _groups(settings, nets: list[torch.nn.Module]) -> tuple[list, list[float]]:
    """Per network its parameters by group, and each group's learning rate: the first (line-detector)
    layer at ``first_lr`` and the rest at ``lr`` when ``first_lr`` is set, else one group at ``lr``."""
    if settings.first_lr <= 0:
        return [[list(net.parameters())] for net in nets], [settings.lr]
    # the rest in order of named_parameters: rest., then rank.
    return ([[list(net.first.parameters()), [p for name, p in net.named_parameters() if not name.startswith("first.")]]
             for net in nets], [settings.first_lr, settings.lr])


def make_optimizer(settings, nets: torch.nn.Module | list[torch.nn.Module]) -> torch.optim.Optimizer:
    """SGD or Adam at ``settings.lr``; the first layer's parameters at ``settings.first_lr`` when that is
    set (> 0). Given several networks (runs side by side), one optimiser over all of them: every
    parameter keeps its own state, as in its network's own optimiser, and a network whose parameters get
    no gradient in a step does not move. Their parameters share one group per kind (first layer, the
    rest), or with a falling learning rate (``lr_final``, each network's rate on its own schedule)
    each network has groups of its own, one network's after another."""
    many = isinstance(nets, list) and len(nets) > 1
    kinds, lrs = _groups(settings, nets if isinstance(nets, list) else [nets])
    if many and not lr_schedule(settings):
        kinds = [[[p for mine in kinds for p in mine[j]] for j in range(len(lrs))]]
    stacked = steps_stacks(settings, nets)
    if stacked:  # the stacks themselves, grouped as one network's parameters are
        stacks = dict(zip((name for name, _ in nets[0].named_parameters()), parameter_stacks(nets), strict=True))
        kinds = [[[stacks[name] for name, p in nets[0].named_parameters() if any(p is q for q in group)]
                  for group in kinds[0]]]
    params = [{"params": group, "lr": lr} for mine in kinds for group, lr in zip(mine, lrs, strict=True)]
    # several networks: each update in a few kernels (their stacks: a few tensors, one kernel each)
    foreach = (not stacked) if many else None
    if settings.optimizer == "sgd":
        return torch.optim.SGD(params, lr=settings.lr, foreach=foreach)
    return torch.optim.Adam(params, lr=settings.lr, foreach=foreach)
