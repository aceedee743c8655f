"""Train a learner: ``python -m ttt.train +experiment=dqn_444`` (Hydra; ``--help`` lists the groups).

``train(cfg)`` is a plain function (tests call it); ``main`` is the Hydra wrapper around it, which
turns the errors a user can cause into one line and exit code 2 (``ttt.cli``; Ctrl-C: 130).
Outputs (TensorBoard logs under ``tb/``, ``checkpoint.pt`` or ``.npz``, ``final_eval.json``,
``train.log``) go to the run directory: Hydra's output directory, or ``run_dir=...``.
``ttt.harness.training.Run`` guards the folder (values checked first, one run per folder, no silent
overwrite, resume compared with the checkpoint's config). A multirun checks the values of every job
(``check_config``) before its first job starts.
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
from ttt.config import ConfigError, check_runs_side_by_side
from ttt.harness.learners import register_configs, seed_everything
from ttt.harness.multirun import join_jobs, pass_signals_to_jobs, run_job, stopped
from ttt.harness.run_dir import check_group_folder
from ttt.harness.training import Run, check_values


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
        check_config(cfg)  # each run checks its own too; the memory, files and disk are the runs' together
        check_runs_side_by_side(int(cfg.seeds), run_dir)
        check_group_folder(run_dir, list(range(int(cfg.seed), int(cfg.seed) + int(cfg.seeds))))
        return agent_module(cfg.agent.name).train_side_by_side(cfg, run_dir, Run)
    with Run(cfg, run_dir) as run:
        if run.finished is not None:
            return run.finished
        torch.set_num_threads(int(cfg.threads))
        seed_everything(int(cfg.seed))
        return agent_module(cfg.agent.name).train(cfg, run)


def check_config(cfg: DictConfig) -> None:
    """Check every value ``train(cfg)`` checks before any work, the folder's aside
    (``ttt.harness.training.check_values``; with ``seeds`` > 1, whether the learner trains runs side by side);
    ConfigError, one line naming the key."""
    check_values(cfg)
    if int(cfg.seeds) > 1 and not hasattr(agent_module(cfg.agent.name), "train_side_by_side"):
        raise ConfigError(f"seeds={cfg.seeds}: agent {cfg.agent.name} does not train runs side by side; train "
                          f"its seeds one at a time (e.g. -m seed=0,1,2)")


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
    for num, (swept, job) in enumerate(_sweep_jobs(config)):
        try:
            check_config(job)
        except ValueError as e:  # ConfigError, DeviceError: a bad value of this job; none has started
            raise ConfigError(f"job {num} of the sweep ({' '.join(swept) or 'its only job'}): {e}; no job "
                              f"was started") from None
    check_writable_dir(OmegaConf.select(config, "hydra.sweep.dir"), "hydra.sweep.dir")  # made here: values first


def _sweep_jobs(config: DictConfig) -> list[tuple[list[str], DictConfig]]:
    """The jobs of the multirun ``config`` describes, as Hydra's basic sweeper launches them: each one's
    swept values (``key=value``) and its config as the job gets it (no ``hydra`` node); none for another
    sweeper (which chooses its values as it goes)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import open_dict, read_write

    if not str(OmegaConf.select(config, "hydra.sweeper._target_", default="")).endswith(".BasicSweeper"):
        return []
    loader = GlobalHydra.instance().config_loader()
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    overrides = OverridesParser.create(config_loader=loader).parse_overrides(
        [f"{key}={value}" for key, value in params.items()] + list(config.hydra.overrides.task))
    swept = {o.get_key_element() for o in overrides if o.is_sweep_override()}
    jobs = []
    for batch in BasicSweeper.split_arguments(overrides, None):
        for job in batch:
            cfg = loader.load_sweep_config(config, list(job))
            with read_write(cfg), open_dict(cfg):
                del cfg["hydra"]
            jobs.append(([o for o in job if o.split("=", 1)[0] in swept], cfg))
    return jobs


register_configs()
guard_hydra_record()  # here, not under __main__: the jobs of a joblib multirun import this module
join_jobs()  # in such a job: the signals come from the multirun's parent alone (ttt.harness.multirun)


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
