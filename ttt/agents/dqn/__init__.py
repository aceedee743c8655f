"""TD(0) afterstate value learning with a neural network (van de Steeg, Drugan & Wiering 2015,
Algorithm 1), the learner called ``dqn``.

The network scores afterstates V(s'): the board right after a move, seen from the player who just
moved (+1 own piece, -1 opponent, 0 empty), so one network plays either seat. One concept a module,
in reading order:

* ``settings``: ``Config``, the core's settings and their defaults; the exploration schedule; ``RETIRED``,
  the settings since removed; ``MOVED``, those since moved into parts;
* ``moves``: move selection by afterstate values, the rules' exact values in place of estimates;
* ``td``: the TD(0) rule, the targets of one ply and the loss; TD(λ)'s targets of a finished game;
* ``labels``: what the rules know exactly, taught as labels and as rank pairs;
* ``curriculum``: the opponents, the pool of frozen copies, the TensorBoard scalars;
* ``trainer``: the core, ``Trainer``: K runs (one by default) of a batch of training games each, one
  update per run and ply: runs side by side (``seeds=K``) are its run axis; ``state``: a run's checkpoint;
* ``parts``: every addition to the design, a part each (``agent.parts``), listed in ``parts.PARTS``;
* ``player``: ``DQNPlayer``, the trained player, and loading it from a checkpoint; ``network_alone``, the
  player ``eval_alone=true`` evaluates beside it;
* ``loop``: ``check``, ``train`` and ``train_side_by_side``, the learner's entries for ``ttt.train``.

The exact values the rules give (``Rules``, ``rule_values``) are the games layer's: ``ttt.games.exact``.
"""

from __future__ import annotations

from ttt.agents.dqn.curriculum import OPPONENT_PHASES, OPPONENTS
from ttt.agents.dqn.labels import rank_loss, rank_orders, rank_pairs, rule_targets
from ttt.agents.dqn.loop import check, train, train_side_by_side
from ttt.agents.dqn.moves import epsilon_greedy, selection_values
from ttt.agents.dqn.parts import PARTS, Part, register
from ttt.agents.dqn.player import DQNPlayer, network_alone, player_from_checkpoint
from ttt.agents.dqn.settings import MOVED, RETIRED, Config, epsilon_at, training_rules, upgrade_agent
from ttt.agents.dqn.state import GAME_ARRAYS, TRAINER_ARRAYS
from ttt.agents.dqn.td import Targets, example_weights, final_targets, lambda_targets, make_optimizer, td0_targets
from ttt.agents.dqn.trainer import Trainer
from ttt.games.exact import NO_RULES, Rules, rule_values

USES_DEVICE = True  # runs on the run's device (ttt.train): games, networks, targets and opponents

__all__ = ["GAME_ARRAYS", "MOVED", "NO_RULES", "OPPONENTS", "OPPONENT_PHASES", "PARTS", "RETIRED", "TRAINER_ARRAYS",
           "USES_DEVICE", "Config", "DQNPlayer", "Part", "Rules", "Targets", "Trainer", "check", "epsilon_at",
           "epsilon_greedy", "example_weights", "final_targets", "lambda_targets", "make_optimizer", "network_alone",
           "player_from_checkpoint", "rank_loss", "rank_orders", "rank_pairs", "register", "rule_targets",
           "rule_values", "selection_values", "td0_targets", "train", "train_side_by_side", "training_rules",
           "upgrade_agent"]
