"""The run axis of the learner's core (``Trainer``): K runs side by side, each with its own network, its
share of one optimiser, its games and its random stream, and the single run's names for the first of them.

Several runs share only the arithmetic: their parameters are kept stacked (``ttt.nets.runs``), their
networks' calls are one call (``RowNets``), and one optimiser steps every run that has examples, each at
the learning rates of its own schedule. A run's checkpoint is in one format for every K (``state``)."""

from __future__ import annotations

import numpy as np
import torch

from ttt.agents.dqn import state
from ttt.agents.dqn.settings import Config, lr_scale_at
from ttt.agents.dqn.td import make_optimizer, steps_stacks
from ttt.device import torch_device
from ttt.nets.runs import RowNets, add_grads_to_stacks, move_stacked_grads, stack_parameters
from ttt.nets.structured import ValueNet, build_value_net


class RunAxis:
    """K runs' networks, optimiser and loss sums, their games' slices (``num_envs`` games a run, set by the
    trainer), and what the trainer asks of them."""

    def _new_net(self, network_cfg, seeds, r: int, options: dict) -> ValueNet:
        if seeds is not None:  # as a run of that seed alone initialises its network
            torch.manual_seed(int(seeds[r]))
        return build_value_net(network_cfg, self.game, **options)

    def _optimizers(self, settings: Config) -> None:
        """One optimiser over every run's network (``td.make_optimizer``); several runs' parameters stacked."""
        if self.k > 1:  # several runs: their parameters kept stacked, so that a call of all of them copies none
            stack_parameters(self.nets)
        self.optimizer = make_optimizer(settings, self.nets[0] if self.k == 1 else self.nets)
        self.on_stacks = steps_stacks(settings, self.nets)  # the optimiser holds the stacks (plain SGD)
        self.groups = len(make_optimizer(settings, self.nets[0]).param_groups)  # param groups of one run
        self.merged = len(self.optimizer.param_groups) == self.groups  # one group per kind, unless each run's schedule
        self.base_lrs = [group["lr"] for group in self.optimizer.param_groups[:self.groups]]
        self.loss_sum = torch.zeros(self.k, dtype=torch.float64, device=torch_device(self.device))
        self.loss_count = np.zeros(self.k, dtype=np.int64)  # the TD loss summed where the network is, read when logged

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

    def retire(self, r: int) -> None:
        """Run ``r`` has finished: its games stop, the other runs go on."""
        self.active[r] = False
        self.games.done[self.games_of(r)] = True
        self._live = self.xp.asarray(self.active[self.xp.numpy(self.run_of)])

    def _step(self, loss, stepping: list[int]) -> None:
        """Back-propagate ``loss`` and step the runs ``stepping``, each at its scheduled learning rates."""
        self.optimizer.zero_grad(set_to_none=True)  # a run without targets keeps no gradient: it does not step
        loss.backward()
        if self.on_stacks:  # the optimiser steps the stacks: the parts' gradients to them
            add_grads_to_stacks(self.nets, stepping)
        elif self.k > 1:
            move_stacked_grads(self.nets, stepping)
        for r in stepping:
            scale = lr_scale_at(self.settings, int(self.run_episodes[r]))
            if scale != 1.0:  # a schedule: each group's rate from the settings, so a resumed run matches
                groups = self.optimizer.param_groups[r * self.groups:(r + 1) * self.groups]
                for group, lr in zip(groups, self.base_lrs, strict=True):
                    group["lr"] = lr * scale
        self.optimizer.step()

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

    def state_dict(self, r: int = 0) -> dict:
        """Everything run ``r`` needs to continue (``state.state_dict``; one format for every K)."""
        return state.state_dict(self, r)

    def load_state_dict(self, s: dict, r: int = 0) -> None:
        """Continue run ``r`` from its ``state_dict``."""
        state.load_state_dict(self, s, r)
