"""Train a learner: ``python -m ttt.train +experiment=dqn_444`` (Hydra; ``--help`` lists the groups).

``train(cfg)`` is a plain function (tests call it); ``main`` is the Hydra wrapper around it, which
turns the errors a user can cause into one line and exit code 2 (``ttt.cli``; Ctrl-C: 130).
Outputs (TensorBoard logs under ``tb/``, ``checkpoint.pt`` or ``.npz``, ``final_eval.json``,
``train.log``) go to the run directory: Hydra's output directory, or ``run_dir=...``.
``ttt.training.Run`` guards the folder (values checked first, one run per folder, no silent
overwrite, resume compared with the checkpoint's config).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ttt.agents import agent_module
from ttt.cli import check_writable_dir, guard_hydra_record, run_cli, threading_main
from ttt.config import ConfigError, check_memory, check_train_config
from ttt.games import make_game
from ttt.learners import register_configs, seed_everything
from ttt.multirun import join_jobs, pass_signals_to_jobs, run_job, stopped
from ttt.run_dir import check_runs_side_by_side
from ttt.training import Run


def train(cfg: DictConfig) -> dict:
    """Run the training the config describes; returns the final evaluation (as in final_eval.json)."""
    import torch

    if cfg.get("run_dir") is not None:  # '' too: Run refuses it, one line
        run_dir = Path(cfg.run_dir)
    else:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():
            raise ConfigError("run_dir is not set (outside Hydra it names the run folder)")
        run_dir = Path(HydraConfig.get().runtime.output_dir)
    if int(cfg.get("seeds", 1)) > 1:
        learner = agent_module(cfg.agent.name)
        if not hasattr(learner, "train_side_by_side"):
            raise ConfigError(f"seeds={cfg.seeds}: agent {cfg.agent.name} does not train runs side by side; train "
                              f"its seeds one at a time (e.g. -m seed=0,1,2)")
        check_train_config(cfg)  # each run checks its own too; the memory, files and disk are the runs' together
        check_memory(cfg, make_game(cfg.game.name))
        check_runs_side_by_side(int(cfg.seeds), run_dir)
        return learner.train_side_by_side(cfg, run_dir, Run)
    with Run(cfg, run_dir) as run:
        if run.finished is not None:
            return run.finished
        torch.set_num_threads(int(cfg.threads))
        seed_everything(int(cfg.seed))
        return agent_module(cfg.agent.name).train(cfg, run)


class RunDirCheck(Callback):
    """Checks Hydra runs before Hydra creates their folders (a file or a read-only path as run_dir
    would otherwise fail inside Hydra with a traceback): one line and exit code 2."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        run_cli(check_writable_dir, OmegaConf.select(config, "hydra.run.dir"), "run_dir")

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        run_cli(_check_sweep, config)
        if "joblib" in str(OmegaConf.select(config, "hydra.launcher._target_", default="")) and threading_main():
            pass_signals_to_jobs(OmegaConf.select(config, "hydra.sweep.dir"))


def _check_sweep(config: DictConfig) -> None:
    if config.get("run_dir"):
        # every job of the sweep would write into the same folder
        raise ConfigError("run_dir is for single runs; a multirun puts each run under hydra.sweep.dir")
    check_writable_dir(OmegaConf.select(config, "hydra.sweep.dir"), "hydra.sweep.dir")


register_configs()
guard_hydra_record()  # here, not under __main__: the jobs of a joblib multirun import this module
join_jobs()  # in such a job: the signals come from the multirun's parent alone (ttt.multirun)


@hydra.main(version_base="1.3", config_path="../configs", config_name="train")
def main(cfg: DictConfig) -> None:
    run_job(train, cfg)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # the parent of a multirun: the jobs have said what they saved
        sys.exit(130)
    if stopped():
        sys.exit(130)
