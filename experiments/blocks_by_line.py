"""The ``block`` suite by the kind of line the opponent threatens to complete, one row per checkpoint and kind.

    python experiments/blocks_by_line.py runs/a/seed_0 runs/a/seed_1 ... [--rules] [--out FILE.csv]

Each position of the ``block`` suite (``ttt.evaluation.suites``) leaves the opponent one immediate win. This sorts
the positions by the orbit, under the board's symmetry group (``ttt.games.symmetry.line_orbits``), of the
line that win would complete, and gives the player's block rate on each: with the network alone (as
``python -m ttt.tactics rules=false``), or with ``--rules`` with its move-selection rules. A line detector
layer whose lines of one orbit share their detectors (``network.tie_orbits``) learns each orbit's threat
on its own; this shows whether it has. Columns: ``run``, ``orbit``, ``kind`` (straight, face diagonal or
space diagonal: how many coordinates change along the line), ``lines`` (in the orbit), ``positions`` and
``rate``; positions with threats on lines of several orbits are in a row of their own (``orbit`` 1+3, say).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ttt.cli import ArgumentParser, print_csv, run_cli
from ttt.harness.specs import checkpoint_file, suite_checkpoints

KINDS = {1: "straight", 2: "face diagonal", 3: "space diagonal"}


def line_kinds(game) -> np.ndarray:
    """(L,) how many of the board's coordinates change along each line (1 straight, 2 and 3 diagonals)."""
    coords = np.stack(np.unravel_index(np.asarray(game.lines), game.shape), -1)  # (L, k, dims)
    return (coords.min(1) != coords.max(1)).sum(-1)


def threat_orbits(game, orbit: np.ndarray, boards: np.ndarray, to_play: np.ndarray) -> list[tuple[int, ...]]:
    """Per position, the sorted orbits (``orbit``: each line's) of the lines the opponent of ``to_play`` could
    complete with one move (``ttt.games.threats.ready_lines``)."""
    from ttt.games.threats import ready_lines

    ready, _ = ready_lines(boards, -to_play.astype(np.int64), game)
    return [tuple(sorted({int(orbit[j]) for j in np.flatnonzero(r)})) for r in ready]


def rows_of(path: Path, rules: bool) -> list[dict]:
    from ttt.evaluation.suites import load_suites, solved_by, suite_moves, without_rules
    from ttt.games.symmetry import line_orbits
    from ttt.harness.specs import load_agents

    game, [(_, player)] = load_agents([{"checkpoint": str(checkpoint_file(path))}], None)
    if not rules:
        player = without_rules(player)
    suites = load_suites(game.name)
    block = suites["block"]
    hits = solved_by(block, suite_moves(player, game, suites)["block"])
    orbit, _ = line_orbits(np.asarray(game.lines), game.symmetries)
    keys = threat_orbits(game, orbit, block.boards, block.to_play)
    kinds = line_kinds(game)
    rows = []
    for key in sorted(set(keys), key=lambda t: (len(t), t)):
        at = np.array([k == key for k in keys])
        rows.append({"run": str(path), "orbit": "+".join(map(str, key)) or "none",
                     "kind": "+".join(KINDS.get(int(kinds[orbit == o][0]), "?") for o in key),
                     "lines": "+".join(str(int((orbit == o).sum())) for o in key),
                     "positions": int(at.sum()), "rate": round(float(hits[at].mean()), 3)})
    rows.append({"run": str(path), "orbit": "all", "kind": "", "lines": len(orbit), "positions": len(block),
                 "rate": round(float(hits.mean()), 3)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (with checkpoint.pt) or checkpoint files")
    parser.add_argument("--rules", action="store_true", help="with the move-selection rules (default: without)")
    parser.add_argument("--out", type=Path, help="also write the rows to this CSV file")
    args = parser.parse_args(argv)
    run_cli(suite_checkpoints, args.runs)  # every one before the first is measured
    rows = run_cli(lambda: [row for path in args.runs for row in rows_of(path, args.rules)])
    print_csv(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
