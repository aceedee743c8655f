"""Post-hoc calibration of a value head: ``python -m ttt.recalibrate`` (Hydra; ``--help`` shows the config).

Platt scaling (Platt 1999; temperature scaling, Guo et al. 2017, with a shift) of a ``dqn`` checkpoint's
value head. The head's output is ``tanh(z)``, ``z`` its logit; the recalibrated head's is ``tanh(a z + b)``,
with ``a > 0`` and ``b`` fitted by least squares to outcomes: the afterstates and outcomes of
``ttt.calibration``'s measure against outcomes (one afterstate from each of ``games`` games of the player's
epsilon-greedy self-play, rules included but the threat-chain rule, and the mean outcome of ``rollouts``
continuations of each; ``ttt.evaluation.value_games.outcome_boards``). They are drawn with their own ``seed``
(default 1; ``ttt.calibration``'s is 0), so that ``ttt.calibration`` measures the result on other games.

``a`` and ``b`` are folded into the output unit (``ValueNet.rescale_logit``): the written checkpoint is the
same network, with the same parameters, and every tool loads it as before. Its entry ``recalibrated`` records
the scale and shift (composed with an earlier recalibration's, so they always relate to the trained
network), the samples and the fit's own ece before and after; the trainer's state is left out (resume
the original run, not this file).

What it changes and what it does not:

* ``a > 0`` keeps the network's values in their order: the network alone makes the same moves, and
  every AUC that ``ttt.calibration`` reports on the same games is the same.
* The rules' exact values (wins, losses, forks at gamma) are not rescaled, so where a rule and the network
  both value moves, a rescaled network value can fall below (or rise above) a rule's that it was above.
* ``symmetries=K`` fits the logit the player spec ``{checkpoint: OUT, symmetries: K}`` plays by, the mean
  over K of the board's symmetries (``DQNPlayer.symmetries``): folded into the output unit, the same
  ``a`` and ``b`` rescale that mean exactly. The entry records K; play the result with the same K.
* The scale is one number for every position: an overconfident head (``a < 1``) is pulled towards 0
  everywhere, the afterstates whose value one move decides (exact -1 or +1) included. docs/calibration.md
  reports what that costs on Qubic.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import hydra
import numpy as np
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from ttt.agents.dqn import player_from_checkpoint
from ttt.checkpoint import load_checkpoint, save_checkpoint
from ttt.cli import check_writable_file, run_cli
from ttt.config import AT_LEAST_ONE, UNIT, Range, check_ranges, check_seed_and_threads
from ttt.device import module_device
from ttt.evaluation.value_games import fit_scale_shift, outcome_boards, reliability, without_threat_chains
from ttt.evaluation.value_quality import movers, pearson
from ttt.harness.specs import checkpoint_file


@dataclass
class RecalibrateConfig:
    """Schema of ``configs/recalibrate.yaml``."""

    checkpoint: str | None = None  # the dqn checkpoint (or its run folder) whose value head is rescaled
    output: str | None = None  # where the recalibrated checkpoint is written (.pt; not the checkpoint itself)
    games: int = 1000  # self-play games; one afterstate of each is a sample
    rollouts: int = 8  # continuations of each sample
    epsilon: float = 0.1  # exploration of the games and continuations (ttt.calibration's default)
    shift: bool = True  # false: fit the scale alone (b = 0); a network without biases needs it
    symmetries: int = 1  # fit the logit averaged over this many of the board's symmetries (play it so too)
    seed: int = 1  # ttt.calibration measures with seed 0: other games than the fit's
    threads: int = 1  # torch intra-op threads


ConfigStore.instance().store(name="recalibrate_schema", node=RecalibrateConfig)


def logits_of(player, boards: np.ndarray) -> np.ndarray:
    """(N,) the value head's logits of the afterstates ``boards`` (+1 first player), each seen from the
    player who just moved, as ``value_quality.values_of_afterstates`` sees them (through the player's
    symmetries, ``DQNPlayer.scorer``)."""
    import torch

    views = boards * movers(boards)[:, None]
    with torch.inference_mode():
        x = torch.as_tensor(views, dtype=torch.float32, device=module_device(player.net))
        return player.scorer.logit(x).double().cpu().numpy()


def recalibrate(cfg: DictConfig, out: TextIO | None = None) -> dict:
    """Fit, fold and write what the config names; print the fit; return the ``recalibrated`` entry."""
    import torch

    out = out or sys.stdout
    if not cfg.checkpoint or not cfg.output:
        raise ValueError("give checkpoint=PATH (a dqn checkpoint or run folder) and output=FILE.pt")
    check_ranges("", cfg, {"games": Range(2), "rollouts": AT_LEAST_ONE, "epsilon": UNIT, "symmetries": AT_LEAST_ONE})
    check_seed_and_threads(cfg)
    source, target = checkpoint_file(str(cfg.checkpoint)), Path(str(cfg.output))
    if target.suffix != ".pt":
        raise ValueError(f"output {target} must end in .pt")
    if target.resolve() == source.resolve():
        raise ValueError(f"output {target} is the checkpoint itself: write the recalibrated one beside it")
    check_writable_file(target, "output")
    torch.set_num_threads(int(cfg.threads))
    payload = load_checkpoint(source, kind="dqn")
    player = player_from_checkpoint(payload)
    if cfg.shift and not player.net.takes_shift():  # before the games, not after them
        raise ValueError(f"{source}: its network has no biases (network.bias=false) and takes no shift; "
                         "give shift=false to fit the scale alone")
    player.symmetries = int(cfg.symmetries)  # a ValueError past the board's group
    t0 = time.perf_counter()
    averaged = "" if player.symmetries == 1 else f", the network averaged over {player.symmetries} symmetries"
    print(f"{source}: {cfg.games} self-play games x {cfg.rollouts} continuations (epsilon {cfg.epsilon:g}, "
          f"seed {cfg.seed}{averaged}) ...", file=out, flush=True)
    rng = np.random.default_rng(int(cfg.seed))
    boards, outcomes = outcome_boards(without_threat_chains(player), player.game, int(cfg.games), int(cfg.rollouts),
                                      float(cfg.epsilon), rng)
    logits = logits_of(player, boards)
    scale, shift = fit_scale_shift(logits, outcomes, bool(cfg.shift))
    before, after = np.tanh(logits), np.tanh(scale * logits + shift)
    player.net.rescale_logit(scale, shift)  # the output unit: the same fold with or without the images
    earlier = payload.get("recalibrated") or {"scale": 1.0, "shift": 0.0}
    entry = {"scale": scale * float(earlier["scale"]), "shift": scale * float(earlier["shift"]) + shift,
             "fit": {"scale": scale, "shift": shift, "source": str(source), "games": int(cfg.games),
                     "rollouts": int(cfg.rollouts), "epsilon": float(cfg.epsilon), "seed": int(cfg.seed),
                     "symmetries": int(cfg.symmetries),
                     "ece_before": reliability(before, outcomes)[1], "ece_after": reliability(after, outcomes)[1],
                     "mean_outcome": float(outcomes.mean()), "mean_value_before": float(before.mean()),
                     "mean_value_after": float(after.mean()), "pearson": pearson(before, outcomes)}}
    written = {k: v for k, v in payload.items() if k not in ("trainer", "format_version")}
    written.update(weights=player.net.state_dict(), recalibrated=entry)
    save_checkpoint(target, written)
    fit = entry["fit"]
    measured = f"checkpoint={target}" if player.symmetries == 1 else \
        f"'player={{checkpoint:{target},symmetries:{player.symmetries}}}'"
    print(f"fitted in {time.perf_counter() - t0:.0f} s: value = tanh({scale:.4f} * logit {shift:+.4f}) "
          f"(from the trained network: tanh({entry['scale']:.4f} * logit {entry['shift']:+.4f}))\n"
          f"on the fit's samples: ece {fit['ece_before']:.3f} -> {fit['ece_after']:.3f}, mean value "
          f"{fit['mean_value_before']:+.3f} -> {fit['mean_value_after']:+.3f} "
          f"(mean outcome {fit['mean_outcome']:+.3f})\n"
          f"wrote {target}; measure it on other games: python -m ttt.calibration {measured}", file=out)
    return entry


@hydra.main(version_base="1.3", config_path="../configs", config_name="recalibrate")
def main(cfg: DictConfig) -> None:
    run_cli(recalibrate, cfg)


if __name__ == "__main__":
    main()
