"""The value columns of a learner's checkpoints: what its value head alone knows, one CSV row each.

    python experiments/value_columns.py runs/a/seed_0 runs/a/seed_1 ... [--out FILE.csv] [--games 200]

For each run directory (or checkpoint file), with the network alone (no rules in move selection):

* ``win``, ``block``, ``fork``, ``block_fork``: the tactics suites solved (``python -m ttt.tactics rules=false``);
* ``ece``, ``pearson``, ``opening_median``: ``python -m ttt.calibration games=G rollouts=4``;
* ``auc_11+_<opponent>`` and ``auc_<opponent>``: won against lost afterstates of its own moves in G games
  against ``alphabeta:1`` and against the benchmark player (``opponent=``), plies 11 and later and all;
* ``auc_11+_95_<opponent>`` (the last columns): the 95% interval of each AUC at plies 11+, drawing whole games;
* ``ceiling_11+_<opponent>`` (with ``--ceiling R``): the AUC no value of those afterstates can pass, from R
  continuations of each by the same two players (``ttt.calibration ceiling=R``);
* ``forced_loss``, ``double_threat``, ``completed_line``: the mean value of each one-move class (exact -1,
  +1, +1), from ``one_move=300`` random positions;

and, from the run's ``final_eval.json`` when there is one, the scores of its final evaluation (with the
rules the run plays with, both seats) and the 95% interval of each win rate. The rows go to stdout as
CSV (and to ``--out``).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from omegaconf import OmegaConf

from ttt.cli import ArgumentParser, print_csv, run_cli
from ttt.harness.specs import checkpoint_file, suite_checkpoints

OPPONENTS = ("alphabeta:1", "benchmark")


def columns(path: Path, games: int, one_move: int, ceiling: int = 0) -> dict:
    from ttt.calibration import CalibrationConfig, calibration
    from ttt.tactics import TacticsConfig, tactics

    ckpt = str(checkpoint_file(path))
    quiet = io.StringIO()
    row: dict = {"run": str(path)}
    intervals: dict = {}  # last in the row: the 95% interval of each AUC at plies 11+, over the games
    suites = tactics(OmegaConf.structured(TacticsConfig(checkpoint=ckpt, rules=False)), quiet)["suites"]
    row.update({name: round(r["rate"], 3) for name, r in suites.items()})
    for i, opponent in enumerate(OPPONENTS):
        cfg = CalibrationConfig(checkpoint=ckpt, games=games, rollouts=4 if i == 0 else 1, opponent=opponent,
                                one_move=one_move if i == 0 else 1, ceiling=ceiling)
        result = calibration(OmegaConf.structured(cfg), quiet)
        d = result["discrimination"]
        row[f"auc_11+_{opponent}"] = d["by_phase"]["11+"]["auc"]
        row[f"auc_{opponent}"] = d["auc"]
        ci = d["by_phase"]["11+"]["auc_95"]
        intervals[f"auc_11+_95_{opponent}"] = "" if ci is None else "[{:.3f}, {:.3f}]".format(*ci)
        if ceiling:
            row[f"ceiling_11+_{opponent}"] = d["ceiling"]["by_phase"]["11+"]
        if i == 0:
            row["ece"] = result["ece"]
            row["pearson"] = result["outcomes"]["pearson"]
            row["opening_median"] = result["openings"]["median"]
            row.update({name: result["one_move"][name]["mean"] for name in ("forced_loss", "double_threat",
                                                                            "completed_line")})
    final = checkpoint_file(path).parent / "final_eval.json"
    if final.exists():
        for r in json.loads(final.read_text()).get("results", []):
            if r.get("seat") == "both":
                row[f"score_{r['opponent']}"] = r["score"]
                row[f"win_ci_{r['opponent']}"] = "[{:.3f}, {:.3f}]".format(*r["win_rate_ci"])
    row.update(intervals)
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}


def all_columns(runs: list[Path], games: int, one_move: int, ceiling: int = 0) -> list[dict]:
    """``columns`` of each of ``runs``, saying on stderr when each is done."""
    rows = []
    for path in runs:
        rows.append(columns(path, games, one_move, ceiling))
        print(f"value_columns: {path} done", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (with checkpoint.pt) or checkpoint files")
    parser.add_argument("--games", type=int, default=200, help="games per opponent and self-play positions (200)")
    parser.add_argument("--one-move", type=int, default=300, help="afterstates of each one-move class (300)")
    parser.add_argument("--ceiling", type=int, default=0, metavar="R",
                        help="also the AUC's ceiling, from R continuations of each afterstate (0: not measured)")
    parser.add_argument("--out", type=Path, help="also write the rows to this CSV file")
    args = parser.parse_args(argv)
    run_cli(suite_checkpoints, args.runs)  # every one before the first is measured
    print_csv(run_cli(all_columns, args.runs, args.games, args.one_move, args.ceiling), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
