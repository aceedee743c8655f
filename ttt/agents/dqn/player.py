"""The trained player: greedy play by the afterstate values (``DQNPlayer``), and loading it from a
checkpoint (``player_from_checkpoint``)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import torch
from omegaconf import OmegaConf

from ttt.agents.dqn.moves import move_scores, selection_values
from ttt.agents.dqn.settings import Config
from ttt.agents.dqn.trainer import Trainer
from ttt.checkpoint import load_weights, save_checkpoint
from ttt.device import array_device, module_device
from ttt.games import BatchedGames, Game, State, make_game
from ttt.games.arrays import arrays_for
from ttt.games.exact import GAMMA, NO_RULES, Rules
from ttt.games.symmetry import symmetry_sample
from ttt.nets.averaged import SymmetryAveraged
from ttt.nets.structured import ValueNet, build_value_net
from ttt.players import BatchPlayer


class DQNPlayer(BatchPlayer):
    """Greedy play by the afterstate values: one forward pass over every legal afterstate.

    ``rules`` (``Rules``): the exact values the rules give replace the network's in move selection;
    ``NO_RULES``, or ``without_rules()``, lets the network play alone; ``gamma``, the discount its learner
    trained with (``Config.gamma``), values the forks and threat chains. ``net`` is the network as trained
    (what ``save`` writes); the player values boards by ``scorer``, the network itself or the network
    averaged over the board's symmetries (``symmetries``), which changes nothing in the network.
    """

    name = "dqn"
    batched_on_device = True

    def __init__(self, game: Game, net: ValueNet, network: dict | None = None, rules: Rules = Rules(),
                 gamma: float = GAMMA) -> None:
        super().__init__(game)
        self.net = net
        self.network = network
        self.rules = rules
        self.gamma = float(gamma)
        self.scorer: ValueNet | SymmetryAveraged = net  # what the player values boards by (``symmetries``)
        self._learner: Trainer | None = None

    def without_rules(self) -> DQNPlayer:
        """The same network playing alone, with no rule in move selection."""
        return self.with_rules(NO_RULES)

    def with_rules(self, rules: Rules) -> DQNPlayer:
        """The same network choosing its moves with ``rules`` (and valuing boards through the same symmetries)."""
        player = DQNPlayer(self.game, self.net, self.network, rules, self.gamma)
        player.scorer = self.scorer
        return player

    @property
    def symmetries(self) -> int:
        """How many of the board's symmetries the player values each board through (1: the board alone,
        as trained; ``ttt.nets.averaged.SymmetryAveraged``). Setting it (the player spec's ``symmetries``
        option) takes the identity and ``symmetries - 1`` others (``ttt.games.symmetry.symmetry_sample``, the
        same on every machine; all of them at the group's size) for this player alone: the network, and
        every other player holding it, are unchanged; a copy made afterwards (``with_rules``) keeps it."""
        return 1 if self.scorer is self.net else len(self.scorer.images)

    @symmetries.setter
    def symmetries(self, count: int) -> None:
        images = symmetry_sample(self.game.symmetries, int(count))
        self.scorer = self.net if len(images) == 1 else SymmetryAveraged(self.net, images)

    def values(self, games: BatchedGames, rows) -> torch.Tensor:
        """Afterstate values of the games ``rows`` (its rules applied): the value head's, also with a
        rank head, whose order the player moves by (``act_batch``)."""
        return selection_values(self.scorer, games, rows, self.rules, gamma=self.gamma)

    @torch.inference_mode()
    def value_of_afterstates(self, views: np.ndarray) -> np.ndarray | None:
        """(N,) the values of non-terminal afterstates ``views`` (N, cells), each seen from the player who
        just moved (its pieces +1): one forward pass of the value head, no position before them needed.
        None when rules other than exact wins apply (they value moves, from the position before them:
        ``values``); exact wins value only completed lines, which are terminal."""
        if self.rules.needs_tactics():
            return None
        x = torch.as_tensor(np.asarray(views), dtype=torch.float32, device=module_device(self.net))
        return self.scorer(x).double().cpu().numpy()

    def act_batch(self, games: BatchedGames, rng=None):
        """Greedy moves of numpy games, or of games on a device (wherever the network is): the argmax of
        the values, or with a rank head of its order where the rules are silent (``move_scores``)."""
        xp = games.xp
        actions = xp.full(len(games), -1, "int64")
        live = xp.flatnonzero(~games.done)
        if len(live):
            order = move_scores(self.scorer, games, live, self.rules, gamma=self.gamma)[0]
            actions[live] = xp.from_tensor(order).argmax(1)
        return actions

    def learn_from_game(self, states: list[State]) -> bool:
        """Replay a finished game through the TD(0) rule, learning from both seats (Adam 1e-3): the
        network itself learns, each board alone (training never averages over symmetries)."""
        if self._learner is None:
            r = self.rules
            settings = Config(opponent="self_play", opponent_after="self_play", gamma=self.gamma)
            device = "cpu" if module_device(self.net).type == "cpu" else "cuda"  # learn where the network is
            # the player's rules but the threat chains bootstrap the TD targets
            self._learner = Trainer(self.game, None, settings, 1, arrays_for(array_device(device)).generator(0),
                                    net=self.net, device=device, rules=Rules(r.wins, r.losses, r.forks))
        for state in states[1:]:
            self._learner.step(self._learner.xp.asarray(np.array([state.last_action])))
        return True

    def action_values(self, state: State) -> dict[int, float]:
        games = BatchedGames.from_states([state])
        values = self.values(games, np.array([0]))[0]
        return {cell: float(values[cell]) for cell in state.legal_actions()}

    def save(self, path) -> None:
        """A checkpoint of the player: its network and rules, and of its learner's config the discount
        (``checkpoint_rules``)."""
        save_checkpoint(path, {"kind": "dqn", "game": self.game.name, "config": {"agent": {"gamma": self.gamma}},
                               "network": self.network, "rules": asdict(self.rules), **heads_entry(self.net),
                               "weights": self.net.state_dict()})


def heads_entry(net: ValueNet) -> dict:
    """What a checkpoint says of the network's heads: ``{"rank_head": True}`` with a rank head, else
    nothing (the checkpoints written before the rank head existed)."""
    return {"rank_head": True} if net.rank is not None else {}


def network_alone(player: DQNPlayer) -> DQNPlayer:
    """The player an ``eval_alone=true`` evaluation plays beside ``player``: its network alone, no rules."""
    return player.without_rules()


def checkpoint_rules(payload: dict) -> tuple[Rules, float]:
    """The move-selection rules of a ``dqn`` checkpoint and the discount of its learner, which their
    values use. The rules: its ``rules`` (less the ``gamma`` they stored while they carried the
    discount), or in one without them exact wins, as its ``exact_wins`` says. The discount: its config's
    ``agent.gamma``; in one without it, the ``gamma`` its rules stored, else ``GAMMA``."""
    stored = dict(payload.get("rules") or {})
    gamma = stored.pop("gamma", GAMMA)
    config = payload.get("config")
    agent = config.get("agent") if isinstance(config, dict) else None
    if isinstance(agent, dict) and "gamma" in agent:
        gamma = agent["gamma"]
    rules = Rules(**stored) if "rules" in payload else Rules(wins=bool(payload.get("exact_wins", True)))
    return rules, float(gamma)


def player_from_checkpoint(payload: dict) -> DQNPlayer:
    """The greedy player of a ``dqn`` checkpoint, with its rules and discount (``checkpoint_rules``).

    Weights that do not fit the network the checkpoint describes (a rank head it does not record, or
    one missing) are a one-line CheckpointError."""
    game = make_game(payload["game"])
    net = build_value_net(OmegaConf.create(payload["network"]), game, rank_head=bool(payload.get("rank_head", False)))
    load_weights(net, payload["weights"])
    net.eval()
    return DQNPlayer(game, net, payload["network"], *checkpoint_rules(payload))

