"""The learner's training games, networks, optimiser and opponents: ``Trainer``, with a run axis.

K runs (``seeds=K``; one by default) of ``num_envs`` games each; each ply is one forward pass over every
legal afterstate of every game where a learner moves, and one optimiser step per run over its examples of
that ply (``td``: the TD(0) targets; ``labels``: the rules' labels and rank pairs). With ``num_envs=1`` each
run is exactly the online per-game algorithm, and each run side by side is its seed's run alone (only the
arithmetic of several runs' networks is shared: ``ttt.nets.runs``). Devices (``ttt.device``): written once
against ``ttt.games.arrays``, numpy on the CPU, torch tensors and generators on a GPU, where networks, move
selection, TD targets and opponents run too; per ply only sizes reach the host.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import torch

from ttt.agents.dqn import curriculum, labels
from ttt.agents.dqn.curriculum import OPPONENT_PHASES
from ttt.agents.dqn.health import Recent
from ttt.agents.dqn.moves import epsilon_greedy_parts, move_scores
from ttt.agents.dqn.settings import Config, epsilon_at, lr_scale_at, training_rules
from ttt.agents.dqn.td import (
    Targets,
    bootstrap_values,
    example_weights,
    final_targets,
    lambda_targets,
    make_optimizer,
    steps_stacks,
    td0_targets,
    td_loss,
)
from ttt.checkpoint import CheckpointError, load_weights
from ttt.config import agent_settings
from ttt.device import array_device, torch_device
from ttt.games import BatchedGames, Game
from ttt.games.arrays import arrays_for
from ttt.games.exact import Rules
from ttt.games.threats import MoveTactics, move_tactics
from ttt.nets.runs import RowNets, add_grads_to_stacks, move_stacked_grads, stack_parameters
from ttt.nets.structured import ValueNet, build_value_net
from ttt.players import BenchmarkPlayer

# the per-game arrays a checkpoint holds: the BatchedGames state, then the trainer's own
GAME_ARRAYS = ("board", "to_play", "done", "winner", "num_moves", "last_action")
TRAINER_ARRAYS = ("agent_seat", "opponent", "pool_index", "prev", "has_prev")
TRACE_ARRAYS = ("trace_obs", "trace_boot", "trace_len")  # with td_lambda > 0: each seat's afterstates so far


class Trainer:
    """K runs (one by default) of ``num_envs`` training games each, each run with its learning network,
    optimiser, opponents and random stream.

    ``step()`` plays one ply in every game and makes one TD(0) update per run that has training
    examples; it returns that ply's examples. Everything a run needs to continue is in
    ``state_dict(r)``.

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
        settings = agent_settings(agent_cfg, Config)
        self.rngs = list(rng) if isinstance(rng, (list, tuple)) else [rng]
        self.k = k = len(self.rngs)
        if net is not None and k != 1:
            raise ValueError("a network is given for one run only")
        self.game, self.settings = game, settings
        self.rules = training_rules(settings) if rules is None else rules
        self.device = device
        self.xp = xp = arrays_for(array_device(device))
        self.nets = [(self._new_net(network_cfg, None if seeds is None else seeds[r]) if net is None else net)
                     .to(torch_device(device)) for r in range(k)]
        if k > 1:  # several runs: their parameters kept stacked, so that a call of all of them copies none
            stack_parameters(self.nets)
        self.optimizer = make_optimizer(settings, self.nets[0] if k == 1 else self.nets)
        self.on_stacks = steps_stacks(settings, self.nets)  # the optimiser holds the stacks (plain SGD)
        self.groups = len(make_optimizer(settings, self.nets[0]).param_groups)  # param groups of one run
        self.merged = len(self.optimizer.param_groups) == self.groups  # one group per kind, unless each run's schedule
        self.base_lrs = [group["lr"] for group in self.optimizer.param_groups[:self.groups]]
        self.pools: list[list[ValueNet]] = [[] for _ in range(k)]  # per run: frozen copies, oldest first
        # the target networks (target_every > 0): what the TD(0) bootstrap values the chosen move with
        self.targets = [copy.deepcopy(n).requires_grad_(False) for n in self.nets] if settings.target_every else None
        self.target_taken_at = np.zeros(k, dtype=np.int64)
        self.frozen_taken_at = np.full(k, -1, dtype=np.int64)
        self.frozen_refreshes = np.zeros(k, dtype=np.int64)
        self.benchmark = BenchmarkPlayer(game)
        self.num_envs = b = int(num_envs)
        self.games = BatchedGames(game, k * b, xp.device)
        envs = xp.arange(k * b)
        self.run_of = envs // b
        local = envs % b
        self.agent_seat = xp.astype(xp.where(local % 2 == 0, 1, -1), "int8")  # seats alternate per game
        self.opponent = xp.zeros(k * b, "int8")  # each game's opponent (OPPONENT_PHASES code)
        self.pool_index = xp.zeros(k * b, "int64")  # the frozen copy each game plays
        self.prev = xp.zeros((k * b, 2, game.num_cells), "float32")  # last afterstate per seat
        self.has_prev = xp.zeros((k * b, 2), "bool")
        self.arrays = TRAINER_ARRAYS
        if settings.td_lambda > 0:  # each seat's afterstates of the game so far and their bootstrap values
            most = (game.num_cells + 1) // 2
            self.trace_obs = xp.zeros((k * b, 2, most, game.num_cells), "int8")  # boards: -1, 0, +1
            self.trace_boot = xp.zeros((k * b, 2, most), "float32")
            self.trace_len = xp.zeros((k * b, 2), "int64")
            self.seat_sign = xp.asarray(np.array([1.0, -1.0], dtype=np.float32))  # seat 0 plays +1, seat 1 -1
            self.arrays = TRAINER_ARRAYS + TRACE_ARRAYS
        self.run_episodes = np.zeros(k, dtype=np.int64)
        self.run_steps = np.zeros(k, dtype=np.int64)
        self.active = np.ones(k, dtype=bool)  # runs still training (a finished run's games stop: retire)
        self.recent = Recent(k, game.num_cells, xp)  # the learners' last positions, for the health figures
        self._live = None  # the games of the active runs, None while every run trains
        # the TD loss summed where the network is (float64: the same sums as Python floats), read when logged
        self.loss_sum = torch.zeros(k, dtype=torch.float64, device=torch_device(device))
        self.loss_count = np.zeros(k, dtype=np.int64)
        # positions of random play, one ply further every step, labelled by the rules alone: the positions
        # self-play rarely reaches (several open threats at once) still teach the network what the rules know
        labels = max(settings.random_labels, settings.rank_labels)
        self.label_games = [BatchedGames(game, labels, xp.device) for _ in range(k)] if labels else None
        for r in range(k):
            curriculum.refresh_frozen(self, r)
            curriculum.draw_opponents(self, r, self.games_of(r), xp.zeros(b, "int64"))

    def _new_net(self, network_cfg, seed: int | None) -> ValueNet:
        if seed is not None:  # as a run of that seed alone initialises its network
            torch.manual_seed(int(seed))
        return build_value_net(network_cfg, self.game, rank_head=self.settings.rank_head)

    # ---- one run's view (the single run's names)
    @property
    def net(self) -> ValueNet:
        """The network of the first run (of the single run)."""
        return self.nets[0]

    @property
    def rng(self):
        """The random stream of the first run (of the single run)."""
        return self.rngs[0]

    @property
    def pool(self) -> list[ValueNet]:
        """The frozen copies of the first run (of the single run)."""
        return self.pools[0]

    @property
    def target(self) -> ValueNet | None:
        """The target network of the first run (of the single run), None without one."""
        return None if self.targets is None else self.targets[0]

    @property
    def frozen(self) -> ValueNet | None:
        """The newest frozen copy of the first run (None before the curriculum takes one)."""
        return self.pool[-1] if self.pool else None

    @property
    def episodes(self) -> int:
        """Training games finished, all runs together (one run: its own)."""
        return int(self.run_episodes.sum())

    def games_of(self, r: int) -> slice:
        """The games of run ``r`` (a slice of the per-game arrays)."""
        return slice(r * self.num_envs, (r + 1) * self.num_envs)

    def each_run(self, rows):
        """``(r, at)`` for each run with games among ``rows`` (ascending), in run order; ``at``: its slice of rows."""
        if not len(rows):
            return
        if self.k == 1:
            yield 0, slice(None)
            return
        bounds = np.searchsorted(self.xp.numpy(rows), np.arange(self.k + 1) * self.num_envs)
        for r in range(self.k):
            if bounds[r + 1] > bounds[r]:
                yield r, slice(int(bounds[r]), int(bounds[r + 1]))

    def scorer(self, rows, nets: list[ValueNet] | None = None):
        """The networks ``nets`` (one per run; the learners' by default) as one, each of the games ``rows``
        valued by its run's (``RowNets``); one run: its network itself."""
        nets = self.nets if nets is None else nets
        return nets[0] if self.k == 1 else RowNets(nets, self.run_of[rows])

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
        """``move_tactics`` of the games ``rows`` when the rules or the rule labels need them, else None."""
        if not (self.rules.needs_tactics() or self.settings.rule_labels) or not len(rows):
            return None
        g = self.games
        return move_tactics(g.board[rows], g.to_play[rows], g.legal_mask()[rows], self.game)

    def retire(self, r: int) -> None:
        """Run ``r`` has finished: its games stop, the other runs go on."""
        self.active[r] = False
        self.games.done[self.games_of(r)] = True
        self._live = self.xp.asarray(self.active[self.xp.numpy(self.run_of)])

    # ---- one ply in every game
    def step(self, actions=None) -> Targets:
        """Play one ply everywhere and learn from it; ``actions`` (one per game) scripts every move.

        Returns the ply's training examples (before any symmetry augmentation), on the trainer's device."""
        g, settings, xp = self.games, self.settings, self.xp
        mover = xp.copy(g.to_play)
        learner = self.learner_mask()
        lrn = xp.flatnonzero(learner)  # the games whose mover's afterstate is trained
        chosen = xp.full(len(g), -1, "int64")
        tactics = self.tactics(lrn)
        # order: what the move is chosen by (the rank head's, with one); values: what the target bootstraps from
        gamma = float(settings.gamma)
        order, values = move_scores(self.scorer(lrn), g, lrn, self.rules, tactics, gamma=gamma) if len(lrn) \
            else (None, None)
        if self.targets is not None and len(lrn):  # the move chosen by the network, valued by the copy
            values = move_scores(self.scorer(lrn, self.targets), g, lrn, self.rules, tactics, gamma=gamma)[1]
        if actions is not None:
            chosen[:] = xp.asarray(actions)
        else:
            parts = [(at, epsilon_at(settings, int(self.run_episodes[r])), self.rngs[r])
                     for r, at in self.each_run(lrn)]
            if parts:  # each run's epsilon-greedy choice, from its own stream
                chosen[lrn] = epsilon_greedy_parts(order, parts, xp)
            others = ~learner if self._live is None else ~learner & self._live
            curriculum.opponent_moves(self, xp.flatnonzero(others), chosen)
        new_value = bootstrap_values(values, chosen[lrn], xp)
        # the learners' boards before the move and their new afterstates, from the mover's view
        views = xp.astype(g.board[lrn] * mover[lrn, None], "float32")
        self.recent.add(self.run_of[lrn], views)
        after = xp.copy(views)
        after[xp.arange(len(lrn)), chosen[lrn]] = 1.0

        # scripted moves are checked; chosen ones come from legal masks (on a GPU, checking would wait for it)
        ended = xp.flatnonzero(g.play(chosen, check=actions is not None or not xp.is_torch))
        reward = xp.astype(xp.astype(g.winner, "int64") * mover, "float32")  # the mover's view, 0 if not over
        seat = xp.astype(mover[lrn] < 0, "int64")
        other = xp.astype(mover[ended] > 0, "int64")  # seat index of the player who did not move
        if settings.td_lambda > 0:
            parts = [self._lambda_targets(lrn, seat, after, new_value, reward, ended)]
        else:
            parts = [
                td0_targets(lrn, self.prev[lrn, seat], self.has_prev[lrn, seat], after, new_value,
                            g.done[lrn], reward[lrn], gamma),
                final_targets(ended, self.prev[ended, other], self.has_prev[ended, other], reward[ended]),
            ]
        nets, td_count = self.nets, sum(len(p.targets) for p in parts)
        for r, at in self.each_run(lrn) if settings.rule_labels and tactics is not None else ():
            parts.append(labels.rule_targets(lrn[at], views[at], tactics.take(at), gamma, self.game,
                                             settings.fork_defence_labels, self.rngs[r]))
        batch = Targets.concat(parts)
        runs = self.run_of[batch.rows]  # the run of each example (labels of random play: below)
        pairs = [None] * self.k
        if self.label_games is not None:
            labelled, label_runs = [batch], [runs]
            for r in np.flatnonzero(self.active):
                drawn, pairs[r] = labels.random_position_labels(self.label_games[r], settings, nets[r], self.rngs[r])
                labelled.append(drawn)
                label_runs.append(xp.full(len(drawn.targets), int(r), "int64"))
            batch, runs = Targets.concat(labelled), xp.concat(label_runs)
        self._update(batch.obs, batch.targets, runs, pairs, td_count)

        # remember the learners' afterstates; start new games where games ended
        self.prev[lrn, seat] = after
        self.has_prev[lrn, seat] = True
        self.run_steps[self.active] += 1
        if len(ended):
            self.has_prev[ended] = False
            self.agent_seat[ended] *= -1
            g.reset(g.done if self._live is None else g.done & self._live)  # a retired run's games stay finished
            for r, at in self.each_run(ended):
                envs = ended[at]
                curriculum.draw_opponents(self, r, envs, int(self.run_episodes[r]) + 1 + xp.arange(len(envs)))
                self.run_episodes[r] += len(envs)
                curriculum.refresh_frozen(self, r)
                if self.targets is not None and \
                        self.run_episodes[r] - self.target_taken_at[r] >= self.settings.target_every:
                    self.targets[r].load_state_dict(self.nets[r].state_dict())
                    self.target_taken_at[r] = self.run_episodes[r]
        return batch

    def _lambda_targets(self, lrn, seat, after, new_value, reward, ended) -> Targets:
        """Keep each learner's new afterstate and its bootstrap value (its reward where terminal); the
        λ-return targets of every afterstate of the games that ``ended`` (``td.lambda_targets``)."""
        g, xp = self.games, self.xp
        k = self.trace_len[lrn, seat]
        self.trace_obs[lrn, seat, k] = xp.astype(after, "int8")
        self.trace_boot[lrn, seat, k] = xp.where(g.done[lrn], reward[lrn], new_value)
        self.trace_len[lrn, seat] += 1
        outcome = xp.astype(g.winner[ended], "float32")[:, None] * self.seat_sign[None, :]
        targets = lambda_targets(ended, xp.astype(self.trace_obs[ended], "float32"), self.trace_boot[ended],
                                 self.trace_len[ended], outcome, float(self.settings.gamma),
                                 float(self.settings.td_lambda))
        self.trace_len[ended] = 0
        return targets

    def _symmetric(self, boards, runs):
        """Each board as a random one of its symmetric images (``symmetry_augment``, drawn from the stream
        of its run, ``runs``), else as it is."""
        if not self.settings.symmetry_augment or not len(boards):
            return boards
        # a symmetry maps lines to lines, so the value is unchanged; the per-line detector weights
        # of every line in an orbit then learn from a threat seen on any of them
        xp = self.xp
        symmetries = xp.table(self.game.symmetries) if xp.is_torch else self.game.symmetries
        if self.k == 1:
            perms = symmetries[xp.integers(self.rngs[0], len(symmetries), len(boards))]
        else:
            perms = xp.zeros((len(boards), boards.shape[1]), "int64")
            for r in range(self.k):
                at = xp.flatnonzero(runs == r)
                if len(at):
                    perms[at] = symmetries[xp.integers(self.rngs[r], len(symmetries), len(at))]
        return boards[xp.arange(len(boards))[:, None], perms]

    def _update(self, obs, targets, runs, pairs, td_count: int | None = None) -> None:
        """One optimiser step of each run on its TD targets of this ply (constants: detached; each run's loss
        its own mean; with ``label_weight`` the labels, examples ``td_count`` on (None: none), their own mean:
        ``td.example_weights``), plus ``rank_weight`` times ``rank_loss`` on its ``pairs[r]`` (higher, lower,
        above) when given. A run without targets does not step."""
        if len(targets) == 0:
            return
        xp, settings = self.xp, self.settings
        obs = self._symmetric(obs, runs)
        target = xp.to_tensor(targets)
        if self.k == 1 and not settings.label_weight:
            stepping = [0]
            pred = self.net(xp.to_tensor(obs))
            loss = td_loss(pred, target, settings.loss)
            losses = loss.detach().double().reshape(1) * len(targets)
            counts = np.array([len(targets)])
        else:
            counts = np.bincount(xp.numpy(runs), minlength=self.k)
            stepping = np.flatnonzero(counts).tolist()
            runs_t = xp.to_tensor(runs)
            net = self.net if self.k == 1 else RowNets(self.nets, runs_t)
            per = td_loss(net(xp.to_tensor(obs)), target, settings.loss, reduction="none")
            loss = (per * example_weights(runs_t, td_count, self.k, settings.label_weight)).sum()  # each run's own
            losses = torch.zeros(self.k, dtype=torch.float64, device=per.device).index_add_(
                0, runs_t, per.detach().double())
        for r in stepping:
            if pairs[r] is not None and len(pairs[r][1]):
                higher, lower, above = pairs[r]
                boards = self._symmetric(xp.concat([higher, lower]), xp.full(len(higher) + len(lower), r, "int64"))
                higher, lower = xp.to_tensor(boards[:len(higher)]), xp.to_tensor(boards[len(higher):])
                loss = loss + settings.rank_weight * labels.rank_loss(self.nets[r], higher, lower, xp.to_tensor(above))
        self.optimizer.zero_grad(set_to_none=True)  # a run without targets keeps no gradient: it does not step
        loss.backward()
        if self.on_stacks:  # the optimiser steps the stacks: the rank pairs' gradients to them
            add_grads_to_stacks(self.nets, stepping)
        elif self.k > 1:
            move_stacked_grads(self.nets, stepping)
        for r in stepping:
            scale = lr_scale_at(settings, int(self.run_episodes[r]))
            if scale != 1.0:  # a schedule: each group's rate from the settings, so a resumed run matches
                groups = self.optimizer.param_groups[r * self.groups:(r + 1) * self.groups]
                for group, lr in zip(groups, self.base_lrs, strict=True):
                    group["lr"] = lr * scale
        self.optimizer.step()
        self.loss_sum += losses
        self.loss_count += counts

    def take_loss(self, r: int = 0) -> float:
        """Mean TD loss of run ``r`` since the previous call (nan when there was no update)."""
        count = int(self.loss_count[r])
        mean = float(self.loss_sum[r]) / count if count else float("nan")
        self.loss_sum[r] = 0.0
        self.loss_count[r] = 0
        return mean

    def weights(self, r: int = 0) -> dict:
        """Run ``r``'s network weights, a copy (side by side its parameters share the stacks' memory)."""
        return {name: value.clone() for name, value in self.nets[r].state_dict().items()}

    def _run_optimizer(self, r: int, state: dict | None = None) -> torch.optim.Optimizer:
        """Run ``r``'s optimiser as its own (``make_optimizer`` of its network alone), holding its state;
        with ``state`` (such an optimiser's ``state_dict``), that state is loaded into the trainer's."""
        if self.k == 1:
            if state is not None:
                self.optimizer.load_state_dict(state)
            return self.optimizer
        own = make_optimizer(self.settings, self.nets[r])
        groups = self.optimizer.param_groups[0 if self.merged else r * self.groups:][:self.groups]
        if state is not None:
            own.load_state_dict(state)
            for mine, group in zip(own.param_groups, groups, strict=True):
                group["lr"] = mine["lr"]
            for p in self.nets[r].parameters():
                self.optimizer.state.pop(p, None)
                if p in own.state:
                    self.optimizer.state[p] = own.state[p]
            return own
        for mine, group in zip(own.param_groups, groups, strict=True):
            mine["lr"] = group["lr"]
        for p in self.nets[r].parameters():
            if p in self.optimizer.state:
                own.state[p] = self.optimizer.state[p]
        return own

    # ---- checkpoint state of one run (the same format for every K)
    def state_dict(self, r: int = 0) -> dict:
        g, xp, rng = self.games, self.xp, self.rngs[r]
        games = self.games_of(r)

        def saved(x):  # a CPU tensor copy of run r's slice of a per-game array
            return xp.to_tensor(xp.copy(x[games])).cpu()

        generator = {"device": rng.get_state()} if xp.is_torch else {"numpy": rng.bit_generator.state}
        return {
            "weights": self.weights(r),
            "optimizer": self._run_optimizer(r).state_dict(),
            "pool": [f.state_dict() for f in self.pools[r]],
            "target": None if self.targets is None else self.targets[r].state_dict(),
            "target_taken_at": int(self.target_taken_at[r]),
            "frozen_taken_at": int(self.frozen_taken_at[r]),
            "frozen_refreshes": int(self.frozen_refreshes[r]),
            "episodes": int(self.run_episodes[r]),
            "steps": int(self.run_steps[r]),
            "envs": {**{name: saved(getattr(g, name)) for name in GAME_ARRAYS},
                     **{name: saved(getattr(self, name)) for name in self.arrays}},
            "label_games": None if self.label_games is None else
            {name: xp.to_tensor(xp.copy(getattr(self.label_games[r], name))).cpu() for name in GAME_ARRAYS},
            "rng": {**generator, "torch": torch.get_rng_state(), "python": random.getstate()},
        }

    def load_state_dict(self, s: dict, r: int = 0) -> None:
        """Continue run ``r`` from its ``state_dict``."""
        net = self.nets[r]
        load_weights(net, s["weights"])
        self._run_optimizer(r, s["optimizer"])
        self.pools[r] = []
        for weights in s["pool"]:
            frozen = copy.deepcopy(net).requires_grad_(False)
            load_weights(frozen, weights)
            self.pools[r].append(frozen)
        self.frozen_taken_at[r], self.frozen_refreshes[r] = s["frozen_taken_at"], s["frozen_refreshes"]
        if self.targets is not None:  # a checkpoint from before the option: the copy starts from the weights
            load_weights(self.targets[r], s["target"] if s.get("target") is not None else s["weights"])
            self.target_taken_at[r] = s.get("target_taken_at", s["episodes"])
        self.run_episodes[r], self.run_steps[r] = s["episodes"], s["steps"]
        g, envs, xp, games = self.games, s["envs"], self.xp, self.games_of(r)
        if tuple(envs["board"].shape) != (self.num_envs, self.game.num_cells):
            raise CheckpointError(f"checkpoint has {envs['board'].shape[0]} training games, config has {self.num_envs}")
        saved_on = "cuda" if "device" in s["rng"] else "cpu"
        if saved_on != ("cuda" if xp.is_torch else "cpu"):
            raise CheckpointError(f"this run was trained with device={saved_on}; resume it with device={saved_on}")
        for name in GAME_ARRAYS:
            getattr(g, name)[games] = xp.asarray(envs[name].numpy())
        for name in self.arrays:
            if name in TRACE_ARRAYS and name not in envs:  # td_lambda turned on at resume: traces start now
                continue
            saved = envs[name] if name in envs else envs["kind"]  # older checkpoints name it "kind"
            getattr(self, name)[games] = xp.asarray(saved.numpy())
        if self.label_games is not None:
            if s.get("label_games") is None:
                raise CheckpointError("this run was trained without random-play labels or rank pairs "
                                      "(agent.random_labels and agent.rank_labels 0); resume it with the same")
            for name in GAME_ARRAYS:
                getattr(self.label_games[r], name)[:] = xp.asarray(s["label_games"][name].numpy())
        if xp.is_torch:
            self.rngs[r].set_state(s["rng"]["device"])
        else:
            self.rngs[r].bit_generator.state = s["rng"]["numpy"]
        torch.set_rng_state(s["rng"]["torch"])
        random.setstate(s["rng"]["python"])
