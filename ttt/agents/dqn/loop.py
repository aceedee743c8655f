"""The learner's entry for ``ttt.train``: ``check`` its settings, then ``train`` one run, or
``train_side_by_side`` the runs of ``seeds=K`` (seeds ``seed`` .. ``seed+K-1``), each on the
schedule of its own ``ttt.harness.training.Run`` (evaluations, checkpoints, log lines). One loop serves
both: the single run is the group of one.

Side by side, the K runs are the run axis of one ``Trainer``: each is exactly its seed's run alone
(its own network, optimiser state, games, opponents and random stream), stepped in lockstep. Each
writes its own folder ``<run_dir>/seed_<s>/`` with exactly what a single run writes, can be resumed,
plotted and benchmarked alone or with its group; a run that reaches ``episodes`` evaluates and
leaves the lockstep, the others go on. Ctrl-C or SIGTERM saves every run and prints the command that
resumes the group.
"""

from __future__ import annotations

import contextlib
import random
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from ttt.agents.dqn.curriculum import log_scalars
from ttt.agents.dqn.player import DQNPlayer, heads_entry
from ttt.agents.dqn.settings import Config, epsilon_at, player_rules
from ttt.agents.dqn.trainer import Trainer
from ttt.checkpoint import CheckpointError, save_checkpoint, seed_folder
from ttt.cli import Interrupted
from ttt.config import POSITIVE, agent_settings, check_ranges
from ttt.device import array_device
from ttt.evaluation.evaluate import Recorded
from ttt.games.arrays import arrays_for


def check(cfg: DictConfig, game) -> None:
    """Refuse agent settings the training cannot use, before any work (``ttt.harness.training.Run``)."""
    settings = agent_settings(cfg.agent, Config)  # the values every Config must have
    check_ranges("agent.", settings, {"lr": POSITIVE})  # a Config may hold still (lr 0); a training run must learn


def train(cfg: DictConfig, run) -> dict:
    """Train one run with the curriculum on the schedule of ``run`` (a ``ttt.harness.training.Run``)."""
    return _train(cfg, [run], [int(cfg.seed)], side_by_side=False)[int(cfg.seed)]


def train_side_by_side(cfg: DictConfig, run_dir: Path, make_run) -> dict:
    """Train ``cfg.seeds`` runs side by side, run ``s`` in ``run_dir/seed_<s>``, each guarded by
    ``make_run(cfg_of_s, folder)`` (the harness's ``ttt.harness.training.Run``); returns
    ``{"runs": {seed: final evaluation}}`` of the runs that finished."""
    first, count = int(cfg.seed), int(cfg.seeds)
    seeds = list(range(first, first + count))
    with contextlib.ExitStack() as stack:
        runs: dict = {}
        for s in seeds:
            sub = cfg.copy()
            OmegaConf.set_struct(sub, False)
            sub.seed, sub.seeds, sub.run_dir, sub.progress = s, 1, str(seed_folder(run_dir, s)), False
            OmegaConf.set_struct(sub, True)
            run = stack.enter_context(make_run(sub, seed_folder(run_dir, s)))
            run.resume_dir = run_dir  # Ctrl-C prints the command that resumes the whole group
            runs[s] = run
        results = {s: run.finished for s, run in runs.items() if run.finished is not None}
        todo = [s for s in seeds if s not in results]
        if todo:
            torch.set_num_threads(int(cfg.threads))
            random.seed(todo[0])
            np.random.seed(todo[0])
            results.update(_train(cfg, [runs[s] for s in todo], todo, side_by_side=True))
        return {"runs": results}


def _train(cfg: DictConfig, runs: list, seeds: list[int], side_by_side: bool) -> dict[int, dict]:
    """Train ``runs`` (one per seed) as the run axis of one ``Trainer``; each run's final evaluation."""
    game, device = runs[0].game, runs[0].device
    xp = arrays_for(array_device(device))
    trainer = Trainer(game, cfg.network, cfg.agent, int(cfg.num_envs), [xp.generator(s) for s in seeds],
                      device=device, seeds=seeds if side_by_side else None)
    for r, run in enumerate(runs):
        if run.resumed is not None:
            try:
                trainer.load_state_dict(run.resumed["trainer"], r)
            except CheckpointError as e:  # e.g. a rank head set on a checkpoint trained without one
                raise CheckpointError(f"resume=true: {run.folder.resume_path}: {e}") from None
    group = _Group(cfg, trainer, runs, seeds, side_by_side)
    group.start()
    while trainer.active.any():
        trainer.step()
        group.tick()
        group.say_progress()
    return group.results


