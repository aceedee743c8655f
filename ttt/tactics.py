"""Tactics suites from the command line: ``python -m ttt.tactics`` (Hydra; ``--help`` shows the config).

Measures a player on the suites of ``ttt.suites`` (positions that each ask for one kind of move, shipped
for ``4x4x4`` and ``4x4x4_gravity``), or with ``generate=true [game=NAME]`` rewrites the shipped files,
bit for bit. ``rules=false`` measures a learned player without its move-selection rules (the network
alone); fixed and search players have none, and the output says that ``rules`` has no effect on them.
JSON (``output=FILE.json``)::

    {"game": ..., "player": ..., "rules": bool, "rules_apply": bool, "rule_flags": {...},
     "suites": {"win": {"positions": N, "solved": K, "rate": K / N}, "block": ..., "fork": ...,
                "block_fork": ...}}
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from ttt.cli import check_writable_file, run_cli, write_json, write_with_fallback
from ttt.config import GameConfig, check_seed_and_threads
from ttt.games import make_game
from ttt.specs import agent_spec, board_name, load_agents
from ttt.suites import (
    BOARDS,
    generate_suites,
    has_rules,
    load_suites,
    rule_flags,
    save_suites,
    suite_path,
    suite_results,
    without_rules,
)


# ---------------------------------------------------------------------------------------- entry point
@dataclass
class TacticsConfig:
    """Schema of ``configs/tactics.yaml``."""

    checkpoint: str | None = None  # the player: a saved learner ...
    player: Any = None  # ... or a player spec (ttt.benchmark syntax); neither: the shipped dqn_444
    game: GameConfig | None = None  # board (game=4x4x4_gravity); default: the checkpoint's, else 4x4x4
    rules: bool = True  # false: a learned player's move-selection rules off (the network alone)
    output: str | None = None  # write the results as JSON here (with generate=true: the suites file)
    seed: int = 0  # the player's random choices (tie-breaks)
    generate: bool = False  # rebuild the shipped suites instead of measuring (all boards unless game=)
    threads: int = 1  # torch intra-op threads


ConfigStore.instance().store(name="tactics_schema", node=TacticsConfig)


def format_table(results: dict[str, dict]) -> str:
    """The results as a fixed-width text table."""
    head = f"{'suite':<12} {'positions':>9} {'solved':>7} {'rate':>6}"
    rows = [f"{s:<12} {r['positions']:>9} {r['solved']:>7} {r['rate']:>6.3f}" for s, r in results.items()]
    return "\n".join([head, "-" * len(head), *rows])


def tactics(cfg: DictConfig, out: TextIO | None = None) -> dict:
    """Measure a player on the suites (or, with ``generate``, rebuild them); print; return the results."""
    import torch

    out = out or sys.stdout
    check_seed_and_threads(cfg)
    if cfg.output:
        check_writable_file(cfg.output, "output")
    torch.set_num_threads(int(cfg.threads))
    if cfg.generate:
        return generate(cfg, out)
    game, [(label, player)] = load_agents([agent_spec(cfg)], board_name(cfg))
    load_suites(game.name)  # fails early, naming the boards with suites
    if not cfg.rules:
        player = without_rules(player)
    flags = rule_flags(player)
    applies = has_rules(player)
    t0 = time.perf_counter()
    results = suite_results(player, game, int(cfg.seed))
    seconds = time.perf_counter() - t0
    rules_text = ", ".join(f"{k}={v}" for k, v in flags.items()) if applies else "no effect: it has no rules to switch"
    print(f"{label} on {game.name}, rules={str(bool(cfg.rules)).lower()} ({rules_text}); {seconds:.1f} s",
          file=out)
    print(format_table(results), file=out, flush=True)
    result = {"game": game.name, "player": label, "rules": bool(cfg.rules), "rules_apply": applies,
              "rule_flags": flags, "suites": results}
    if cfg.output:
        path = write_json(cfg.output, result, "results")
        print(f"wrote {path}", file=out)
    return result


def generate(cfg: DictConfig, out: TextIO) -> dict:
    """Rebuild the suites of ``cfg.game`` (default: every board of ``BOARDS``) and write them."""
    boards = [board_name(cfg)] if cfg.game is not None else list(BOARDS)
    for board in boards:
        if board not in BOARDS:
            raise ValueError(f"suites are defined for {' and '.join(BOARDS)}, not {board!r}")
    if cfg.output and len(boards) > 1:
        raise ValueError("generate=true with output=FILE needs one board: add game=NAME")
    result = {}
    for board in boards:
        game = make_game(board)
        suites = generate_suites(game, out=out)
        path = write_with_fallback(Path(cfg.output) if cfg.output else suite_path(board),
                                   partial(save_suites, game=game, suites=suites), "suites")
        print(f"wrote {path}", file=out, flush=True)
        result[board] = {"path": str(path), **{s: len(x) for s, x in suites.items()}}
    return result


@hydra.main(version_base="1.3", config_path="../configs", config_name="tactics")
def main(cfg: DictConfig) -> None:
    run_cli(tactics, cfg)


if __name__ == "__main__":
    main()
