"""The learner's settings (``Config``, the schema of ``configs/agent/dqn.yaml`` and the one home of
each default), and what follows from them alone: the move-selection rules and the exploration rate."""

from __future__ import annotations

from dataclasses import dataclass

from ttt.agents.dqn.curriculum import OPPONENTS
from ttt.config import AT_LEAST_ONE, NON_NEGATIVE, UNIT, ConfigError, check_choice, check_ranges
from ttt.games.exact import GAMMA, Rules

# settings a later version removed, with the value whose behaviour it kept and the last commit that has them: a
# checkpoint that holds that value resumes as before, one that holds another is refused (its run continues there)
RETIRED = {"rank_hardest": (False, "09c6a2d"), "rank_higher": ("random", "09c6a2d"),
           "rank_losses": ("hinge", "09c6a2d"), "label_threats": (0, "483e9c1"),
           "search_backup": (False, "483e9c1"), "reply_targets": (False, "483e9c1"),
           "learn_opponent_moves": (False, "483e9c1"), "rule_label_cap": (0, "483e9c1"),
           "benchmark_safe": (True, "483e9c1")}


@dataclass
class Config:
    """Settings of ``configs/agent/dqn.yaml`` (checked by Hydra at composition)."""

    name: str = "dqn"
    optimizer: str = "adam"  # adam | sgd
    lr: float = 1e-3
    first_lr: float = 0.0  # learning rate of the first (line-detector) layer; 0 = lr
    lr_final: float = 0.0  # > 0: every learning rate falls linearly to lr_final / lr of itself over
    lr_decay_episodes: int = 0  # ... this many games (then stays); 0: constant
    gamma: float = GAMMA
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
    play_forks: bool = False  # the trained player (evaluations, checkpoint) values forks exactly; training moves do not
    play_threats: int = 0  # ... and chains of up to this many forcing threats ending in a fork (Rules.threats)
    rule_labels: bool = False  # also train every legal afterstate the rules value exactly (win, loss, fork)
    fork_defence_labels: int = 0  # with rule_labels, up to this many other afterstates per position are
    # checked for an opponent fork (a loss in two of its moves, worth -gamma); 0 = none
    label_weight: float = 0.0  # > 0: a run's labels (rule_labels, random_labels) are a mean of their own in its loss,
    # weighing this many times the mean of its TD targets (td.example_weights); 0: one mean over all examples
    frozen_pool: int = 1  # past frozen copies kept; each frozen-opponent game draws one of them
    random_labels: int = 0  # rule-labelled afterstates per ply drawn from as many games of random play (0 = none)
    rank_labels: int = 0  # pairs of afterstates per ply, from as many games of random play, whose order the
    # rules know (a non-losing move above a losing one, a win above a non-win), trained by a margin loss (rank_pairs)
    rank_moves: int = 0  # with rank_labels, each position pairs its higher move with the K lower moves the
    # network values most (rank_labels // 2 positions of each order); 0 = with one drawn at random
    rank_weight: float = 1.0  # the weight of the rank loss beside the TD loss
    rank_forced: bool = False  # with rank_labels: the non-losing-above-losing pairs only from positions where
    # exactly one move does not lose (a forced block), whose higher move is then the best move
    rank_head: bool = False  # with rank_labels: the rank pairs train a second output on the network's trunk,
    # not the value; moves are chosen by its order where the rules are silent, targets and values stay the value's
    rank_moves_wins: bool = True  # with rank_moves: the win-above-non-win pairs take the K non-wins valued most
    # too; false: one drawn at random (the network alone takes its wins without), and no values are needed there
    search_labels: bool = False  # with random_labels, a quarter of them are afterstates the rules do not value,
    # trained toward the network's value of the opponent's best reply (labels.reply_targets)
    symmetry_augment: bool = False  # train each target on a random symmetric image of its afterstate
    target_every: int = 0  # > 0: the TD(0) bootstrap values the chosen move with a copy of the network re-taken
    # every this many games (a target network: the learning network chooses, the copy values, as double
    # Q-learning separates them); 0: the learning network values its own choice, which biases the values up
    td_lambda: float = 0.0  # > 0: each afterstate's target is its λ-return, computed when its game ends (TD(λ),
    # forward view: td.lambda_targets); 1: the outcome itself (Monte Carlo); 0: TD(0), online, every ply

    def __post_init__(self) -> None:
        """Fail early, naming the key, on values the schema's types cannot rule out."""
        for key in ("opponent", "opponent_after"):
            check_choice("agent.", self, key, OPPONENTS)
        check_choice("agent.", self, "optimizer", ("adam", "sgd"))
        check_choice("agent.", self, "loss", ("huber", "mse"))
        check_ranges("agent.", self, {"lr": NON_NEGATIVE, "first_lr": NON_NEGATIVE, "gamma": UNIT, "epsilon": UNIT,
                                      "epsilon_final": UNIT,
                                      "frozen_epsilon": UNIT, "benchmark_fraction": UNIT,
                                      "epsilon_decay_episodes": NON_NEGATIVE,
                                      "lr_final": NON_NEGATIVE, "lr_decay_episodes": NON_NEGATIVE,
                                      "switch_episode": NON_NEGATIVE,
                                      "refresh_every": NON_NEGATIVE, "final_eval_games": AT_LEAST_ONE,
                                      "frozen_pool": AT_LEAST_ONE, "fork_defence_labels": NON_NEGATIVE,
                                      "label_weight": NON_NEGATIVE,
                                      "random_labels": NON_NEGATIVE, "rank_labels": NON_NEGATIVE,
                                      "rank_moves": NON_NEGATIVE, "rank_weight": NON_NEGATIVE,
                                      "target_every": NON_NEGATIVE, "td_lambda": UNIT})
        if self.rank_head and not self.rank_labels:
            raise ConfigError("agent.rank_head=true: the rank head learns from rank pairs alone; "
                              "set agent.rank_labels > 0 too")


def training_rules(settings: Config) -> Rules:
    """The rules of move selection while training: exact wins, and exact losses and forks when set."""
    return Rules(bool(settings.exact_wins), bool(settings.exact_losses), bool(settings.exact_forks))


def lr_schedule(settings: Config) -> bool:
    """Whether the learning rates fall (``lr_final`` and ``lr_decay_episodes`` both set, ``lr`` > 0)."""
    return settings.lr_final > 0 and settings.lr_decay_episodes > 0 and settings.lr > 0


def lr_scale_at(settings: Config, episode: int) -> float:
    """The factor on every learning rate after ``episode`` training games: 1 falling linearly to
    ``lr_final / lr`` over ``lr_decay_episodes`` (1 throughout without a schedule, ``lr_schedule``)."""
    if not lr_schedule(settings):
        return 1.0
    frac = min(episode / settings.lr_decay_episodes, 1.0)
    return float(1.0 + frac * (settings.lr_final / settings.lr - 1.0))


def epsilon_at(settings: Config, episode: int) -> float:
    """The exploration rate after ``episode`` training games (linear schedule)."""
    if settings.epsilon_decay_episodes <= 0:
        return float(settings.epsilon)
    frac = min(episode / settings.epsilon_decay_episodes, 1.0)
    return float(settings.epsilon + frac * (settings.epsilon_final - settings.epsilon))
