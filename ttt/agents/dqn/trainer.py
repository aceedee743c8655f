"""The core: the design's algorithm, ``Trainer``, with a run axis; every addition is a part (``parts``).

K runs (``seeds=K``; one by default) of ``num_envs`` games each, against the curriculum's opponents
(``curriculum``: random, frozen copies, self-play, the benchmark player). Each ply is one forward pass over
every legal afterstate of every game where a learner moves, an epsilon-greedy move by those values
(``moves``), and one optimiser step per run over its examples of that ply: the TD(0) targets or the
λ-returns (``td``), with the Huber loss, and what its parts add. A part (``agent.parts``) hooks in at
named points of the ply (``parts.Part``): the move-selection rules, a target network, the rules' labels and
rank pairs, symmetric images. With ``num_envs=1`` each
run is exactly the online per-game algorithm, and each run side by side is its seed's run alone (only the
arithmetic of several runs' networks is shared: ``ttt.nets.runs``). Devices (``ttt.device``): written once
against ``ttt.games.arrays``, numpy on the CPU, torch tensors and generators on a GPU, where networks, move
selection, TD targets and opponents run too; per ply only sizes reach the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ttt.agents.dqn import curriculum
from ttt.agents.dqn.curriculum import OPPONENT_PHASES
from ttt.agents.dqn.health import Recent
from ttt.agents.dqn.moves import epsilon_greedy_parts, move_scores
from ttt.agents.dqn.parts import table
from ttt.agents.dqn.run_axis import RunAxis
from ttt.agents.dqn.settings import Config, epsilon_at, training_rules
from ttt.agents.dqn.state import TRACE_ARRAYS, TRAINER_ARRAYS
from ttt.agents.dqn.td import (
    Targets,
    bootstrap_values,
    example_weights,
    final_targets,
    lambda_targets,
    td0_targets,
    td_loss,
)
from ttt.config import agent_settings
from ttt.device import array_device, torch_device
from ttt.games import BatchedGames, Game
from ttt.games.arrays import arrays_for
from ttt.games.exact import Rules
from ttt.games.threats import MoveTactics, move_tactics
from ttt.nets.runs import RowNets
from ttt.nets.structured import ValueNet
from ttt.players import BenchmarkPlayer


class Trainer(RunAxis):
    """K runs (one by default) of ``num_envs`` training games each, each run with its learning network,
    optimiser, opponents and random stream, and the parts its settings name (``agent.parts``).

    ``step()`` plays one ply in every game and makes one update per run that has training examples; it
    returns that ply's examples. Everything a run needs to continue is in ``state_dict(r)``.

    ``rng``: one random stream, or a list of them, one per run (K = its length). Game ``i`` belongs to
    run ``i // num_envs``; every draw of run r comes from ``rng[r]`` in the order one run alone draws,
    so each run is exactly the run of its seed alone (``seeds``: the seeds its networks are
    initialised with, as ``ttt.train`` seeds a run before it builds the network; without, the networks
    are built from torch's stream as it stands). Several runs share only the arithmetic: their
    networks' calls are stacked (``ttt.nets.runs.RowNets``), each run's loss its own mean.

    ``device`` ``"cpu"`` (numpy games, ``rng`` a ``np.random.Generator``) or ``"cuda"`` (everything on
    the GPU, ``rng`` a ``torch.Generator`` there; ``arrays_for(array_device(device)).generator(seed)``
    makes either). ``ttt.device.TORCH_CPU`` runs the GPU's code path with tensors on the CPU.
    ``net``: the network of a single run (a player learning from its games), else built.
    ``rules``: the move-selection rules, by default those of the settings (``training_rules``)."""

    def __init__(self, game: Game, network_cfg, agent_cfg, num_envs: int, rng,
                 net: ValueNet | None = None, device: str = "cpu", rules: Rules | None = None,
                 seeds: list[int] | None = None) -> None:
        # a plain dataclass: the loop reads settings every ply, and DictConfig access is slow
        self.settings = settings = agent_settings(agent_cfg, Config)
        self.rngs = list(rng) if isinstance(rng, (list, tuple)) else [rng]
        self.k = k = len(self.rngs)
        if net is not None and k != 1:
            raise ValueError("a network is given for one run only")
        self.game, self.device, self.xp = game, device, arrays_for(array_device(device))
        self.rules = training_rules(settings) if rules is None else rules
        options = {key: v for name, p in settings.parts.items() for key, v in table()[name].network_options(p).items()}
        self.nets = [(net if net is not None else self._new_net(network_cfg, seeds, r, options))
                     .to(torch_device(device)) for r in range(k)]
        self._optimizers(settings)
        self._games(game, int(num_envs))
        self.parts = [table()[name](self, p) for name, p in settings.parts.items()]
        self.needs_tactics = self.rules.needs_tactics() or any(p.needs_tactics() for p in self.parts)
        self.label_weight = max([p.label_weight() for p in self.parts], default=0.0)
        for r in range(k):
            curriculum.refresh_frozen(self, r)
            curriculum.draw_opponents(self, r, self.games_of(r), self.xp.zeros(self.num_envs, "int64"))

    def _games(self, game: Game, b: int) -> None:
        """The K * b training games, their opponents and seats, and each learning seat's last afterstate."""
        xp, k = self.xp, self.k
        self.pools: list[list[ValueNet]] = [[] for _ in range(k)]  # per run: frozen copies, oldest first
        self.frozen_taken_at, self.frozen_refreshes = np.full(k, -1, dtype=np.int64), np.zeros(k, dtype=np.int64)
        self.benchmark = BenchmarkPlayer(game)
        self.num_envs, self.games = b, BatchedGames(game, k * b, xp.device)
        envs = xp.arange(k * b)
        self.run_of = envs // b
        self.agent_seat = xp.astype(xp.where(envs % b % 2 == 0, 1, -1), "int8")  # seats alternate per game
        self.opponent = xp.zeros(k * b, "int8")  # each game's opponent (OPPONENT_PHASES code)
        self.pool_index = xp.zeros(k * b, "int64")  # the frozen copy each game plays
        self.prev = xp.zeros((k * b, 2, game.num_cells), "float32")  # last afterstate per seat
        self.has_prev = xp.zeros((k * b, 2), "bool")
        self.arrays = TRAINER_ARRAYS
        if self.settings.td_lambda > 0:  # each seat's afterstates of the game so far and their bootstrap values
            most = (game.num_cells + 1) // 2
            self.trace_obs = xp.zeros((k * b, 2, most, game.num_cells), "int8")  # boards: -1, 0, +1
            self.trace_boot = xp.zeros((k * b, 2, most), "float32")
            self.trace_len = xp.zeros((k * b, 2), "int64")
            self.seat_sign = xp.asarray(np.array([1.0, -1.0], dtype=np.float32))  # seat 0 plays +1, seat 1 -1
            self.arrays = TRAINER_ARRAYS + TRACE_ARRAYS
        self.run_episodes, self.run_steps = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
        self.active = np.ones(k, dtype=bool)  # runs still training (a finished run's games stop: retire)
        self.recent = Recent(k, game.num_cells, xp)  # the learners' last positions, for the health figures
        self._live = None  # the games of the active runs, None while every run trains

    def part(self, name: str):
        """The trainer's part ``name`` (``agent.parts``), None when the run does not use it."""
        return next((p for n, p in zip(self.settings.parts, self.parts, strict=True) if n == name), None)

    def phase(self, r: int = 0) -> str:
        """The opponent of run ``r``'s games that start now."""
        return curriculum.phase(self.settings, int(self.run_episodes[r]))

    def phase_label(self, r: int = 0) -> str:
        """The opponents of run ``r``'s games that start now, for people: e.g. ``80% benchmark / 20% frozen``."""
        return curriculum.phase_label(self.settings, int(self.run_episodes[r]), len(self.pools[r]))

    def learner_mask(self):
        """Games whose player to move learns: the agent's seat, or both seats in self-play games (of the
        runs still training)."""
        mask = (self.games.to_play == self.agent_seat) | (self.opponent == OPPONENT_PHASES["self_play"])
        return mask if self._live is None else mask & self._live

    def tactics(self, rows) -> MoveTactics | None:
        """``move_tactics`` of the games ``rows`` when the rules or a part need them, else None."""
        if not self.needs_tactics or not len(rows):
            return None
        g = self.games
        return move_tactics(g.board[rows], g.to_play[rows], g.legal_mask()[rows], self.game)

    # ---- one ply in every game: choose, play, targets, update, new games
    def step(self, actions=None) -> Targets:
        """Play one ply everywhere and learn from it; ``actions`` (one per game) scripts every move.

        Returns the ply's training examples (before any part transforms them), on the trainer's device."""
        ply = self._choose(actions)
        ended = self._play(ply, actions)
        examples = [(self._targets(ply, ended), None)]
        for part in self.parts:
            examples += part.examples(ply)
        batch = Targets.concat([e for e, _ in examples])
        runs = self.xp.concat([self.run_of[e.rows] if at is None else at for e, at in examples])
        self._update(batch.obs, batch.targets, runs, len(examples[0][0].targets))
        self._next_games(ply, ended)
        return batch

    def _choose(self, actions) -> Ply:
        """Each learner's move, epsilon-greedy by its network's values (the rules' where they know them),
        and each opponent's (``curriculum.opponent_moves``), or the scripted ``actions``."""
        g, xp = self.games, self.xp
        learner = self.learner_mask()
        lrn = xp.flatnonzero(learner)  # the games whose mover's afterstate is trained
        ply = Ply(lrn, xp.copy(g.to_play), xp.full(len(g), -1, "int64"), self.tactics(lrn), float(self.settings.gamma))
        # order: what the move is chosen by (the rank head's, with one); values: what the target bootstraps from
        order, values = move_scores(self.scorer(lrn), g, lrn, self.rules, ply.tactics, gamma=ply.gamma) \
            if len(lrn) else (None, None)
        for part in self.parts:
            values = part.bootstrap(ply, values)
        if actions is not None:
            ply.chosen[:] = xp.asarray(actions)
        else:
            choices = [(at, epsilon_at(self.settings, int(self.run_episodes[r])), self.rngs[r])
                       for r, at in self.each_run(lrn)]
            if choices:  # each run's epsilon-greedy choice, from its own stream
                ply.chosen[lrn] = epsilon_greedy_parts(order, choices, xp)
            others = ~learner if self._live is None else ~learner & self._live
            curriculum.opponent_moves(self, xp.flatnonzero(others), ply.chosen)
        ply.new_value = bootstrap_values(values, ply.chosen[lrn], xp)
        # the learners' boards before the move and their new afterstates, from the mover's view
        ply.views = xp.astype(g.board[lrn] * ply.mover[lrn, None], "float32")
        self.recent.add(self.run_of[lrn], ply.views)
        ply.after = xp.copy(ply.views)
        ply.after[xp.arange(len(lrn)), ply.chosen[lrn]] = 1.0
        return ply

    def _play(self, ply: Ply, actions):
        """Play the chosen moves; the games that ended, and each mover's reward (its view, 0 if not over)."""
        g, xp = self.games, self.xp
        # scripted moves are checked; chosen ones come from legal masks (on a GPU, checking would wait for it)
        ended = xp.flatnonzero(g.play(ply.chosen, check=actions is not None or not xp.is_torch))
        ply.reward = xp.astype(xp.astype(g.winner, "int64") * ply.mover, "float32")
        ply.seat = xp.astype(ply.mover[ply.lrn] < 0, "int64")
        return ended

    def _targets(self, ply: Ply, ended) -> Targets:
        """The TD(0) targets of the ply (``td0_targets``, ``final_targets``), or with ``td_lambda`` the
        λ-returns of the games that ended."""
        g, lrn, seat = self.games, ply.lrn, ply.seat
        if self.settings.td_lambda > 0:
            return self._lambda_targets(ply, ended)
        other = self.xp.astype(ply.mover[ended] > 0, "int64")  # seat index of the player who did not move
        return Targets.concat([
            td0_targets(lrn, self.prev[lrn, seat], self.has_prev[lrn, seat], ply.after, ply.new_value,
                        g.done[lrn], ply.reward[lrn], ply.gamma),
            final_targets(ended, self.prev[ended, other], self.has_prev[ended, other], ply.reward[ended]),
        ])

    def _lambda_targets(self, ply: Ply, ended) -> Targets:
        """Keep each learner's new afterstate and its bootstrap value (its reward where terminal); the
        λ-return targets of every afterstate of the games that ``ended`` (``td.lambda_targets``)."""
        g, xp, lrn, seat = self.games, self.xp, ply.lrn, ply.seat
        k = self.trace_len[lrn, seat]
        self.trace_obs[lrn, seat, k] = xp.astype(ply.after, "int8")
        self.trace_boot[lrn, seat, k] = xp.where(g.done[lrn], ply.reward[lrn], ply.new_value)
        self.trace_len[lrn, seat] += 1
        outcome = xp.astype(g.winner[ended], "float32")[:, None] * self.seat_sign[None, :]
        targets = lambda_targets(ended, xp.astype(self.trace_obs[ended], "float32"), self.trace_boot[ended],
                                 self.trace_len[ended], outcome, ply.gamma, float(self.settings.td_lambda))
        self.trace_len[ended] = 0
        return targets

    def transform(self, boards, runs):
        """The boards an update trains on, as the parts change them (``symmetry``: a random image of each)."""
        for part in self.parts:
            boards = part.transform(boards, runs)
        return boards

    def _update(self, obs, targets, runs, td_count: int | None = None) -> None:
        """One optimiser step of each run on its examples of this ply (constants: detached; each run's loss
        its own mean; with a part's ``label_weight`` the examples from ``td_count`` on, its labels, a mean of
        their own: ``td.example_weights``), plus the parts' losses of each run. A run without examples
        does not step."""
        if len(targets) == 0:
            return
        xp, settings = self.xp, self.settings
        obs, target = self.transform(obs, runs), xp.to_tensor(targets)
        if self.k == 1 and not self.label_weight:
            stepping, counts = [0], np.array([len(targets)])
            loss = td_loss(self.net(xp.to_tensor(obs)), target, settings.loss)
            losses = loss.detach().double().reshape(1) * len(targets)
        else:
            counts = np.bincount(xp.numpy(runs), minlength=self.k)
            stepping, runs_t = np.flatnonzero(counts).tolist(), xp.to_tensor(runs)
            net = self.net if self.k == 1 else RowNets(self.nets, runs_t)
            per = td_loss(net(xp.to_tensor(obs)), target, settings.loss, reduction="none")
            loss = (per * example_weights(runs_t, td_count, self.k, self.label_weight)).sum()  # each run's own
            losses = torch.zeros(self.k, dtype=torch.float64, device=per.device).index_add_(
                0, runs_t, per.detach().double())
        for r in stepping:
            for part in self.parts:
                extra = part.loss(r)
                loss = loss if extra is None else loss + extra
        self._step(loss, stepping)
        self.loss_sum += losses
        self.loss_count += counts

    def _next_games(self, ply: Ply, ended) -> None:
        """Remember the learners' afterstates; start new games where games ended, with their opponents."""
        g, xp = self.games, self.xp
        self.prev[ply.lrn, ply.seat] = ply.after
        self.has_prev[ply.lrn, ply.seat] = True
        self.run_steps[self.active] += 1
        if not len(ended):
            return
        self.has_prev[ended] = False
        self.agent_seat[ended] *= -1
        g.reset(g.done if self._live is None else g.done & self._live)  # a retired run's games stay finished
        for r, at in self.each_run(ended):
            envs = ended[at]
            curriculum.draw_opponents(self, r, envs, int(self.run_episodes[r]) + 1 + xp.arange(len(envs)))
            self.run_episodes[r] += len(envs)
            curriculum.refresh_frozen(self, r)
            for part in self.parts:
                part.games_ended(r)

@dataclass
class Ply:
    """What one ply's hooks see: the learners' games ``lrn``, each game's mover and chosen move, the
    learners' ``tactics`` (when needed), the discount; after the choice the learners' boards ``views`` and
    afterstates ``after`` (mover's view) and the bootstrap ``new_value``; after play ``reward``, ``seat``."""

    lrn: Any
    mover: Any
    chosen: Any
    tactics: MoveTactics | None
    gamma: float
    views: Any = None
    after: Any = None
    new_value: Any = None
    reward: Any = None
    seat: Any = None
