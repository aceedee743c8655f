"""The learner's parts: every addition to the design's algorithm (``ttt.agents.dqn.trainer``, the core),
each in a file of its own with its own settings, state and hooks, listed in one table (``PARTS``).

An experiment names the parts it uses under ``agent.parts``, each with its settings::

    agent:
      parts:
        rules: {exact_losses: true, play_forks: true, play_threats: 3}
        symmetry: {}

On the command line ``++agent.parts.<part>.<key>=value`` adds or changes one setting (``++``: the key may
be new to the experiment), ``'+agent.parts.symmetry={}'`` adds a part with its defaults, and
``~agent.parts.<part>`` removes one. A part that is not named is not used.

A part is a class with a ``Settings`` dataclass (its keys and their defaults, checked like the core's)
and any of the hooks of ``Part``, each called by the core at one point of a ply; every hook's default
does nothing. Adding a learning rule is one new file with its ``Part`` and one line in ``PARTS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ttt.config import ConfigError, check_known_keys


@dataclass
class NoSettings:
    """A part without settings: naming it (``{}``) is all it takes."""


class Part:
    """The interface of a part; each hook's default leaves the core's behaviour as it is.

    A part is built once per trainer, ``Part(trainer, settings)``, after the core's networks and games,
    and serves every run of the run axis (``trainer.k`` runs; ``r`` a run's index)."""

    Settings: type = NoSettings

    def __init__(self, trainer, settings) -> None:
        self.trainer, self.settings = trainer, settings

    # ---- before the trainer is built
    @staticmethod
    def network_options(settings) -> dict:
        """Keyword arguments of ``build_value_net`` this part needs (e.g. a second head)."""
        return {}

    @staticmethod
    def rules(settings, rules):
        """The move-selection rules while training, given those of the core and of the parts before it."""
        return rules

    @staticmethod
    def player_rules(settings, rules):
        """The trained player's rules (evaluations, checkpoint), given the training rules."""
        return rules

    # ---- one ply
    def needs_tactics(self) -> bool:
        """Whether this part reads ``move_tactics`` of the learners' positions (``Ply.tactics``)."""
        return False

    def bootstrap(self, ply, values):
        """The values the TD(0) bootstrap takes of the learners' moves (``values`` as move selection gave them)."""
        return values

    def examples(self, ply) -> list:
        """Training examples (``td.Targets``, their rows the games' or -1) this ply adds to the TD targets."""
        return []

    def label_weight(self) -> float:
        """> 0: this part's examples are labels, a mean of their own weighing this much beside the TD targets'."""
        return 0.0

    def transform(self, boards, runs):
        """The boards an update trains on (``runs``: the run of each), as this part changes them."""
        return boards

    def loss(self, r: int):
        """A loss of run ``r`` added to its TD loss at this ply's update, or None."""
        return None

    def games_ended(self, r: int) -> None:
        """Run ``r``'s games that ended this ply have been counted and new ones drawn."""

    # ---- checkpoints
    def state_dict(self, r: int) -> dict:
        """Run ``r``'s state of this part, saved in the trainer's state (its keys at the top level)."""
        return {}

    def load_state_dict(self, state: dict, r: int) -> None:
        """Continue run ``r`` from a trainer state that ``state_dict`` wrote into."""


def _table() -> dict[str, type[Part]]:
    from ttt.agents.dqn.parts.labels import Labels
    from ttt.agents.dqn.parts.rules import MoveRules
    from ttt.agents.dqn.parts.symmetry import Symmetry
    from ttt.agents.dqn.parts.target import TargetNetwork

    # the table of parts: name -> class, in the order their hooks run
    return {
        "rules": MoveRules,  # the rules in move selection: exact losses and forks; the player's forks and chains
        "target": TargetNetwork,  # a target network for the TD(0) bootstrap
        "labels": Labels,  # the rules' labels and rank pairs, of the learner's positions and of random play
        "symmetry": Symmetry,  # each example on a random symmetric image of its board
    }


PARTS: dict[str, type[Part]] = {}


def table() -> dict[str, type[Part]]:
    """``PARTS``, filled on first use (the parts import the core's modules)."""
    if not PARTS:
        PARTS.update(_table())
    return PARTS


def register(name: str, part: type[Part]) -> None:
    """Add ``part`` to the table under ``name`` (a part defined outside this package, e.g. in a test)."""
    table()[name] = part


def part_settings(parts: dict) -> dict:
    """``agent.parts`` (name -> its settings: a dict, None or the part's ``Settings``) as name -> ``Settings``
    in the table's order; ConfigError naming the part or key for an unknown one or a value out of range."""
    known, out = table(), {}
    for name in parts:
        if name not in known:
            raise ConfigError(f"unknown part agent.parts.{name}; the parts: {', '.join(known)}")
    for name, part in known.items():
        if name not in parts:
            continue
        values = parts[name]
        if isinstance(values, part.Settings):
            out[name] = values
            continue
        values = dict(values or {})
        check_known_keys(f"agent.parts.{name}.", values, part.Settings)
        out[name] = part.Settings(**values)
    return out

