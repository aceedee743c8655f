"""How much of a trained network's score is lost to defence: each checkpoint against the benchmark
player as trained, with the exact-losses rule added at test time only, and its network alone.

    python experiments/defence_counterfactual.py FOLDER [FOLDER ...] [games=1000] [opponent=benchmark]

Every ``checkpoint.pt`` under the folders (a run of the defence study, ``experiments/defence_study.sh``,
or any ``dqn`` run) is played ``games`` games against ``opponent`` (both seats, seed 0) three ways:

* ``trained``: its own move-selection rules, as its evaluations played (exact wins);
* ``+losses``: the same plus the exact-losses rule (a move that lets the opponent win at once scores
  -1): it takes every safe forced block and never plays under the opponent's win. The score it adds
  is what defence against the next move costs the network at that point of training;
* ``alone``: the network with no rule at all.

Prints one CSV row per checkpoint (folder, score and its 95% interval each way, the block rate of the
trained player) and then the mean ± sd per folder given.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from ttt.cli import exit_on_help, run_cli


def settings(argv: list[str]) -> tuple[list[Path], int, str]:
    """(folders, games, opponent) of the arguments; a one-line ValueError for a bad one."""
    folders = [Path(a) for a in argv if "=" not in a]
    opts = dict(a.split("=", 1) for a in argv if "=" in a)
    unknown = sorted(set(opts) - {"games", "opponent"})
    if unknown:
        raise ValueError(f"{unknown[0]}=: give games=N or opponent=SPEC (see --help)")
    games = opts.get("games", "1000")
    if not games.strip().isdigit() or int(games) < 1:
        raise ValueError(f"games={games}: give a whole number of games >= 1")
    if not folders:
        raise ValueError("name a folder of runs (see --help)")
    for folder in folders:
        if not folder.is_dir():
            what = "not a folder" if folder.exists() else "no such folder"
            raise ValueError(f"{folder}: {what} (give folders of runs)")
        if not any(folder.rglob("checkpoint.pt")):
            raise ValueError(f"{folder}: no checkpoint.pt under it")
    return folders, int(games), opts.get("opponent", "benchmark")


def main(argv: list[str]) -> None:
    exit_on_help(argv, __doc__)
    run_cli(counterfactual, *run_cli(settings, argv))


def counterfactual(folders: list[Path], games: int, opponent: str) -> None:
    """Print the CSV rows and the summary of the module docstring."""
    from ttt.evaluation.defence import defence
    from ttt.evaluation.evaluate import Recorded, play_match, wilson_interval
    from ttt.harness.specs import load_agents

    players = []  # every checkpoint loaded and checked before the first game
    for folder in folders:
        for ckpt in sorted(folder.rglob("checkpoint.pt")):
            game, [(_, player), (_, opp)] = load_agents([str(ckpt), opponent], None)
            if not hasattr(player, "with_rules"):
                raise ValueError(f"{ckpt}: {type(player).__name__} has no move-selection rules to add or "
                                 "take away; give the folders of value learners' runs (dqn)")
            players.append((folder, ckpt, game, player, opp))
    print("folder,checkpoint,trained,trained_low,trained_high,losses,losses_low,losses_high,alone,alone_low,"
          "alone_high,block_rate")
    summary: dict[Path, list[tuple[float, float, float]]] = {}
    for folder, ckpt, game, player, opp in players:
        ways = {"trained": player, "losses": player.with_rules(replace(player.rules, losses=True)),
                "alone": player.without_rules()}
        scores, cells = {}, []
        for name, p in ways.items():
            recorded = Recorded(p) if name == "trained" else p
            result = play_match(game, recorded, opp, games, seed=0).both
            scores[name] = result.score
            low, high = wilson_interval(result.wins + result.draws / 2, result.games)  # a draw is half a win
            cells += [f"{result.score:.4f}", f"{low:.4f}", f"{high:.4f}"]
            if name == "trained":
                block = defence(game, recorded.moves())["block_rate"]
        print(f"{folder},{ckpt.relative_to(folder)},{','.join(cells)},"
              f"{'' if block is None else f'{block:.4f}'}", flush=True)
        summary.setdefault(folder, []).append((scores["trained"], scores["losses"], scores["alone"]))
    for folder, rows in summary.items():
        cols = np.array(rows)
        sd = [statistics.stdev(c) if len(c) > 1 else 0.0 for c in cols.T.tolist()]
        text = ", ".join(f"{name} {100 * statistics.mean(c):.1f} ± {100 * d:.1f}"
                         for name, c, d in zip(("trained", "+losses", "alone"), cols.T.tolist(), sd, strict=True))
        print(f"# {folder}: n={len(rows)}: {text}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
