"""Tactics suites from the command line: ``python -m ttt.tactics`` (Hydra; ``--help`` shows the config).

Measures a player on the suites of ``ttt.evaluation.suites`` (positions that each ask for one kind of move, shipped
for ``4x4x4`` and ``4x4x4_gravity``), or with ``generate=true [game=NAME]`` rewrites the shipped files,
bit for bit. ``rules=false`` measures a learned player without its move-selection rules (the network
alone); fixed and search players have none, and the output says that ``rules`` has no effect on them.

``output=FILE.html`` writes a gallery of the positions the player misses instead of JSON: the results
table, then per suite up to ``misses`` missed positions (in the suite's order), each drawn by
``ttt.games.render`` with the move the player made framed red, the right moves framed green and, for a
player with move values (``action_values``), those values as a heat map. Any other ``output`` is
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
from html import escape
from pathlib import Path
from typing import Any, TextIO

import hydra
import numpy as np
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from ttt.cli import check_writable_file, run_cli, write_json, write_with_fallback
from ttt.config import GameConfig, check_seed_and_threads
from ttt.evaluation.suites import (
    BOARDS,
    SUITES,
    Suite,
    generate_suites,
    load_suites,
    results_of,
    rule_flags,
    save_suites,
    solved_by,
    suite_moves,
    suite_path,
)
from ttt.games import Game, make_game
from ttt.games.render import render_svg
from ttt.harness.specs import agent_spec, board_name, load_agents
from ttt.players import has_rules, without_rules


# ---------------------------------------------------------------------------------------- entry point
@dataclass
class TacticsConfig:
    """Schema of ``configs/tactics.yaml``."""

    checkpoint: str | None = None  # the player: a saved learner ...
    player: Any = None  # ... or a player spec (ttt.benchmark syntax); neither: the shipped dqn_444
    game: GameConfig | None = None  # board (game=4x4x4_gravity); default: the checkpoint's, else 4x4x4
    rules: bool = True  # false: a learned player's move-selection rules off (the network alone)
    output: str | None = None  # write the results as JSON here, or FILE.html: a gallery of the missed positions
    misses: int = 20  # an .html output: at most this many missed positions drawn per suite (0: all)
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
    if int(cfg.misses) < 0:
        raise ValueError(f"misses={cfg.misses}: give 0 (all) or more")
    gallery = bool(cfg.output) and str(cfg.output).lower().endswith(".html")
    if gallery and cfg.generate:
        raise ValueError("generate=true writes the suites (output=FILE.npz), not a gallery")
    if cfg.output:
        check_writable_file(cfg.output, "output")
    torch.set_num_threads(int(cfg.threads))
    if cfg.generate:
        return generate(cfg, out)
    game, [(label, player)] = load_agents([agent_spec(cfg)], board_name(cfg))
    suites = load_suites(game.name)  # fails early, naming the boards with suites
    if not cfg.rules:
        player = without_rules(player)
    flags = rule_flags(player)
    applies = has_rules(player)
    t0 = time.perf_counter()
    moves = suite_moves(player, game, suites, int(cfg.seed))
    results = results_of({s: solved_by(suites[s], a) for s, a in moves.items()})
    seconds = time.perf_counter() - t0
    rules_text = ", ".join(f"{k}={v}" for k, v in flags.items()) if applies else "no effect: it has no rules to switch"
    print(f"{label} on {game.name}, rules={str(bool(cfg.rules)).lower()} ({rules_text}); {seconds:.1f} s",
          file=out)
    print(format_table(results), file=out, flush=True)
    result = {"game": game.name, "player": label, "rules": bool(cfg.rules), "rules_apply": applies,
              "rule_flags": flags, "suites": results}
    if gallery:
        html = gallery_html(game, label, player, suites, moves, result, int(cfg.misses))
        path = write_with_fallback(cfg.output, lambda p: p.write_text(html, encoding="utf-8"), "gallery")
        print(f"wrote {path}", file=out)
    elif cfg.output:
        path = write_json(cfg.output, result, "results")
        print(f"wrote {path}", file=out)
    return result


def gallery_html(game: Game, label: str, player, suites: dict[str, Suite], moves: dict[str, np.ndarray],
                 result: dict, misses: int = 20) -> str:
    """One HTML page: ``result``'s table, then per suite the first ``misses`` (0: all) positions whose
    move in ``moves`` does not solve them, each an SVG with the played move framed red and the right
    moves green (and the player's ``action_values`` as a heat map where it has them)."""
    rules = "on" if result["rules"] else "off"
    parts = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
             f"<title>{escape(label)} on {game.name}: missed tactics</title>",
             "<style>body{font-family:sans-serif;margin:1.5em} figure{display:inline-block;margin:0 1em 1em 0} "
             "figcaption{font-size:13px;max-width:760px} table{border-collapse:collapse} "
             "td,th{padding:2px 10px;text-align:right}</style></head><body>",
             f"<h1>{escape(label)} on {game.name} (rules {rules}): the tactics positions it misses</h1>",
             "<table><tr><th>suite</th><th>positions</th><th>solved</th><th>rate</th><th>missed</th></tr>"]
    for s, r in result["suites"].items():
        parts.append(f"<tr><td>{s}</td><td>{r['positions']}</td><td>{r['solved']}</td><td>{r['rate']:.3f}</td>"
                     f"<td>{r['positions'] - r['solved']}</td></tr>")
    parts.append("</table><p>X blue crosses, O red rings. Framed red: the move the player made; framed green: "
                 "the right moves. Layer 0 on the left (with gravity, the bottom). docs/tactics.md defines "
                 "the suites.</p>")
    for s in SUITES:
        suite, actions = suites[s], moves[s]
        missed = np.flatnonzero(~solved_by(suite, actions))
        shown = missed if misses == 0 else missed[:misses]
        parts.append(f'<h2 id="{s}">{s}: {len(missed)} of {len(suite)} missed'
                     + (f" (the first {len(shown)} drawn)" if len(shown) < len(missed) else "") + "</h2>")
        for i in shown:
            board, move = suite.boards[i], int(actions[i])
            right = [int(c) for c in np.flatnonzero(suite.solutions[i])]
            state = game.state_from_board(board)
            values = player.action_values(state)
            played = (f"{move} ({game.cell_label(move)})" if 0 <= move < game.num_cells else "none")
            caption = (f"{s} #{i}: {'X' if suite.to_play[i] == 1 else 'O'} to move; played {played}; right: "
                       + ", ".join(f"{c} ({game.cell_label(c)})" for c in right))
            svg = render_svg(game, board, values=values, played=move, right_moves=right)
            parts.append(f'<figure id="{s}-{i}">{svg}<figcaption>{escape(caption)}</figcaption></figure>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


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