class _Group:
    """The runs of one ``Trainer`` on their own schedules (``ttt.harness.training.Run``): their players,
    checkpoints, log lines and final evaluations."""

    def __init__(self, cfg: DictConfig, trainer: Trainer, runs: list, seeds: list[int], side_by_side: bool) -> None:
        self.cfg, self.trainer, self.runs, self.seeds, self.side_by_side = cfg, trainer, runs, seeds, side_by_side
        self.settings, self.game = trainer.settings, runs[0].game
        self.network = OmegaConf.to_container(cfg.network, resolve=True)
        self.play_rules = player_rules(self.settings, trainer.rules)
        # the periodic evaluations leave out the threat-chain rule (the costliest in move selection); the
        # final evaluation and the checkpoint use the trained player's whole rules, and when those differ
        # the final evaluation is logged under eval_final/, so that the eval/ curves compare like with like
        self.eval_rules = replace(self.play_rules, threats=0)
        self.final_group = "eval" if self.eval_rules == self.play_rules else "eval_final"
        self.total = int(cfg.episodes)
        self.results: dict[int, dict] = {}

    def player(self, r: int, final: bool = False) -> Recorded:
        # its moves are kept: the evaluation measures defence and values in its games (eval/defence/, eval/values/auc)
        return Recorded(DQNPlayer(self.game, self.trainer.nets[r], self.network,
                                  self.play_rules if final else self.eval_rules, float(self.settings.gamma)))

    def save(self, r: int, run) -> None:
        t = self.trainer
        save_checkpoint(run.checkpoint_path(), {
            "kind": "dqn", "game": self.game.name, "config": run.config_dict(), "network": self.network,
            "rules": asdict(self.play_rules), **heads_entry(t.nets[r]), "weights": t.weights(r),
            "episodes": int(t.run_episodes[r]), "trainer": t.state_dict(r)})

    def log(self, r: int, run, episode: int) -> str:
        return log_scalars(run, self.trainer, r, episode, epsilon_at(self.settings, episode))

    def finish(self, r: int, run) -> None:
        t = self.trainer
        final = run.finish(lambda: self.player(r, final=True), int(t.run_episodes[r]), lambda _: self.save(r, run),
                           games=int(self.settings.final_eval_games), group=self.final_group)
        t.retire(r)  # after the checkpoint: it holds the run's games as they are, to continue them
        extra = {"command": run.command(), "seed": self.seeds[r], "network": self.network}
        if self.side_by_side:
            extra["seeds_side_by_side"] = len(self.seeds)
        self.results[self.seeds[r]] = run.write_final(final, extra=extra)

    def start(self) -> None:
        for r, run in enumerate(self.runs):
            run.start(int(self.trainer.run_episodes[r]), lambda r=r: self.player(r))
            if self.trainer.run_episodes[r] >= self.total:
                self.finish(r, run)
        self.t0 = self.said = time.perf_counter()
        self.start_games = self.trainer.episodes

    def tick(self) -> None:
        """Each training run's schedule after a ply: evaluations, checkpoints, log lines; a run that has
        played its games finishes. A stop (Ctrl-C, SIGTERM) reaches every run, then is raised."""
        stop = next((run._stop for run in self.runs if run._stop is not None), None)
        interrupted = False
        for r, run in enumerate(self.runs):
            if not self.trainer.active[r]:
                continue
            if stop is not None:
                run._stop = stop
            done = int(self.trainer.run_episodes[r])
            try:
                run.tick(done, lambda r=r: self.player(r), lambda _, r=r, run=run: self.save(r, run),
                         lambda ep, r=r, run=run: self.log(r, run, ep))
            except Interrupted:
                interrupted = True
                continue
            if done >= self.total:
                self.finish(r, run)
        if interrupted:
            raise Interrupted()

    def say_progress(self) -> None:
        """Side by side, a line every 10 s: the runs' games so far and the games per second of them all."""
        now, t = time.perf_counter(), self.trainer
        if not (self.side_by_side and self.cfg.progress and now - self.said >= 10.0):
            return
        self.said = now
        eps, total = t.run_episodes[t.active], self.total
        rate = (t.episodes - self.start_games) / (now - self.t0)
        print(f"[{len(self.seeds)} runs side by side] episodes {int(eps.min()) if len(eps) else total}-"
              f"{int(eps.max()) if len(eps) else total}/{total}, {int(t.active.sum())} training, "
              f"{rate:,.0f} games/s in all", file=sys.stderr, flush=True)
