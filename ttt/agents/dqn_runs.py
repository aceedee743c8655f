"""Many runs of the TD(0) learner side by side in one process: ``python -m ttt.train ... seeds=K``.

K independent runs of one config, the seeds ``seed`` .. ``seed+K-1``, step in lockstep. Each run is
exactly the learner of ``ttt.agents.dqn`` with its own seed: its own network (initialised as a run
of that seed alone initialises it), optimiser state, ``num_envs`` games, opponents (random,
benchmark, a frozen pool of its own copies, self-play), random stream (a numpy generator seeded
with its seed, drawn from in the order the single-run ``Trainer`` draws) and evaluations. Its
network is updated after every ply of its own games. Only the arithmetic is shared: the K networks
are stacked parameters (a leading run axis) and one lockstep ply is one batched forward pass over
every run's afterstates and one batched backward pass over every run's TD targets, the loss of each
run its own mean, so that each run's gradient is its own.

Each run writes its own folder ``<run_dir>/seed_<s>/`` with exactly what a single run writes
(``checkpoint.pt`` in the single-run format, ``final_eval.json``, ``tb/``, ``train.log``), guarded
by its own ``ttt.training.Run``: it can be resumed, plotted and benchmarked like any run, alone or
with its group. A run that reaches ``episodes`` evaluates and leaves the lockstep; the others go on.
Ctrl-C or SIGTERM saves every run and prints the command that resumes the group.

What runs side by side: the curriculum (``opponent``, ``opponent_after``, ``switch_episode``,
``benchmark_fraction``, ``frozen_pool``, ``refresh_every``, ``frozen_epsilon``), the epsilon
schedule, SGD or Adam (``first_lr`` too), Huber or squared loss, ``gamma``, and the win and loss
rules in move selection (``exact_wins``, ``exact_losses``); the trained player's own rules
(``play_forks``, ``play_threats``) apply to its evaluations as in a single run. The recipe's label
options (rule, random-play and rank labels, symmetry augmentation) and tied line detectors are
refused with one line: train those runs one at a time.

Rounding: stacked products sum in another order than one network's, so a run side by side and the
same seed alone agree to float rounding, not bit for bit; they make the same moves for hundreds of
games (a test pins 200) and then drift apart as any two roundings of a chaotic process do.
"""

from __future__ import annotations

import contextlib
import copy
import random
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from ttt.agents.dqn import (
    GAME_ARRAYS,
    NO_RULES,
    OPPONENT_PHASES,
    Config,
    DQNPlayer,
    epsilon_at,
    make_optimizer,
    training_rules,
)
from ttt.checkpoint import save_checkpoint
from ttt.cli import Interrupted
from ttt.config import ConfigError, agent_settings
from ttt.games import BatchedGames, Game, random_legal_actions
from ttt.games.threats import completing_moves, move_tactics
from ttt.nets.structured import StructuredLayer, ValueNet, build_value_net
from ttt.players.fixed import BenchmarkPlayer

RANDOM, FROZEN, BENCHMARK, SELF_PLAY = (OPPONENT_PHASES[k] for k in ("random", "frozen", "benchmark", "self_play"))

# settings a run side by side cannot take: (key, the value that is allowed)
UNSUPPORTED = (("rule_labels", False), ("random_labels", 0), ("rank_labels", 0), ("symmetry_augment", False),
               ("exact_forks", False))


def check_side_by_side(cfg: DictConfig) -> None:
    """Refuse, naming the key, what ``seeds=K`` > 1 cannot train side by side."""
    a = agent_settings(cfg.agent, Config)
    for key, allowed in UNSUPPORTED:
        if getattr(a, key) != allowed:
            raise ConfigError(f"seeds={cfg.seeds}: agent.{key}={getattr(a, key)} is not trained side by side; "
                              f"train these runs one at a time (seeds=1, seed=...)")
    if cfg.network.get("tie_orbits", False):
        raise ConfigError(f"seeds={cfg.seeds}: network.tie_orbits=true is not trained side by side")
    if str(cfg.get("device", "auto")) == "cuda":
        raise ConfigError(f"seeds={cfg.seeds}: runs side by side run on the CPU (device=cpu or auto)")


