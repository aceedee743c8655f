"""What one batch of AlphaZero self-play costs on this machine, with ``alphazero_444``'s settings.

    python experiments/alphazero_selfplay_cost.py [games=50] [repeats=3] [seed=0] [experiment=alphazero_444]
    python experiments/alphazero_selfplay_cost.py shares=SPY.txt

Composes ``+experiment=<experiment>``, builds its network untrained (torch seed 0), sets one torch
thread and plays ``games`` self-play games in lock step (``ttt.agents.alphazero.self_play``, the
training loop's call) ``repeats`` times from the generator seed ``seed``, after a warm-up. Each
repeat prints the moves played, the process's CPU seconds, simulations per CPU-second (moves x
``agent.simulations``), CPU milliseconds per move (one move of one game, the lock step shared), the
network calls and their batch sizes (leaves per call), and the share of the CPU time spent in the
network's forward passes. The repeats replay the same games (one seed), so their times differ only by
the machine.

``shares=FILE`` instead reads a ``py-spy record -f raw`` profile of the same command and prints the
share of self-play's samples in each part of a move (``share_of_parts``), e.g.

    py-spy record -r 250 -f raw -o spy.txt -- python experiments/alphazero_selfplay_cost.py
"""

from __future__ import annotations

import collections
import statistics
import sys
import time
from pathlib import Path

from ttt.cli import exit_on_help, key_values, run_cli

EXPERIMENTS = Path(__file__).resolve().parents[1] / "configs" / "experiment"
DEFAULTS = {"games": "50", "repeats": "3", "seed": "0", "experiment": "alphazero_444", "shares": ""}

# The parts of a self-play move, as (name, a frame that marks it); the first part whose mark is on a
# sample's stack takes it (the evaluator before the engine: the evaluator never calls the rules).
PARTS = (
    ("network: forward pass (torch)", "Module._wrapped_call_impl (torch/nn/modules/module.py"),
    ("network: evaluator around it (boards, legal masks, softmax, priors)", "NetworkEvaluator.arrays ("),
    ("engine (BatchedGames.play, legal masks)", "(ttt/games/"),
    ("tree: node creation (positions copied, children linked)", "ArrayTrees._new_nodes ("),
    ("tree: selection (PUCT over every walking tree at once)", "ArrayTrees._select ("),
    ("tree: backup", "ArrayTrees._backup ("),
    ("tree: walk, expand, root noise (the rest)", "(ttt/players/array_tree.py"),
    ("self-play loop (root noise, visit policies, examples)", "(ttt/agents/alphazero.py"),
)


def settings(argv: list[str]) -> dict[str, str]:
    """The ``key=value`` arguments over ``DEFAULTS``; a one-line ValueError for a bad one."""
    out = key_values(argv, DEFAULTS)
    for key, least in (("games", 1), ("repeats", 1), ("seed", 0)):
        if not out[key].strip().isdigit() or int(out[key]) < least:
            raise ValueError(f"{key}={out[key]}: give a whole number >= {least}")
    if not (EXPERIMENTS / f"{out['experiment']}.yaml").is_file():
        raise ValueError(f"experiment={out['experiment']}: no such file {EXPERIMENTS / out['experiment']}.yaml")
    if out["shares"] and not Path(out["shares"]).is_file():
        raise ValueError(f"shares={out['shares']}: no such file (a py-spy record -f raw profile)")
    return out


def share_of_parts(raw: str) -> dict[str, float]:
    """Share of each part of ``PARTS`` (and ``other``) among the samples of a ``py-spy record -f raw``
    profile whose stack passes through ``self_play``; each line is ``frame;frame;... count``."""
    counts: collections.Counter[str] = collections.Counter()
    for line in raw.splitlines():
        stack, _, n = line.rstrip().rpartition(" ")
        if "self_play (" not in stack:
            continue
        part = next((name for name, mark in PARTS if mark in stack), "other")
        counts[part] += int(n)
    total = sum(counts.values()) or 1
    return {name: counts[name] / total for name, _ in (*PARTS, ("other", ""))}


def measure(games: int, repeats: int, seed: int, experiment: str) -> list[dict]:
    """One dict per repeat: moves, simulations, cpu_s, sims_per_s, ms_per_move, calls, batch sizes, forward_share."""
    import numpy as np
    import torch
    from omegaconf import OmegaConf

    from ttt.agents import alphazero as az
    from ttt.config import agent_settings
    from ttt.games import make_game
    from ttt.nets.policy_value import build_policy_value_net
    from ttt.perf import recipe_config

    torch.set_num_threads(1)
    cfg = recipe_config(experiment)
    if cfg.agent.name != "alphazero":
        raise ValueError(f"experiment={experiment} trains {cfg.agent.name}; this measures alphazero's self-play")
    game, acfg = make_game(cfg.game.name), agent_settings(cfg.agent, az.Config)
    torch.manual_seed(0)
    net = build_policy_value_net(game, OmegaConf.to_container(cfg.network, resolve=True), acfg.policy_head).eval()
    batches: list[int] = []
    forward = [0.0]

    def before(module, args):
        batches.append(len(args[0]))
        forward[0] -= time.process_time()

    def after(module, args, out):
        forward[0] += time.process_time()

    az.self_play(net, game, min(games, 4), acfg, np.random.default_rng(seed + 1))  # warm-up
    net.register_forward_pre_hook(before)
    net.register_forward_hook(after)
    rows = []
    for _ in range(repeats):
        batches.clear()
        forward[0] = 0.0
        t0 = time.process_time()
        examples = az.self_play(net, game, games, acfg, np.random.default_rng(seed))
        cpu = time.process_time() - t0
        moves = len(examples)
        rows.append({"moves": moves, "simulations": moves * acfg.simulations, "cpu_s": cpu,
                     "sims_per_s": moves * acfg.simulations / cpu,
                     "ms_per_move": 1000 * cpu / moves, "calls": len(batches), "batches": list(batches),
                     "forward_share": forward[0] / cpu})
    return rows


def main(argv: list[str]) -> None:
    exit_on_help(argv, __doc__, needed=False)
    run_cli(report, argv)


def report(argv: list[str]) -> None:
    """Measure (or read the profile) as the arguments ``argv`` say, and print it."""
    s = settings(argv)
    if s["shares"]:
        text = Path(s["shares"]).read_text(encoding="utf-8", errors="replace")
        for name, share in share_of_parts(text).items():
            print(f"{100 * share:5.1f}%  {name}")
        return
    rows = measure(int(s["games"]), int(s["repeats"]), int(s["seed"]), s["experiment"])
    for r in rows:
        b = r["batches"]
        print(f"{r['moves']} moves  {r['cpu_s']:.2f} CPU s  {r['sims_per_s']:.0f} simulations/s  "
              f"{r['ms_per_move']:.2f} ms/move  {r['calls']} network calls, leaves per call mean "
              f"{statistics.mean(b):.1f} median {statistics.median(b):.0f} max {max(b)}  "
              f"forward passes {100 * r['forward_share']:.1f}% of the CPU time", flush=True)
    med = statistics.median(r["cpu_s"] for r in rows)  # the repeats replay the same games
    print(f"median of {len(rows)}: {rows[0]['simulations'] / med:.0f} simulations/s, "
          f"{1000 * med / rows[0]['moves']:.2f} ms/move")


if __name__ == "__main__":
    main(sys.argv[1:])
