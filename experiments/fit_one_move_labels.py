"""How fast a fresh value network fits the rules' one-move labels alone, with no TD targets beside them.

    python experiments/fit_one_move_labels.py [--network structured_deep] [--hidden 32] [--steps 2000]
        [--lr 0.001] [--loss huber] [--plies 200] [--games 96] [--batch 256] [--every 400] [--gamma 0.97]
        [--seed 0]

The labels are those the learner draws from random play (``agent.parts.labels.random_labels``:
``ttt.agents.dqn.labels.random_position_labels``), a third each of its three kinds: a move that completes a
line (+1), one that leaves the opponent a win at once (-1) and a fork (``--gamma``). ``--plies`` plies of
``--games`` games of random play on Qubic give a fixed pool; the network (``configs/network/<name>.yaml``,
with biases, ``--hidden`` its hidden layers) is trained on mini-batches of ``--batch`` drawn from the pool
by Adam at ``--lr`` with the ``--loss``. Every ``--every`` steps it prints the mean value the network gives
each kind of label over the whole pool: a network that fits them gives -1, gamma and +1. The question it
answers is whether the value head's one-move values are slow because of the other targets beside the
labels or because the network learns these labels slowly even alone (docs/notes/values_on_qubic.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf

from ttt.agents.dqn import Config
from ttt.agents.dqn.labels import random_position_labels
from ttt.agents.dqn.parts.labels import LabelSettings
from ttt.agents.dqn.settings import training_rules
from ttt.agents.dqn.td import td_loss
from ttt.cli import ArgumentParser
from ttt.games import BatchedGames, make_game
from ttt.nets.structured import build_value_net

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "network"
KINDS = {-1.0: "leaves a win (-1)", 1.0: "completes a line (+1)"}  # the rest: forks (gamma)


def label_pool(game, games: int, plies: int, gamma: float, rng) -> tuple[torch.Tensor, torch.Tensor]:
    """The labelled afterstates (boards, targets) of ``plies`` plies of ``games`` games of random play."""
    settings, rules = LabelSettings(random_labels=games), training_rules(Config(gamma=gamma))
    playing = BatchedGames(game, games)
    boards, targets = [], []
    for _ in range(plies):
        labels, _ = random_position_labels(playing, settings, None, rng, gamma, rules)
        boards.append(labels.obs)
        targets.append(labels.targets)
    return torch.from_numpy(np.concatenate(boards)), torch.from_numpy(np.concatenate(targets))


def fit(network: str, hidden: list[int], steps: int, lr: float, loss: str, plies: int, games: int, batch: int,
        every: int, seed: int, gamma: float = 0.97, out=sys.stdout) -> list[dict]:
    """Train and print; returns one row per report: ``{"step", "loss", <kind>: mean value}``."""
    game = make_game("4x4x4")
    cfg = OmegaConf.load(CONFIGS / f"{network}.yaml")
    cfg.bias = True
    if hidden:
        cfg.hidden = hidden
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    boards, targets = label_pool(game, games, plies, gamma, rng)
    net = build_value_net(cfg, game)
    optimizer = torch.optim.Adam(net.parameters(), lr)
    kinds = {float(t): (KINDS.get(float(t), f"fork ({float(t):.2f})"), targets == t) for t in torch.unique(targets)}
    print(f"fit_one_move_labels: {len(targets)} labelled afterstates of {plies} plies of {games} random games; "
          + ", ".join(f"{name} {int(mask.sum())}" for name, mask in kinds.values()), file=out)
    rows, generator = [], torch.Generator().manual_seed(seed)
    for step in range(steps + 1):
        if step % every == 0 or step == steps:
            with torch.no_grad():
                values = net(boards)
                row = {"step": step, "loss": float(td_loss(values, targets, loss))}
            row.update({name: round(float(values[mask].mean()), 3) for name, mask in kinds.values()})
            rows.append(row)
            print("  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), file=out)
        if step < steps:
            pick = torch.randint(len(targets), (batch,), generator=generator)
            optimizer.zero_grad()
            td_loss(net(boards[pick]), targets[pick], loss).backward()
            optimizer.step()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="structured_deep", help="configs/network/<name>.yaml (structured_deep)")
    parser.add_argument("--hidden", default="", help="hidden layer sizes, comma-separated (the config's)")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--loss", choices=("huber", "mse"), default="huber")
    parser.add_argument("--plies", type=int, default=200, help="plies of random play in the pool (200)")
    parser.add_argument("--games", type=int, default=96, help="random games played side by side (96)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--every", type=int, default=400, help="report every this many steps (400)")
    parser.add_argument("--gamma", type=float, default=0.97, help="a fork's label (dqn_444's gamma, 0.97)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not (CONFIGS / f"{args.network}.yaml").is_file():
        parser.error(f"no network config configs/network/{args.network}.yaml")
    for key in ("steps", "plies", "games", "batch", "every"):
        if getattr(args, key) < 1:
            parser.error(f"--{key} must be at least 1")
    hidden = [int(h) for h in args.hidden.split(",") if h.strip()]
    fit(args.network, hidden, args.steps, args.lr, args.loss, args.plies, args.games, args.batch, args.every,
        args.seed, args.gamma)
    return 0


if __name__ == "__main__":
    sys.exit(main())
