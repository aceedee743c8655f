"""What every learner's training loop shares: seeding, the run directory, TensorBoard logging,
periodic evaluation against fixed players, progress output and checkpoint paths.

TensorBoard tag vocabulary (every learner logs the ``eval/`` and ``train/episodes_per_sec`` tags):

=======================================  =====================================================
``eval/<opponent>/win_rate``             wins / games against ``<opponent>``, both seats
``eval/<opponent>/draw_rate``            draws / games
``eval/<opponent>/loss_rate``            losses / games
``eval/<opponent>/score``                (wins + draws / 2) / games
``eval/<opponent>/<seat>/win_rate``      the same per seat, ``<seat>`` = ``first`` or ``second``
``eval/<opponent>/<seat>/score``         (also ``draw_rate`` and ``loss_rate`` per seat)
``train/episodes_per_sec``               training games per second since the last log
``train/td_loss``                        mean TD (Huber or squared) loss of the updates since the last log
``train/epsilon``                        exploration rate
``train/opponent``                       training opponent phase: 0 random, 1 frozen, 2 benchmark, 3 self_play
``train/<name>``                         learner-specific scalars, documented in the learner's module
=======================================  =====================================================

Hyperparameters (the resolved config, flattened) are logged once as text under ``config``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, OmegaConf

from ttt.device import array_device
from ttt.evaluate import MatchResult, play_match
from ttt.games import Game, make_game
from ttt.players import Player

OPPONENT_PHASES = {"random": 0, "frozen": 1, "benchmark": 2, "self_play": 3}


def seed_everything(seed: int) -> np.random.Generator:
    """Seed ``random``, numpy and torch; return the generator the run draws from."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


class Run:
    """One training run: its directory, logger, evaluation and progress line."""

    def __init__(self, cfg: DictConfig, run_dir: str | Path, device: str = "cpu") -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.cfg = cfg
        self.device = device  # resolved: "cpu" or "cuda" (ttt.device); the learner's games and networks live there
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.game: Game = make_game(cfg.game.name)
        self.writer = SummaryWriter(str(self.dir / "tb"))
        self.last_eval: dict[str, MatchResult] = {}
        self._opponents: list[tuple[str, Player]] | None = None
        self._t_last = time.perf_counter()
        self._ep_last = 0
        self._t_print = 0.0
        self.writer.add_text("config", "```\n" + OmegaConf.to_yaml(cfg, resolve=True) + "\n```", 0)

    # ------------------------------------------------------------------ paths
    def checkpoint_path(self, suffix: str = ".pt") -> Path:
        return self.dir / f"checkpoint{suffix}"

    def config_dict(self) -> dict:
        return OmegaConf.to_container(self.cfg, resolve=True)

    # ------------------------------------------------------------------ logging
    def log(self, tag: str, value: float, step: int) -> None:
        self.writer.add_scalar(tag, float(value), step)

    def log_rate(self, episode: int) -> float:
        """Log and return training episodes per second since the previous call."""
        now = time.perf_counter()
        rate = (episode - self._ep_last) / max(now - self._t_last, 1e-9)
        self._t_last, self._ep_last = now, episode
        self.log("train/episodes_per_sec", rate, episode)
        return rate

    def progress(self, episode: int, info: str = "", force: bool = False) -> None:
        """A progress line (at most every 2 s unless forced): bar, episodes, device, rate, latest eval."""
        if not self.cfg.progress:
            return
        now = time.perf_counter()
        if not force and now - self._t_print < 2.0:
            return
        self._t_print = now
        total = max(int(self.cfg.episodes), 1)
        frac = min(episode / total, 1.0)
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        evals = " ".join(f"{k}:{r.both.score:.3f}" for k, r in self.last_eval.items())
        line = f"[{bar}] {episode}/{total} {self.device} {info}" + (f" | eval score {evals}" if evals else "")
        print(line, file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ evaluation
    def eval_opponents(self) -> list[tuple[str, Player]]:
        """The players of ``eval_opponents``: names or specs with options, e.g. ``alphabeta:1``."""
        if self._opponents is None:
            from ttt.benchmark import load_agents

            self._opponents = load_agents(list(self.cfg.eval_opponents), self.game.name)[1]
        return self._opponents

    def evaluate(self, player: Player, episode: int, games: int | None = None) -> dict[str, MatchResult]:
        """Greedy games of ``player`` against each configured opponent, both seats; logged. On the
        run's device when both players can play there (``play_match``)."""
        games = int(self.cfg.eval_games if games is None else games)
        results = {}
        for i, (name, opponent) in enumerate(self.eval_opponents()):
            r = play_match(self.game, player, opponent, games, seed=int(self.cfg.seed) * 1000 + 7 + i,
                           agent_name=self.cfg.agent.name, opponent_name=name, device=array_device(self.device))
            results[name] = r
            for seat in r.seats():
                prefix = f"eval/{name}" if seat.seat == "both" else f"eval/{name}/{seat.seat}"
                for key in ("win_rate", "draw_rate", "loss_rate", "score"):
                    self.log(f"{prefix}/{key}", getattr(seat, key), episode)
        self.last_eval = results
        self.writer.flush()
        return results

    def periodic(self, player: Player, done: int, save) -> None:
        """Every ``eval_every`` episodes before the last: evaluate ``player`` and ``save(done)``."""
        every = int(self.cfg.eval_every)
        if every and done % every == 0 and done < int(self.cfg.episodes):
            self.evaluate(player, done)
            save(done)

    def finish(self, player: Player, episodes: int, save) -> dict[str, MatchResult]:
        """At the end: ``save(episodes)``, the final evaluation, and a last progress line."""
        save(episodes)
        results = self.evaluate(player, episodes)
        self.progress(episodes, "done", force=True)
        return results

    def write_final(self, results: dict[str, MatchResult], extra: dict | None = None,
                    episodes: int | None = None) -> dict:
        """Write ``final_eval.json`` in the run directory; return what was written.

        ``episodes``: training games played (default ``cfg.episodes``; 0 for a learner that plays none).
        """
        out = {
            "game": self.game.name,
            "agent": self.cfg.agent.name,
            "episodes": int(self.cfg.episodes if episodes is None else episodes),
            "results": [row for name, r in results.items() for row in r.rows(name)],
            **(extra or {}),
        }
        (self.dir / "final_eval.json").write_text(json.dumps(out, indent=2) + "\n")
        return out

    def close(self) -> None:
        self.writer.close()
