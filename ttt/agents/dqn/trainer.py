"""A batch of training games, the learning network, its optimiser and the opponents: ``Trainer``.

``num_envs`` games run side by side; each ply is one forward pass over every legal afterstate of
every game where a learner moves, and one optimiser step over every training example of that ply
(``ttt.agents.dqn.td``: the TD(0) targets; ``ttt.agents.dqn.labels``: the rules' labels and rank
pairs). With ``num_envs=1`` this is exactly the online per-game algorithm.

Devices (``device=cpu|cuda``, ``ttt.device``). The trainer is written once against
``ttt.games.arrays``: on the CPU the games and the trainer's per-game arrays are numpy arrays and
random numbers come from a numpy generator; on a GPU they are torch tensors there, drawn from a
``torch.Generator``, and the networks, move selection, the TD targets and the random, benchmark and
frozen opponents run there too. Per ply only sizes (how many games a learner moves in, how many
ended) reach the host; the logged loss is summed on the device and read when it is logged.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import torch

from ttt.agents.dqn import curriculum
from ttt.agents.dqn.curriculum import OPPONENT_PHASES
from ttt.agents.dqn.labels import random_position_labels, rank_loss, rule_targets, search_backup_targets
from ttt.agents.dqn.moves import epsilon_greedy, move_scores
from ttt.agents.dqn.settings import Config, epsilon_at, lr_scale_at, training_rules
from ttt.agents.dqn.td import Targets, bootstrap_values, final_targets, lambda_targets, td0_targets, td_loss
from ttt.checkpoint import CheckpointError, load_weights
from ttt.config import agent_settings
from ttt.device import array_device, torch_device
from ttt.games import BatchedGames, Game
from ttt.games.arrays import arrays_for
from ttt.games.exact import Rules
from ttt.games.threats import MoveTactics, move_tactics
from ttt.nets.stacked import StackedNets
from ttt.nets.structured import ValueNet, build_value_net
from ttt.players import BenchmarkPlayer

# the per-game arrays a checkpoint holds: the BatchedGames state, then the trainer's own
GAME_ARRAYS = ("board", "to_play", "done", "winner", "num_moves", "last_action")
TRAINER_ARRAYS = ("agent_seat", "opponent", "pool_index", "prev", "has_prev")
TRACE_ARRAYS = ("trace_obs", "trace_boot", "trace_len")  # with td_lambda > 0: each seat's afterstates so far


def make_optimizer(settings: Config, net: torch.nn.Module) -> torch.optim.Optimizer:
    """SGD or Adam at ``settings.lr``; the first layer's parameters at ``settings.first_lr`` when that is
    set (> 0)."""
    if settings.first_lr > 0:
        rest = [p for name, p in net.named_parameters() if not name.startswith("first.")]  # rest., then rank.
        params = [{"params": net.first.parameters(), "lr": settings.first_lr}, {"params": rest}]
    else:
        params = net.parameters()
    if settings.optimizer == "sgd":
        return torch.optim.SGD(params, lr=settings.lr)
    return torch.optim.Adam(params, lr=settings.lr)


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


class Trainer:
    """``num_envs`` training games, the learning network, its optimiser and the opponents.

    ``step()`` plays one ply in every game and makes one TD(0) update; it returns that ply's training
    examples. Everything it needs to continue is in ``state_dict()``.

    ``device`` ``"cpu"`` (numpy games, ``rng`` a ``np.random.Generator``) or ``"cuda"`` (everything on
    the GPU, ``rng`` a ``torch.Generator`` there; ``arrays_for(array_device(device)).generator(seed)``
    makes either). ``ttt.device.TORCH_CPU`` runs the GPU's code path with tensors on the CPU.
    ``rules``: the move-selection rules, by default those of the settings (``training_rules``).
    """

    def __init__(self, game: Game, network_cfg, agent_cfg, num_envs: int, rng,
                 net: ValueNet | None = None, device: str = "cpu", rules: Rules | None = None) -> None:
        # a plain dataclass: the loop reads settings every ply, and DictConfig access is slow
        settings = agent_settings(agent_cfg, Config)
        self.game, self.settings, self.rng = game, settings, rng
        self.rules = training_rules(settings) if rules is None else rules
        self.device = device
        self.xp = xp = arrays_for(array_device(device))
        if net is None:
            net = build_value_net(network_cfg, game, rank_head=settings.rank_head)
        self.net = net.to(torch_device(device))
        self.optimizer = make_optimizer(settings, self.net)
        self.base_lrs = [group["lr"] for group in self.optimizer.param_groups]
        self.pool: list[ValueNet] = []  # frozen copies, oldest first
        # the target network (target_every > 0): what the TD(0) bootstrap values the chosen move with
        self.target = copy.deepcopy(self.net).requires_grad_(False) if settings.target_every > 0 else None
        self.target_taken_at = 0
        self.frozen_taken_at = -1
        self.frozen_refreshes = 0
        self.benchmark = BenchmarkPlayer(game)
        self.games = BatchedGames(game, num_envs, xp.device)
        envs = xp.arange(num_envs)
        self.agent_seat = xp.astype(xp.where(envs % 2 == 0, 1, -1), "int8")  # seats alternate per game
        self.opponent = xp.zeros(num_envs, "int8")  # each game's opponent (OPPONENT_PHASES code)
        self.pool_index = xp.zeros(num_envs, "int64")  # the frozen copy each game plays
        self.prev = xp.zeros((num_envs, 2, game.num_cells), "float32")  # last afterstate per seat
        self.has_prev = xp.zeros((num_envs, 2), "bool")
        self.arrays = TRAINER_ARRAYS
        if settings.td_lambda > 0:  # each seat's afterstates of the game so far and their bootstrap values
            most = (game.num_cells + 1) // 2
            self.trace_obs = xp.zeros((num_envs, 2, most, game.num_cells), "int8")  # boards: -1, 0, +1
            self.trace_boot = xp.zeros((num_envs, 2, most), "float32")
            self.trace_len = xp.zeros((num_envs, 2), "int64")
            self.seat_sign = xp.asarray(np.array([1.0, -1.0], dtype=np.float32))  # seat 0 plays +1, seat 1 -1
            self.arrays = TRAINER_ARRAYS + TRACE_ARRAYS
        self.episodes = 0
        self.steps = 0
        # the TD loss summed where the network is (float64: the same sums as Python floats), read when logged
        self.loss_sum = torch.zeros((), dtype=torch.float64, device=torch_device(device))
        self.loss_count = 0
        curriculum.refresh_frozen(self)
        curriculum.draw_opponents(self, envs, xp.zeros(num_envs, "int64"))
        # positions of random play, one ply further every step, labelled by the rules alone: the positions
        # self-play rarely reaches (several open threats at once) still teach the network what the rules know
        labels = max(settings.random_labels, settings.rank_labels)
        self.label_games = BatchedGames(game, labels, xp.device) if labels else None

    @property
    def frozen(self) -> ValueNet | None:
        """The newest frozen copy (None before the curriculum takes one)."""
        return self.pool[-1] if self.pool else None

    def phase(self) -> str:
        """The opponent of games that start now."""
        return curriculum.phase(self.settings, self.episodes)

    def phase_label(self) -> str:
        """The opponents of games that start now, for people: e.g. ``80% benchmark / 20% frozen``."""
        return curriculum.phase_label(self.settings, self.episodes, len(self.pool))

    def learner_mask(self):
        """Games whose player to move learns: the agent's seat, or both seats in self-play games."""
        return (self.games.to_play == self.agent_seat) | (self.opponent == OPPONENT_PHASES["self_play"])

    def tactics(self, rows) -> MoveTactics | None:
        """``move_tactics`` of the games ``rows`` when the rules or the rule labels need them, else None."""
        if not (self.rules.needs_tactics() or self.settings.rule_labels) or not len(rows):
            return None
        g = self.games
        return move_tactics(g.board[rows], g.to_play[rows], g.legal_mask()[rows], self.game)

    # ---- one ply in every game
    def step(self, actions=None) -> Targets:
        """Play one ply everywhere and learn from it; ``actions`` (one per game) scripts every move.

        Returns the ply's training examples (before any symmetry augmentation), on the trainer's device."""
        g, rng, settings, xp = self.games, self.rng, self.settings, self.xp
        mover = xp.copy(g.to_play)
        learner = self.learner_mask()
        # the games whose mover's afterstate is trained: the learners', and the opponents' with learn_opponent_moves
        lrn = xp.arange(len(g)) if settings.learn_opponent_moves else xp.flatnonzero(learner)
        chosen = xp.full(len(g), -1, "int64")
        tactics = self.tactics(lrn)
        # order: what the move is chosen by (the rank head's, with one); values: what the target bootstraps from
        order, values = move_scores(self.net, g, lrn, self.rules, tactics) if len(lrn) else (None, None)
        if self.target is not None and len(lrn):  # the move chosen by the network, valued by the copy
            values = move_scores(self.target, g, lrn, self.rules, tactics)[1]
        if actions is not None:
            chosen[:] = xp.asarray(actions)
        else:
            # the learners among them choose by the network (all of them unless the opponents' moves are trained)
            mine = xp.flatnonzero(learner[lrn]) if settings.learn_opponent_moves else None
            rows, scores = (lrn, order) if mine is None else (lrn[mine], order[mine])
            if len(rows):
                chosen[rows] = epsilon_greedy(scores, epsilon_at(settings, self.episodes), rng, xp)
            curriculum.opponent_moves(self, xp.flatnonzero(~learner), chosen)
        new_value = bootstrap_values(values, chosen[lrn], xp, bool(settings.greedy_bootstrap))
        # the learners' boards before the move and their new afterstates, from the mover's view
        views = xp.astype(g.board[lrn] * mover[lrn, None], "float32")
        g_legal = g.legal_mask()[lrn] if settings.search_backup else None
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
                            g.done[lrn], reward[lrn], float(settings.gamma)),
                final_targets(ended, self.prev[ended, other], self.has_prev[ended, other], reward[ended]),
            ]
        if settings.rule_labels and tactics is not None:
            parts.append(rule_targets(lrn, views, tactics, float(settings.gamma), self.game,
                                      settings.fork_defence_labels, rng))
        if settings.search_backup and len(lrn):
            parts.append(search_backup_targets(lrn, views, g_legal, tactics, self.net, self.game,
                                               float(settings.gamma), self.rules))
        pairs = None
        if self.label_games is not None:
            labels, pairs = random_position_labels(self.label_games, settings, self.net, rng)
            parts.append(labels)
        batch = Targets.concat(parts)
        self._update(batch.obs, batch.targets, pairs)

        # remember the learners' afterstates; start new games where games ended
        self.prev[lrn, seat] = after
        self.has_prev[lrn, seat] = True
        self.steps += 1
        if len(ended):
            self.has_prev[ended] = False
            self.agent_seat[ended] *= -1
            g.reset(g.done)
            curriculum.draw_opponents(self, ended, self.episodes + 1 + xp.arange(len(ended)))
            self.episodes += len(ended)
            curriculum.refresh_frozen(self)
            if self.target is not None and self.episodes - self.target_taken_at >= self.settings.target_every:
                self.target.load_state_dict(self.net.state_dict())
                self.target_taken_at = self.episodes
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

    def _symmetric(self, boards):
        """Each board as a random one of its symmetric images (``symmetry_augment``), else as it is."""
        if not self.settings.symmetry_augment or not len(boards):
            return boards
        # a symmetry maps lines to lines, so the value is unchanged; the per-line detector weights
        # of every line in an orbit then learn from a threat seen on any of them
        xp = self.xp
        symmetries = xp.table(self.game.symmetries) if xp.is_torch else self.game.symmetries
        perms = symmetries[xp.integers(self.rng, len(symmetries), len(boards))]
        return boards[xp.arange(len(boards))[:, None], perms]

    def _update(self, obs, targets, pairs=None) -> None:
        """One optimiser step on the TD targets of this ply (targets are constants: detached), plus
        ``rank_weight`` times ``rank_loss`` on ``pairs`` (higher, lower, above) when given."""
        if len(targets) == 0:
            return
        xp = self.xp
        pred = self.net(xp.to_tensor(self._symmetric(obs)))
        target = xp.to_tensor(targets)
        loss = td_loss(pred, target, self.settings.loss)
        loss_value = loss.detach()
        if pairs is not None and len(pairs[1]):
            higher, lower, above = pairs
            boards = self._symmetric(xp.concat([higher, lower]))
            higher, lower = xp.to_tensor(boards[:len(higher)]), xp.to_tensor(boards[len(higher):])
            loss = loss + self.settings.rank_weight * rank_loss(self.net, higher, lower, xp.to_tensor(above))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        scale = lr_scale_at(self.settings, self.episodes)
        if scale != 1.0:  # a schedule: each group's rate from the settings, so a resumed run matches
            for group, lr in zip(self.optimizer.param_groups, self.base_lrs, strict=True):
                group["lr"] = lr * scale
        self.optimizer.step()
        self.loss_sum += loss_value.double() * len(targets)
        self.loss_count += len(targets)

    def take_loss(self) -> float:
        """Mean TD loss since the previous call (nan when there was no update)."""
        mean = float(self.loss_sum) / self.loss_count if self.loss_count else float("nan")
        self.loss_sum.zero_()
        self.loss_count = 0
        return mean

    # ---- checkpoint state
    def state_dict(self) -> dict:
        g, xp = self.games, self.xp

        def saved(x):  # a CPU tensor copy of a per-game array
            return xp.to_tensor(xp.copy(x)).cpu()

        generator = {"device": self.rng.get_state()} if xp.is_torch else {"numpy": self.rng.bit_generator.state}
        return {
            "weights": self.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "pool": [f.state_dict() for f in self.pool],
            "target": None if self.target is None else self.target.state_dict(),
            "target_taken_at": self.target_taken_at,
            "frozen_taken_at": self.frozen_taken_at,
            "frozen_refreshes": self.frozen_refreshes,
            "episodes": self.episodes,
            "steps": self.steps,
            "envs": {**{name: saved(getattr(g, name)) for name in GAME_ARRAYS},
                     **{name: saved(getattr(self, name)) for name in self.arrays}},
            "label_games": None if self.label_games is None else
            {name: saved(getattr(self.label_games, name)) for name in GAME_ARRAYS},
            "rng": {**generator, "torch": torch.get_rng_state(), "python": random.getstate()},
        }

    def load_state_dict(self, s: dict) -> None:
        load_weights(self.net, s["weights"])
        self.optimizer.load_state_dict(s["optimizer"])
        self.pool = []
        for weights in s["pool"]:
            frozen = copy.deepcopy(self.net).requires_grad_(False)
            load_weights(frozen, weights)
            self.pool.append(frozen)
        self.frozen_taken_at, self.frozen_refreshes = s["frozen_taken_at"], s["frozen_refreshes"]
        if self.target is not None:  # a checkpoint from before the option: the copy starts from the weights
            load_weights(self.target, s["target"] if s.get("target") is not None else s["weights"])
            self.target_taken_at = s.get("target_taken_at", s["episodes"])
        self.episodes, self.steps = s["episodes"], s["steps"]
        g, envs, xp = self.games, s["envs"], self.xp
        if tuple(envs["board"].shape) != tuple(g.board.shape):
            raise CheckpointError(f"checkpoint has {envs['board'].shape[0]} training games, config has {len(g)}")
        saved_on = "cuda" if "device" in s["rng"] else "cpu"
        if saved_on != ("cuda" if xp.is_torch else "cpu"):
            raise CheckpointError(f"this run was trained with device={saved_on}; resume it with device={saved_on}")
        for name in GAME_ARRAYS:
            getattr(g, name)[:] = xp.asarray(envs[name].numpy())
        for name in self.arrays:
            if name in TRACE_ARRAYS and name not in envs:  # td_lambda turned on at resume: traces start now
                continue
            saved = envs[name] if name in envs else envs["kind"]  # older checkpoints name it "kind"
            getattr(self, name)[:] = xp.asarray(saved.numpy())
        if self.label_games is not None:
            for name in GAME_ARRAYS:
                getattr(self.label_games, name)[:] = xp.asarray(s["label_games"][name].numpy())
        if xp.is_torch:
            self.rng.set_state(s["rng"]["device"])
        else:
            self.rng.bit_generator.state = s["rng"]["numpy"]
        torch.set_rng_state(s["rng"]["torch"])
        random.setstate(s["rng"]["python"])


