"""The learner's entry for ``ttt.train``: ``check`` its settings, then ``train`` on the schedule of a
``ttt.training.Run`` (evaluations, checkpoints, log lines)."""

from __future__ import annotations

from dataclasses import asdict, replace

from omegaconf import DictConfig, OmegaConf

from ttt.agents.dqn.curriculum import log_scalars
from ttt.agents.dqn.player import DQNPlayer, heads_entry
from ttt.agents.dqn.settings import Config, epsilon_at
from ttt.agents.dqn.trainer import Trainer
from ttt.checkpoint import CheckpointError, save_checkpoint
from ttt.config import POSITIVE, agent_settings, check_ranges
from ttt.device import array_device
from ttt.games import Game
from ttt.games.arrays import arrays_for


def check(cfg: DictConfig, game: Game) -> None:
    """Refuse agent settings the training cannot use, before any work (``ttt.training.Run``)."""
    settings = agent_settings(cfg.agent, Config)  # the values every Config must have
    check_ranges("agent.", settings, {"lr": POSITIVE})  # a Config may hold still (lr 0); a training run must learn


def train(cfg: DictConfig, run) -> dict:
    """Train with the curriculum on the schedule of ``run`` (a ``ttt.training.Run``: evaluations,
    checkpoints, log lines)."""
    rng = arrays_for(array_device(run.device)).generator(int(cfg.seed))
    trainer = Trainer(run.game, cfg.network, cfg.agent, int(cfg.num_envs), rng, device=run.device)
    settings = trainer.settings
    if run.resumed is not None:
        try:
            trainer.load_state_dict(run.resumed["trainer"])
        except CheckpointError as e:  # e.g. agent.rank_head set on a checkpoint trained without one
            raise CheckpointError(f"resume=true: {run.folder.resume_path}: {e}") from None
    path = run.checkpoint_path()
    network = OmegaConf.to_container(cfg.network, resolve=True)

    play_rules = replace(trainer.rules, forks=trainer.rules.forks or bool(settings.play_forks),
                         threats=max(trainer.rules.threats, int(settings.play_threats)))
    # the periodic evaluations leave out the threat-chain rule (the costliest in move selection); the
    # final evaluation and the checkpoint use the trained player's whole rules, and when those differ
    # the final evaluation is logged under eval_final/, so that the eval/ curves compare like with like
    eval_rules = replace(play_rules, threats=0)
    final_group = "eval" if eval_rules == play_rules else "eval_final"

    def player(final: bool = False) -> DQNPlayer:
        return DQNPlayer(run.game, trainer.net, network, play_rules if final else eval_rules)

    def save(done: int) -> None:
        save_checkpoint(path, {"kind": "dqn", "game": run.game.name, "config": run.config_dict(),
                               "network": network, "rules": asdict(play_rules), **heads_entry(trainer.net),
                               "weights": trainer.net.state_dict(), "episodes": trainer.episodes,
                               "trainer": trainer.state_dict()})

    def log(episode: int) -> str:
        return log_scalars(run, trainer, episode, epsilon_at(settings, episode))

    total = int(cfg.episodes)
    run.start(trainer.episodes, player)
    while trainer.episodes < total:
        trainer.step()
        run.tick(trainer.episodes, player, save, log)
    results = run.finish(lambda: player(final=True), trainer.episodes, save, games=int(settings.final_eval_games),
                         group=final_group)
    return run.write_final(results, extra={"command": run.command(), "seed": int(cfg.seed), "network": network})
