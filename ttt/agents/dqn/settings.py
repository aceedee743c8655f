"""The learner's settings (``Config``, the schema of ``configs/agent/dqn.yaml`` and the one home of
each default), and what follows from them alone: the move-selection rules and the exploration rate."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ttt.agents.dqn.curriculum import OPPONENTS
from ttt.config import AT_LEAST_ONE, NON_NEGATIVE, UNIT, check_choice, check_ranges
from ttt.games.exact import GAMMA, Rules

# settings a later version removed, with the value whose behaviour it kept and the last commit that has them: a
# checkpoint that holds that value resumes as before, one that holds another is refused (its run continues there)
RETIRED = {"rank_hardest": (False, "09c6a2d"), "rank_higher": ("random", "09c6a2d"),
           "rank_losses": ("hinge", "09c6a2d"), "label_threats": (0, "483e9c1"),
           "search_backup": (False, "483e9c1"), "reply_targets": (False, "483e9c1"),
           "learn_opponent_moves": (False, "483e9c1"), "rule_label_cap": (0, "483e9c1"),
           "benchmark_safe": (True, "483e9c1"), "greedy_bootstrap": (False, "06db1ca")}


# settings that moved into a part (``agent.parts``): the old key -> (part, key, its old default, at which the
# part stayed off); an old config (a checkpoint's, a run folder's) is read through ``upgrade_agent``.
# symmetry_augment=true is the part ``symmetry`` itself.
MOVED = {**{key: ("rules", key, off) for key, off in (("exact_losses", False), ("exact_forks", False),
                                                      ("play_forks", False), ("play_threats", 0))},
         **{key: ("labels", key, off) for key, off in (
             ("rule_labels", False), ("fork_defence_labels", 0), ("label_weight", 0.0), ("random_labels", 0),
             ("search_labels", False), ("rank_labels", 0), ("rank_moves", 0), ("rank_weight", 1.0),
             ("rank_forced", False), ("rank_head", False), ("rank_moves_wins", True))},
         "target_every": ("target", "target_every", 0), "symmetry_augment": ("symmetry", None, False)}
MOVED_AT = "1e784f4"  # the last commit whose agent settings hold them flat


@dataclass
class Config:
    """The core's settings, ``configs/agent/dqn.yaml`` (checked by Hydra at composition); ``parts``: the parts
    the run uses and their settings (``ttt.agents.dqn.parts``), name -> its ``Settings`` once checked."""

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
    frozen_pool: int = 1  # past frozen copies kept; each frozen-opponent game draws one of them
    benchmark_fraction: float = 0.0  # share of games against the benchmark player after the switch
    final_eval_games: int = 2000  # games per opponent in the final evaluation (half per seat)
    exact_wins: bool = True  # a terminal afterstate is valued by its reward (+1) in move selection and targets
    td_lambda: float = 0.0  # > 0: each afterstate's target is its λ-return, computed when its game ends (TD(λ),
    # forward view: td.lambda_targets); 1: the outcome itself (Monte Carlo); 0: TD(0), online, every ply
    parts: dict[str, Any] = field(default_factory=dict)  # part name -> its settings (ttt.agents.dqn.parts)

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
                                      "frozen_pool": AT_LEAST_ONE, "td_lambda": UNIT})
        from ttt.agents.dqn.parts import part_settings  # the parts import the core's modules
        self.parts = part_settings(self.parts or {})


def upgrade_agent(values: dict) -> dict:
    """An agent config (a plain dict) as today's settings read it: the settings that moved into parts
    (``MOVED``) moved there (a part whose moved settings all keep their defaults left out, as the flat
    settings left it off), and every part's settings completed with its defaults, so that two configs of
    the same run compare equal key by key (``ttt.harness.run_dir.config_changes``)."""
    from ttt.agents.dqn.parts import table
    values = dict(values)
    parts = {name: dict(v or {}) for name, v in (values.get("parts") or {}).items()}
    for key in [k for k in values if k in MOVED]:
        part, leaf, off = MOVED[key]
        value = values.pop(key)
        if value == off:
            continue
        entry = parts.setdefault(part, {})
        if leaf is not None:  # None: the part itself
            entry[leaf] = value
    known = table()
    values["parts"] = {name: {**asdict(known[name].Settings()), **given} if name in known else given
                       for name, given in parts.items()}
    return values


Config.upgrade = staticmethod(upgrade_agent)  # read by ttt.config.agent_settings


def training_rules(settings: Config) -> Rules:
    """The rules of move selection while training: the core's exact wins, and what the parts add (``rules``)."""
    return _through_parts(settings, "rules", Rules(bool(settings.exact_wins)))


def player_rules(settings: Config, rules: Rules) -> Rules:
    """The trained player's rules (evaluations, checkpoint), from the training ``rules`` and the parts."""
    return _through_parts(settings, "player_rules", rules)


def _through_parts(settings: Config, hook: str, rules: Rules) -> Rules:
    from ttt.agents.dqn.parts import table
    for name, part in settings.parts.items():
        rules = getattr(table()[name], hook)(part, rules)
    return rules


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