# -------------------------------------------------------------------------------- stacked networks
class StackedNets:
    """K value networks of one architecture (``build_value_net``) as parameters with a leading run axis.

    ``params[i]`` stacks parameter ``names[i]`` of every run (the order of ``named_parameters``). The
    methods take parameters with any leading axis M (all runs, some of them, or one set per row,
    gathered with ``take``) and boards (M, N, cells): row m is valued by parameter set m.
    """

    def __init__(self, nets: list[ValueNet]) -> None:
        template = nets[0]
        self.template = template
        self.names = [name for name, _ in template.named_parameters()]
        states = [dict(net.named_parameters()) for net in nets]
        self.params = [torch.stack([s[name].detach() for s in states]) for name in self.names]
        self.structured = isinstance(template.first, StructuredLayer)
        if self.structured:
            self.lines = template.first.lines  # (L, k) cells
            num_lines, k = self.lines.shape
            d = template.first.detectors
            # where block entry (l, j, d) sits in a flattened (L*D, cells) dense weight
            unit = torch.arange(num_lines)[:, None, None] * d + torch.arange(d)[None, None, :]
            self.block_index = (unit * template.first.num_cells + self.lines[:, :, None]).reshape(-1)
            self._dense: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        first_bias = ("first.bias" in self.names)
        # (weight index, bias index or None) of each Linear in rest, in order
        self.linears = []
        for i, layer in enumerate(template.rest):
            if isinstance(layer, torch.nn.Linear):
                w = self.names.index(f"rest.{i}.weight")
                b = self.names.index(f"rest.{i}.bias") if f"rest.{i}.bias" in self.names else None
                self.linears.append((w, b))
        self.first_w = self.names.index("first.weight")
        self.first_b = self.names.index("first.bias") if first_bias else None
        self.num_cells = template.first.num_cells if self.structured else template.first.in_features

    def __len__(self) -> int:
        return int(self.params[0].shape[0])

    def take(self, index: torch.Tensor, params: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
        """The parameter sets ``index`` (a long tensor of run numbers), copied."""
        return [p.index_select(0, index) for p in (self.params if params is None else params)]

    # ---- the layers, on boards as columns: (M, cells, N) -> (M, units, N)
    def dense_first(self, w: torch.Tensor) -> torch.Tensor:
        """The line detectors' blocks (M, L, k, D) placed in (M, L*D, cells) first-layer weights, zero off
        the blocks. On a CPU one matrix product with these is several times faster than L products
        of k x D blocks; only the blocks are parameters, and only they are trained. The result is a
        buffer kept per M (only the block entries are written): use it before the next call."""
        dense, index = self._dense_buffer(w.shape[0])
        dense.put_(index, w.reshape(-1))
        return dense

    def _dense_buffer(self, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A zero (M, L*D, cells) buffer and the flat positions of the M sets of blocks in it."""
        if m not in self._dense:
            size = self.template.first.out_features * self.num_cells
            index = (torch.arange(m)[:, None] * size + self.block_index[None, :]).reshape(-1)
            self._dense[m] = (torch.zeros(m, self.template.first.out_features, self.num_cells), index)
        return self._dense[m]

    def _activations(self, p: list[torch.Tensor], x: torch.Tensor) -> list[torch.Tensor]:
        """The Tanh outputs of every layer, first to last, each (M, units, N), for boards ``x`` as
        columns (M, cells, N)."""
        w = p[self.first_w]
        pre = torch.bmm(self.dense_first(w) if self.structured else w, x)
        if self.first_b is not None:
            pre = pre + p[self.first_b].unsqueeze(-1)
        acts = [torch.tanh(pre)]
        for w_i, b_i in self.linears:
            pre = torch.bmm(p[w_i], acts[-1])
            if b_i is not None:
                pre = pre + p[b_i].unsqueeze(-1)
            acts.append(torch.tanh(pre))
        return acts

    @torch.no_grad()
    def forward(self, p: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """(M, N, cells) boards -> (M, N) values in [-1, 1]."""
        return self._activations(p, x.transpose(1, 2))[-1][:, 0]

    @torch.no_grad()
    def loss_and_grads(self, p: list[torch.Tensor], x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                       huber: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The per-example loss (M, N) of boards ``x`` (M, N, cells) toward ``target`` (M, N) and the
        gradients of ``sum(weight * loss)`` with respect to ``p`` (back-propagation written out: the
        network is a chain of Tanh layers). Huber loss with delta 1, or the squared error."""
        xc = x.transpose(1, 2)
        acts = self._activations(p, xc)
        out = acts[-1][:, 0]
        diff = out - target
        if huber:
            per = torch.where(diff.abs() < 1, 0.5 * diff * diff, diff.abs() - 0.5)
            d_out = weight * diff.clamp(-1.0, 1.0)
        else:
            per = diff * diff
            d_out = weight * 2.0 * diff
        grads: list[torch.Tensor | None] = [None] * len(p)
        g = (d_out * (1 - out * out)).unsqueeze(1)  # (M, 1, N): the output unit's pre-activation
        for i in range(len(self.linears) - 1, -1, -1):
            w_i, b_i = self.linears[i]
            h = acts[i]
            grads[w_i] = torch.bmm(g, h.transpose(1, 2))
            if b_i is not None:
                grads[b_i] = g.sum(2)
            g = torch.bmm(p[w_i].transpose(1, 2), g) * (1 - h * h)
        dense = torch.bmm(g, x)  # (M, units, cells)
        if self.structured:  # the gradient of each block: its entries of the dense gradient
            w = p[self.first_w]
            grads[self.first_w] = dense.take(self._dense_buffer(w.shape[0])[1]).view(w.shape)
        else:
            grads[self.first_w] = dense
        if self.first_b is not None:
            grads[self.first_b] = g.sum(2)
        return per, grads

    @torch.no_grad()
    def afterstate_values(self, p: list[torch.Tensor], boards: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        """Values of every legal afterstate, (M, N, cells) boards (mover's view) -> (M, N, cells), -inf
        where illegal. Only the legal afterstates are built and valued (at most 16 on Score Four)."""
        m, n, cells = boards.shape
        count = legal.sum(-1)
        width = max(int(count.max()), 1)
        # the legal cells of each board first, in order: (M, N, width), valid where < count
        order = torch.sort((~legal).to(torch.int8), dim=-1, stable=True).indices[..., :width]
        valid = torch.arange(width) < count.unsqueeze(-1)
        after = boards.unsqueeze(2).repeat(1, 1, width, 1)  # (M, N, width, cells)
        after.scatter_(3, order.unsqueeze(-1), valid.unsqueeze(-1).to(after.dtype))
        values = self.forward(p, after.view(m, n * width, cells)).view(m, n, width)
        out = torch.full((m, n, cells), float("-inf"))
        out.scatter_(2, order, torch.where(valid, values, float("-inf")))
        return out

    # ---- one run as a module
    def net(self, k: int) -> ValueNet:
        """A ``ValueNet`` holding run ``k``'s weights (a copy)."""
        net = copy.deepcopy(self.template)
        net.load_state_dict(self.state_dict(k), strict=False)
        return net

    def state_dict(self, k: int, params: list[torch.Tensor] | None = None) -> dict:
        """Run ``k``'s weights as the ``state_dict`` of a single-run ``ValueNet``."""
        params = self.params if params is None else params
        state = {name: p[k].detach().clone() for name, p in zip(self.names, params, strict=True)}
        return {**{k_: v for k_, v in self.template.state_dict().items() if k_ not in state}, **state}

    def load(self, k: int, state: dict, params: list[torch.Tensor] | None = None) -> None:
        """Set run ``k``'s weights from a single-run ``state_dict``."""
        with torch.no_grad():
            for name, p in zip(self.names, self.params if params is None else params, strict=True):
                p[k].copy_(state[name])


class StackedOptimizer:
    """SGD or Adam (``make_optimizer``'s settings) over stacked parameters, one state per run: a run
    steps only when it has targets, as a single run skips the step of a ply without any."""

    def __init__(self, a: Config, nets: StackedNets) -> None:
        self.a, self.nets = a, nets
        first = [name.startswith("first.") for name in nets.names]
        self.lr = [a.first_lr if (a.first_lr > 0 and f) else a.lr for f in first]
        self.adam = a.optimizer == "adam"
        k = len(nets)
        self.steps = torch.zeros(k, dtype=torch.float64)
        if self.adam:
            self.exp_avg = [torch.zeros_like(p) for p in nets.params]
            self.exp_avg_sq = [torch.zeros_like(p) for p in nets.params]

    @torch.no_grad()
    def step(self, runs: torch.Tensor, grads: list[torch.Tensor], everyone: bool = False) -> None:
        """Apply ``grads`` (one row per run of ``runs``, a long tensor); the other runs do not step.
        ``everyone``: ``runs`` is every run in order."""
        params = self.nets.params
        if not self.adam:
            for p, g, lr in zip(params, grads, self.lr, strict=True):
                if everyone:
                    p.add_(g, alpha=-lr)  # torch.optim.SGD's arithmetic
                else:
                    p.index_add_(0, runs, g, alpha=-lr)
            return
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        self.steps[runs] += 1
        t = self.steps[runs]
        bc1 = 1 - beta1 ** t
        bc2_sqrt = (1 - beta2 ** t).sqrt()
        for i, (p, g, lr) in enumerate(zip(params, grads, self.lr, strict=True)):
            shape = (-1,) + (1,) * (p.dim() - 1)
            m = self.exp_avg[i][runs].lerp_(g, 1 - beta1)
            v = self.exp_avg_sq[i][runs].mul_(beta2).addcmul_(g, g, value=1 - beta2)
            step_size = (lr / bc1).to(p.dtype).view(shape)
            denom = (v.sqrt() / bc2_sqrt.to(p.dtype).view(shape)).add_(eps)
            p[runs] = p[runs] - step_size * (m / denom)
            self.exp_avg[i][runs] = m
            self.exp_avg_sq[i][runs] = v

    def state_dict(self, k: int, net: ValueNet) -> dict:
        """Run ``k``'s optimiser state as a single run's ``torch.optim`` state_dict."""
        opt = make_optimizer(self.a, net)
        if self.adam and self.steps[k] > 0:
            params = dict(net.named_parameters())
            for i, name in enumerate(self.nets.names):
                opt.state[params[name]] = {"step": torch.tensor(float(self.steps[k])),
                                           "exp_avg": self.exp_avg[i][k].clone(),
                                           "exp_avg_sq": self.exp_avg_sq[i][k].clone()}
        return opt.state_dict()

    def load(self, k: int, state: dict) -> None:
        """Set run ``k``'s optimiser state from a single run's saved one."""
        if not self.adam:
            return
        saved = state["state"]
        order = [i for group in state["param_groups"] for i in group["params"]]
        for i, index in enumerate(order):
            if index in saved:
                self.steps[k] = float(saved[index]["step"])
                self.exp_avg[i][k] = saved[index]["exp_avg"]
                self.exp_avg_sq[i][k] = saved[index]["exp_avg_sq"]


# -------------------------------------------------------------------------------- the lockstep trainer
class SideBySide:
    """K runs of the TD(0) learner (``seeds``), ``num_envs`` games each, stepped in lockstep.

    Game ``i`` belongs to run ``i // num_envs``. The per-game arrays are those of ``Trainer`` (and a
    checkpoint of run k holds its slice in the single-run format); per run: episodes, steps, the
    frozen pool, the random stream and the optimiser state.
    """

    def __init__(self, game: Game, network_cfg, agent_cfg, seeds: list[int], num_envs: int) -> None:
        a = agent_settings(agent_cfg, Config)
        self.game, self.a, self.seeds, self.b = game, a, list(seeds), int(num_envs)
        self.k = k = len(seeds)
        self.rules = training_rules(a)
        nets = []
        for seed in seeds:  # each network as a run of that seed alone initialises it
            torch.manual_seed(seed)
            nets.append(build_value_net(network_cfg, game))
        self.nets = StackedNets(nets)
        self.optimizer = StackedOptimizer(a, self.nets)
        self.rngs = [np.random.default_rng(seed) for seed in seeds]
        self.games = BatchedGames(game, k * self.b)
        g = k * self.b
        self.run_of = np.arange(g) // self.b
        local = np.arange(g) % self.b
        self.agent_seat = np.where(local % 2 == 0, 1, -1).astype(np.int8)
        self.opponent = np.zeros(g, dtype=np.int8)  # each game's opponent (OPPONENT_PHASES code)
        self.pool_index = np.zeros(g, dtype=np.int64)
        self.prev = np.zeros((g, 2, game.num_cells), dtype=np.float32)
        self.has_prev = np.zeros((g, 2), dtype=bool)
        self.episodes = np.zeros(k, dtype=np.int64)
        self.steps = np.zeros(k, dtype=np.int64)
        self.active = np.ones(k, dtype=bool)  # runs still training
        self.pool: list[list[list[torch.Tensor]]] = [[] for _ in range(k)]  # per run: frozen parameter sets
        self.frozen_taken_at = np.full(k, -1, dtype=np.int64)
        self.frozen_refreshes = np.zeros(k, dtype=np.int64)
        self.loss_sum = np.zeros(k)
        self.loss_count = np.zeros(k, dtype=np.int64)
        self.benchmark = BenchmarkPlayer(game)
        self._rows = np.arange(g)
        for r in range(k):
            self._refresh_frozen(r)
            self._new_games(r, self._games_of(r), np.zeros(self.b, dtype=np.int64))

    def _games_of(self, r: int) -> np.ndarray:
        return self._rows[r * self.b: (r + 1) * self.b]

    # ---- curriculum (per run, as Trainer)
    def phase(self, r: int) -> str:
        a = self.a
        return a.opponent if self.episodes[r] < a.switch_episode else a.opponent_after

    def phase_label(self, r: int) -> str:
        name, share = self.phase(r), self.a.benchmark_fraction
        if name == "frozen" and self.a.frozen_pool > 1:
            name = f"frozen (pool of {len(self.pool[r])})"
        if self.episodes[r] < self.a.switch_episode or share <= 0:
            return name
        return "benchmark" if share >= 1 else f"{share:.0%} benchmark / {1 - share:.0%} {name}"

    def _new_games(self, r: int, envs: np.ndarray, episodes: np.ndarray) -> None:
        a, rng = self.a, self.rngs[r]
        before = episodes < a.switch_episode
        opponent = np.where(before, OPPONENT_PHASES[a.opponent], OPPONENT_PHASES[a.opponent_after]).astype(np.int8)
        if a.benchmark_fraction > 0:
            after = np.flatnonzero(~before)
            if len(after):
                benchmark = rng.random(len(after)) < a.benchmark_fraction
                opponent[after] = np.where(benchmark, BENCHMARK, opponent[after]).astype(np.int8)
        self.opponent[envs] = opponent
        pool = self.pool[r]
        self.pool_index[envs] = max(len(pool) - 1, 0)
        if len(pool) > 1:
            frozen = envs[opponent == FROZEN]
            if len(frozen):
                self.pool_index[frozen] = rng.integers(0, len(pool), size=len(frozen))

    def _refresh_frozen(self, r: int) -> None:
        a = self.a
        if self.phase(r) != "frozen" and a.opponent != "frozen":
            return
        pool = self.pool[r]
        due = not pool or (a.refresh_every > 0 and self.episodes[r] - self.frozen_taken_at[r] >= a.refresh_every)
        if due:
            pool.append([p[r].detach().clone() for p in self.nets.params])
            if len(pool) > a.frozen_pool:
                pool.pop(0)
                games = self._games_of(r)
                self.pool_index[games] = np.maximum(self.pool_index[games] - 1, 0)
            self.frozen_taken_at[r] = self.episodes[r]
            self.frozen_refreshes[r] += 1

    def learner_mask(self) -> np.ndarray:
        return (self.games.to_play == self.agent_seat) | (self.opponent == SELF_PLAY)

    # ---- values
    def _values(self, rows: np.ndarray, params_of_rows: list[torch.Tensor] | None = None) -> torch.Tensor:
        """(len(rows), cells) afterstate values of games ``rows`` by their runs' networks (or by the
        parameter sets given per row), with the rules applied; -inf where illegal."""
        g = self.games
        board, to_play, legal = g.board[rows], g.to_play[rows], g.legal_mask()[rows]
        views = torch.from_numpy((board * to_play[:, None]).astype(np.float32))
        legal_t = torch.from_numpy(legal)
        if params_of_rows is not None:  # one parameter set per row
            values = self.nets.afterstate_values(params_of_rows, views[:, None], legal_t[:, None])[:, 0]
        else:  # the rows of each run together: (runs, num_envs) when every game of a run is asked
            runs = self.run_of[rows]
            if self.b == 1:
                p = self.nets.take(torch.from_numpy(runs))
                values = self.nets.afterstate_values(p, views[:, None], legal_t[:, None])[:, 0]
            else:
                uniq, pos = np.unique(runs, return_inverse=True)
                slot = rows - uniq[pos] * self.b  # the game's place within its run
                boards = torch.zeros(len(uniq), self.b, g.game.num_cells)
                mask = torch.zeros(len(uniq), self.b, g.game.num_cells, dtype=torch.bool)
                boards[pos, slot], mask[pos, slot] = views, legal_t
                p = self.nets.take(torch.from_numpy(uniq))
                values = self.nets.afterstate_values(p, boards, mask)[pos, slot]
        rules = self.rules
        if rules.losses:
            t = move_tactics(board, to_play, legal, self.game)
            values.masked_fill_(torch.from_numpy(t.loss), -1.0)
        if rules.wins:
            values.masked_fill_(torch.from_numpy(completing_moves(board, to_play, legal, self.game)), 1.0)
        return values

    # ---- one lockstep ply
    def step(self) -> None:
        """One ply in every game of every active run, and each run's TD(0) update."""
        g, a = self.games, self.a
        live_game = self.active[self.run_of]
        mover = g.to_play.copy()
        learner = self.learner_mask() & live_game
        lrn = np.flatnonzero(learner)
        chosen = np.full(len(g), -1, dtype=np.int64)
        values = self._values(lrn) if len(lrn) else None
        if len(lrn):
            greedy = values.argmax(1).numpy()
            legal = (values > float("-inf")).numpy()
            runs = self.run_of[lrn]
            for r in np.unique(runs):  # each run's exploration draws, from its own stream
                at = np.flatnonzero(runs == r)
                eps = epsilon_at(a, int(self.episodes[r]))
                if eps > 0:
                    explore = self.rngs[r].random(len(at)) < eps
                    if explore.any():
                        greedy[at[explore]] = random_legal_actions(legal[at[explore]], self.rngs[r])
            chosen[lrn] = greedy
        self._opponent_moves(np.flatnonzero(~learner & live_game), chosen)
        rows = np.arange(len(lrn))
        new_value = values[torch.from_numpy(rows), torch.from_numpy(chosen[lrn])].numpy() if len(lrn) \
            else np.zeros(0, dtype=np.float32)
        views = (g.board[lrn] * mover[lrn, None]).astype(np.float32)
        after = views.copy()
        after[rows, chosen[lrn]] = 1.0

        ended = np.flatnonzero(g.play(chosen))
        reward = (g.winner.astype(np.int64) * mover).astype(np.float32)
        seat = (mover[lrn] < 0).astype(np.int64)
        other = (mover[ended] > 0).astype(np.int64)
        from ttt.agents.dqn import Targets, final_targets, td0_targets

        batch = Targets.concat([
            td0_targets(lrn, self.prev[lrn, seat], self.has_prev[lrn, seat], after, new_value,
                        g.done[lrn], reward[lrn], float(a.gamma)),
            final_targets(ended, self.prev[ended, other], self.has_prev[ended, other], reward[ended]),
        ])
        self._update(batch)

        self.prev[lrn, seat] = after
        self.has_prev[lrn, seat] = True
        self.steps[self.active] += 1
        if len(ended):
            self.has_prev[ended] = False
            self.agent_seat[ended] *= -1
            g.reset(g.done & live_game)  # a retired run's games stay finished
            ended_runs = self.run_of[ended]
            for r in np.unique(ended_runs):
                envs = ended[ended_runs == r]
                self._new_games(r, envs, self.episodes[r] + 1 + np.arange(len(envs)))
                self.episodes[r] += len(envs)
                self._refresh_frozen(r)

    def _opponent_moves(self, rows: np.ndarray, chosen: np.ndarray) -> None:
        """The opponents' moves in games ``rows``: per run, random, then benchmark, then frozen draws
        (the single run's order)."""
        if not len(rows):
            return
        g, a = self.games, self.a
        kinds = self.opponent[rows]
        legal = g.legal_mask()
        bench_rows = rows[kinds == BENCHMARK]
        choice = self.benchmark.choices(g) if len(bench_rows) else None
        frozen_rows = rows[kinds == FROZEN]
        frozen_values = None
        if len(frozen_rows):
            runs = torch.from_numpy(self.run_of[frozen_rows])
            slots = self.pool_index[frozen_rows]
            params = [torch.stack([self.pool[int(r)][int(s)][i] for r, s in zip(runs, slots, strict=True)])
                      for i in range(len(self.nets.params))]
            frozen_values = self._values(frozen_rows, params)
        runs = self.run_of[rows]
        for r in np.unique(runs):
            rng = self.rngs[r]
            mine = runs == r
            pick = rows[mine & (kinds == RANDOM)]
            if len(pick):
                chosen[pick] = random_legal_actions(legal[pick], rng)
            pick = rows[mine & (kinds == BENCHMARK)]
            if len(pick):  # the single run draws the benchmark's moves for all its games
                games = self._games_of(r)
                chosen[pick] = random_legal_actions(choice[games], rng)[pick - games[0]]
            mine_frozen = self.run_of[frozen_rows] == r if frozen_values is not None else None
            if mine_frozen is not None and mine_frozen.any():
                slots = self.pool_index[frozen_rows]
                for i in range(len(self.pool[r])):
                    at = np.flatnonzero(mine_frozen & (slots == i))
                    if len(at):
                        vals = frozen_values[torch.from_numpy(at)]
                        moves = vals.argmax(1).numpy()
                        if a.frozen_epsilon > 0:
                            explore = rng.random(len(at)) < a.frozen_epsilon
                            if explore.any():
                                moves[explore] = random_legal_actions((vals > float("-inf")).numpy()[explore], rng)
                        chosen[frozen_rows[at]] = moves

    def _update(self, batch) -> None:
        """Each run's optimiser step on its own TD targets of this ply (its loss its own mean)."""
        if len(batch.targets) == 0:
            return
        runs = self.run_of[batch.rows]
        counts = np.bincount(runs, minlength=self.k)
        stepping = np.flatnonzero(counts)
        # the targets of each stepping run side by side: (runs, most targets of one run, cells)
        slot_of = np.searchsorted(stepping, runs)
        order = np.argsort(slot_of, kind="stable")
        start = np.concatenate([[0], np.cumsum(counts[stepping])[:-1]])
        place = np.empty(len(runs), dtype=np.int64)
        place[order] = np.arange(len(runs)) - start[slot_of[order]]
        m, width = len(stepping), int(counts.max())
        x = torch.zeros(m, width, self.game.num_cells)
        target = torch.zeros(m, width)
        weight = torch.zeros(m, width)
        at = (torch.from_numpy(slot_of), torch.from_numpy(place))
        x[at] = torch.from_numpy(batch.obs)
        target[at] = torch.from_numpy(batch.targets)
        weight[at] = torch.from_numpy((1.0 / counts[runs]).astype(np.float32))
        index = torch.from_numpy(stepping)
        p = self.nets.params if m == self.k else self.nets.take(index)
        per, grads = self.nets.loss_and_grads(p, x, target, weight, self.a.loss == "huber")
        self.optimizer.step(index, grads, everyone=m == self.k)
        self.loss_sum[stepping] += per.double().sum(1).numpy()
        self.loss_count += counts

    def take_loss(self, r: int) -> float:
        mean = self.loss_sum[r] / self.loss_count[r] if self.loss_count[r] else float("nan")
        self.loss_sum[r], self.loss_count[r] = 0.0, 0
        return float(mean)

    def retire(self, r: int) -> None:
        """Run ``r`` has finished: its games stop."""
        self.active[r] = False
        self.games.done[self._games_of(r)] = True

    # ---- checkpoint state of one run, in the single-run Trainer's format
    def state_dict(self, r: int) -> dict:
        games = self._games_of(r)
        g = self.games
        net = self.nets.net(r)

        def saved(x):
            return torch.from_numpy(np.array(x[games]))

        envs = {name: saved(getattr(g, name)) for name in GAME_ARRAYS}
        envs.update(agent_seat=saved(self.agent_seat), opponent=saved(self.opponent), pool_index=saved(self.pool_index),
                    prev=saved(self.prev), has_prev=saved(self.has_prev))
        return {
            "weights": net.state_dict(),
            "optimizer": self.optimizer.state_dict(r, net),
            "pool": [self.nets.state_dict(0, [q.unsqueeze(0) for q in frozen]) for frozen in self.pool[r]],
            "frozen_taken_at": int(self.frozen_taken_at[r]),
            "frozen_refreshes": int(self.frozen_refreshes[r]),
            "episodes": int(self.episodes[r]),
            "steps": int(self.steps[r]),
            "envs": envs,
            "label_games": None,
            "rng": {"numpy": self.rngs[r].bit_generator.state, "torch": torch.get_rng_state(),
                    "python": random.getstate()},
        }

    def load_state_dict(self, r: int, s: dict) -> None:
        from ttt.checkpoint import CheckpointError

        self.nets.load(r, s["weights"])
        self.optimizer.load(r, s["optimizer"])
        self.pool[r] = []
        for weights in s["pool"]:
            self.pool[r].append([weights[name].detach().clone() for name in self.nets.names])
        self.frozen_taken_at[r], self.frozen_refreshes[r] = s["frozen_taken_at"], s["frozen_refreshes"]
        self.episodes[r], self.steps[r] = s["episodes"], s["steps"]
        envs, games = s["envs"], self._games_of(r)
        if tuple(envs["board"].shape) != (self.b, self.game.num_cells):
            raise CheckpointError(f"checkpoint has {envs['board'].shape[0]} training games, config has {self.b}")
        if "numpy" not in s["rng"]:
            raise CheckpointError("this run was trained with device=cuda; runs side by side resume on the CPU")
        for name in GAME_ARRAYS:
            getattr(self.games, name)[games] = envs[name].numpy()
        for name, mine in (("agent_seat", self.agent_seat), ("opponent", self.opponent),
                           ("pool_index", self.pool_index), ("prev", self.prev), ("has_prev", self.has_prev)):
            saved = envs[name] if name in envs else envs["kind"]  # older checkpoints name the opponents "kind"
            mine[games] = saved.numpy()
        self.rngs[r].bit_generator.state = s["rng"]["numpy"]


# -------------------------------------------------------------------------------- the training loop
def train_side_by_side(cfg: DictConfig, run_dir: Path, make_run) -> dict:
    """Train ``cfg.seeds`` runs side by side, run ``s`` in ``run_dir/seed_<s>``, each guarded by
    ``make_run(cfg_of_s, folder)`` (the harness's ``ttt.training.Run``); returns
    ``{"runs": {seed: final evaluation}}`` of the runs that finished."""
    first, count = int(cfg.seed), int(cfg.seeds)
    seeds = list(range(first, first + count))
    check_side_by_side(cfg)
    with contextlib.ExitStack() as stack:
        runs: dict = {}
        for s in seeds:
            sub = cfg.copy()
            OmegaConf.set_struct(sub, False)
            sub.seed, sub.seeds, sub.run_dir, sub.progress = s, 1, str(run_dir / f"seed_{s}"), False
            OmegaConf.set_struct(sub, True)
            run = stack.enter_context(make_run(sub, run_dir / f"seed_{s}"))
            run.resume_dir = run_dir  # Ctrl-C prints the command that resumes the whole group
            runs[s] = run
        results = {s: run.finished for s, run in runs.items() if run.finished is not None}
        todo = [s for s in seeds if s not in results]
        if todo:
            torch.set_num_threads(int(cfg.threads))
            random.seed(todo[0])
            np.random.seed(todo[0])
            results.update(_train_group(cfg, [runs[s] for s in todo], todo))
        return {"runs": results}


def _train_group(cfg: DictConfig, runs: list, seeds: list[int]) -> dict[int, dict]:
    game = runs[0].game
    trainer = SideBySide(game, cfg.network, cfg.agent, seeds, int(cfg.num_envs))
    for r, run in enumerate(runs):
        if run.resumed is not None:
            trainer.load_state_dict(r, run.resumed["trainer"])
    network = OmegaConf.to_container(cfg.network, resolve=True)
    a = trainer.a
    play_rules = replace(trainer.rules, forks=trainer.rules.forks or bool(a.play_forks),
                         threats=max(trainer.rules.threats, int(a.play_threats)))
    eval_rules = replace(play_rules, threats=0)
    total = int(cfg.episodes)
    results: dict[int, dict] = {}

    def player(r: int, final: bool = False) -> DQNPlayer:
        return DQNPlayer(game, trainer.nets.net(r), network, play_rules if final else eval_rules)

    def save(r: int, run) -> None:
        save_checkpoint(run.checkpoint_path(), {
            "kind": "dqn", "game": game.name, "config": run.config_dict(), "network": network,
            "rules": asdict(play_rules), "weights": trainer.nets.state_dict(r), "episodes": int(trainer.episodes[r]),
            "trainer": trainer.state_dict(r)})

    def log(r: int, run, ep: int) -> str:
        run.log("train/td_loss", trainer.take_loss(r), ep)
        run.log("train/epsilon", epsilon_at(a, ep), ep)
        run.log("train/opponent", OPPONENT_PHASES[trainer.phase(r)], ep)
        games = trainer._games_of(r)
        run.log("train/benchmark_share", float((trainer.opponent[games] == BENCHMARK).sum()) / len(games), ep)
        run.log("train/frozen_refreshes", int(trainer.frozen_refreshes[r]), ep)
        return f"opponent {trainer.phase_label(r)}"

    def finish(r: int, run) -> None:
        done = int(trainer.episodes[r])
        final = run.finish(lambda: player(r, final=True), done, lambda _: save(r, run),
                           games=int(a.final_eval_games))
        trainer.retire(r)  # after the checkpoint: it holds the run's games as they are, to continue them
        results[seeds[r]] = run.write_final(final, extra={"command": run.command(), "seed": seeds[r],
                                                         "network": network, "seeds_side_by_side": len(seeds)})

    for r, run in enumerate(runs):
        run.start(int(trainer.episodes[r]))
        if trainer.episodes[r] >= total:
            finish(r, run)
    t0, said, start_games = time.perf_counter(), time.perf_counter(), int(trainer.episodes.sum())
    while trainer.active.any():
        trainer.step()
        stop = next((run._stop for run in runs if run._stop is not None), None)
        interrupted = False
        for r, run in enumerate(runs):
            if not trainer.active[r]:
                continue
            if stop is not None:
                run._stop = stop
            done = int(trainer.episodes[r])
            try:
                run.tick(done, lambda r=r: player(r), lambda _, r=r, run=run: save(r, run),
                         lambda ep, r=r, run=run: log(r, run, ep))
            except Interrupted:
                interrupted = True
                continue
            if done >= total:
                finish(r, run)
        if interrupted:
            raise Interrupted()
        now = time.perf_counter()
        if cfg.progress and now - said >= 10.0:
            said = now
            eps = trainer.episodes[trainer.active]
            rate = (int(trainer.episodes.sum()) - start_games) / (now - t0)
            print(f"[{len(seeds)} runs side by side] episodes {int(eps.min()) if len(eps) else total}-"
                  f"{int(eps.max()) if len(eps) else total}/{total}, {int(trainer.active.sum())} training, "
                  f"{rate:,.0f} games/s in all", file=sys.stderr, flush=True)
    return results


PAPER_NETWORK = {"kind": "structured", "detectors": 4, "hidden": [32], "bias": False}
PAPER_AGENT = dict(optimizer="sgd", lr=0.005, gamma=1.0, loss="mse", epsilon=0.1)


def online_throughput(runs: int, seconds: float, board: str = "4x4x4_gravity", opponent: str = "self_play",
                      alone: bool = False) -> float:
    """Training games per second, all runs together, of ``runs`` runs side by side of the paper's online
    protocol (deep structured network without biases, SGD 0.005, gamma 1, squared error, epsilon 0.1,
    one game at a time per run); with ``alone`` one run of the single-run ``Trainer`` (``num_envs=1``)."""
    from ttt.agents.dqn import Trainer
    from ttt.games import make_game

    network = OmegaConf.create(PAPER_NETWORK)
    agent = Config(**PAPER_AGENT, opponent=opponent, opponent_after=opponent)
    game = make_game(board)
    torch.manual_seed(0)
    trainer = Trainer(game, network, agent, 1, np.random.default_rng(0)) if alone else \
        SideBySide(game, network, agent, list(range(runs)), 1)

    def played() -> int:
        return int(trainer.episodes) if alone else int(trainer.episodes.sum())

    for _ in range(3):
        trainer.step()
    start, t0 = played(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        trainer.step()
    return (played() - start) / (time.perf_counter() - t0)


__all__ = ["SideBySide", "StackedNets", "check_side_by_side", "online_throughput", "train_side_by_side",
           "NO_RULES"]
