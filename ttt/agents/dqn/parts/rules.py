"""Part ``rules``: the rules' exact values in move selection beyond the core's exact wins.

While training, ``exact_losses`` values a move that lets the opponent win at once -1 and ``exact_forks``
a fork ``gamma`` (and a move that lets the opponent fork ``-gamma``); the trained player (evaluations and
the checkpoint) adds ``play_forks`` and chains of up to ``play_threats`` forcing threats ending in a fork
(``ttt.games.exact.Rules``). Training moves, the frozen copies' moves and the bootstrap of the TD(0)
targets see the training rules; the values the rules give replace the network's estimates."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ttt.agents.dqn.parts import Part
from ttt.config import NON_NEGATIVE, check_ranges


@dataclass
class RulesSettings:
    exact_losses: bool = False  # an afterstate that lets the opponent win at once scores -1 in move selection
    exact_forks: bool = False  # a fork scores gamma, a move that lets the opponent fork -gamma, in move selection
    play_forks: bool = False  # the trained player (evaluations, checkpoint) values forks exactly; training moves do not
    play_threats: int = 0  # ... and chains of up to this many forcing threats ending in a fork (Rules.threats)

    def __post_init__(self) -> None:
        check_ranges("agent.parts.rules.", self, {"play_threats": NON_NEGATIVE})


class MoveRules(Part):
    Settings = RulesSettings

    @staticmethod
    def rules(settings, rules):
        return replace(rules, losses=rules.losses or bool(settings.exact_losses),
                       forks=rules.forks or bool(settings.exact_forks))

    @staticmethod
    def player_rules(settings, rules):
        return replace(rules, forks=rules.forks or bool(settings.play_forks),
                       threats=max(rules.threats, int(settings.play_threats)))
