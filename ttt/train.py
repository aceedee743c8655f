"""Train a learner: ``python -m ttt.train +experiment=dqn_444`` (Hydra; ``--help`` lists the groups).

``train(cfg)`` is a plain function (tests call it); ``main`` is the Hydra wrapper around it.
Outputs (TensorBoard logs under ``tb/``, ``checkpoint.pt`` or ``.npz``, ``final_eval.json``) go to
the run directory: Hydra's output directory, or ``run_dir=...``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from ttt.agents import agent_module
from ttt.config import register_configs
from ttt.device import DeviceError, resolve_device
from ttt.training import Run, seed_everything


def train(cfg: DictConfig) -> dict:
    """Run the training the config describes; returns the final evaluation (as in final_eval.json).

    Raises DeviceError before anything is written when ``device`` cannot be honoured here.
    """
    import torch

    module = agent_module(cfg.agent.name)
    device = resolve_device(cfg.device)
    if not getattr(module, "USES_DEVICE", False):
        device = "cpu"  # a tabular learner: tables and games stay on the host
    if cfg.run_dir:
        run_dir = Path(cfg.run_dir)
    else:
        from hydra.core.hydra_config import HydraConfig

        run_dir = Path(HydraConfig.get().runtime.output_dir)
    torch.set_num_threads(int(cfg.threads))
    seed_everything(int(cfg.seed))
    run = Run(cfg, run_dir, device)
    try:
        return module.train(cfg, run)
    finally:
        run.close()


register_configs()


@hydra.main(version_base="1.3", config_path="../configs", config_name="train")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if cfg.run_dir and HydraConfig.get().mode == RunMode.MULTIRUN:
        # every job of the sweep would write into the same folder
        raise SystemExit("ttt.train: run_dir is for single runs; a multirun puts each run under hydra.sweep.dir")
    try:
        train(cfg)
    except DeviceError as e:
        print(f"ttt.train: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
