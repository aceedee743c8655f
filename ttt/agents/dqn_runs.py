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

What runs side by side: the curriculum, the epsilon schedule, SGD or Adam (``first_lr`` too), Huber
or squared loss, ``gamma``, the win and loss rules in move selection, and the trained player's own
rules in its evaluations. The recipe's label options, ``exact_forks``, the bootstrap options
(``greedy_bootstrap``, ``search_backup``, ``target_every``), the falling learning rate, symmetry
augmentation and tied line detectors are refused with one line (``UNSUPPORTED``): train those runs
one at a time.

Rounding: stacked products sum in another order than one network's, so a run side by side and the
same seed alone agree to float rounding, not bit for bit; they make the same moves for hundreds of
games (a test pins 200) and then drift apart as any two roundings of a chaotic process do.
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

from ttt.agents.dqn import (
    GAME_ARRAYS,
    OPPONENT_PHASES,
    Config,
    DQNPlayer,
    StackedOptimizer,
    Targets,
    curriculum,
    epsilon_at,
    final_targets,
    td0_targets,
    training_rules,
)
from ttt.checkpoint import CheckpointError, save_checkpoint
from ttt.cli import Interrupted
from ttt.config import ConfigError, agent_settings
from ttt.games import BatchedGames, Game, random_legal_actions
from ttt.games.threats import completing_moves, move_tactics
from ttt.nets.stacked import StackedNets
from ttt.nets.structured import build_value_net
from ttt.players.fixed import BenchmarkPlayer

RANDOM, FROZEN, BENCHMARK, SELF_PLAY = (OPPONENT_PHASES[k] for k in ("random", "frozen", "benchmark", "self_play"))

# settings a run side by side cannot take: (key, the value that is allowed)
UNSUPPORTED = (("rule_labels", False), ("random_labels", 0), ("rank_labels", 0), ("symmetry_augment", False),
               ("exact_forks", False), ("greedy_bootstrap", False), ("search_backup", False),
               ("lr_final", 0.0), ("target_every", 0), ("td_lambda", 0.0))


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
        return curriculum.phase(self.a, int(self.episodes[r]))

    def phase_label(self, r: int) -> str:
        return curriculum.phase_label(self.a, int(self.episodes[r]), len(self.pool[r]))

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
        # the games whose mover's afterstate is trained: the learners', and the opponents' with learn_opponent_moves
        lrn = np.flatnonzero(live_game if a.learn_opponent_moves else learner)
        mine = np.flatnonzero(learner[lrn])  # the learners among them
        chosen = np.full(len(g), -1, dtype=np.int64)
        values = self._values(lrn) if len(lrn) else None
        if len(mine):
            greedy = values.argmax(1).numpy()
            legal = (values > float("-inf")).numpy()
            runs = self.run_of[lrn[mine]]
            for r in np.unique(runs):  # each run's exploration draws, from its own stream
                at = mine[runs == r]
                eps = epsilon_at(a, int(self.episodes[r]))
                if eps > 0:
                    explore = self.rngs[r].random(len(at)) < eps
                    if explore.any():
                        greedy[at[explore]] = random_legal_actions(legal[at[explore]], self.rngs[r])
            chosen[lrn[mine]] = greedy[mine]
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
    eval_rules = replace(play_rules, threats=0)  # as a single run: threat chains only in the final evaluation
    final_group = "eval" if eval_rules == play_rules else "eval_final"
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
                           games=int(a.final_eval_games), group=final_group)
        trainer.retire(r)  # after the checkpoint: it holds the run's games as they are, to continue them
        results[seeds[r]] = run.write_final(final, extra={"command": run.command(), "seed": seeds[r],
                                                         "network": network, "seeds_side_by_side": len(seeds)})

    for r, run in enumerate(runs):
        run.start(int(trainer.episodes[r]), lambda r=r: player(r))
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


__all__ = ["SideBySide", "check_side_by_side", "train_side_by_side"]
