"""What a player's losses come from: each of its moves in a match, classified by the rules' one-move tactics.

    python experiments/move_errors.py SPEC [--opponent alphabeta:1] [--games 200] [--seed 0]

SPEC is a player spec (``ttt.harness.specs``), e.g. ``"{checkpoint: runs/a/seed_0, rules: false}"`` for a network
alone. It plays ``--games`` games against the opponent (``ttt.evaluation.evaluate.play_match``, half in each seat) and
classifies every one of its moves with ``ttt.games.threats.move_tactics`` (boards without gravity):

* ``wins_missed`` of ``win_chances``: positions with a winning move where it played another;
* ``blocks_missed`` of ``under_threat``: moves that left the opponent an immediate win where a move that
  did not existed;
* ``allowed`` of ``avoidable``: moves after which the opponent could win or fork at once, where another
  move allowed neither;
* ``lost_already``: positions where every move let the opponent win or fork at once (lost to a sequence
  of threats begun earlier).

Prints one CSV row (``score`` is the player's score in these games).
"""

from __future__ import annotations

import sys

import numpy as np
import yaml

from ttt.cli import ArgumentParser, one_line, print_csv, run_cli


def move_errors(spec, opponent: str, games: int, seed: int = 0, board: str | None = None) -> dict:
    from ttt.evaluation.evaluate import Recorded, play_match
    from ttt.games.threats import move_tactics
    from ttt.harness.specs import load_agents

    game, [(_, me), (_, op)] = load_agents([spec, opponent], board)  # board: the checkpoint's, else 4x4x4
    if game.gravity:
        raise ValueError(f"{game.name}: move_errors classifies moves on boards without gravity")
    recorded = Recorded(me)
    result = play_match(game, recorded, op, games, seed=seed)
    m = recorded.moves()
    n, cells = m.boards.shape
    rows = np.arange(n)
    legal = m.boards == 0
    t = move_tactics(m.boards, m.movers, legal, game)
    chance = t.win.any(1)
    # every afterstate of every position, and whether the opponent can then win or fork at once
    after = np.repeat(m.boards[:, None, :], cells, 1)
    after[:, np.arange(cells), np.arange(cells)] = np.where(legal, m.movers[:, None], 0)
    flat = after.reshape(-1, cells)
    theirs = move_tactics(flat, np.repeat(-m.movers, cells), flat == 0, game)
    bad = (theirs.win.any(1) | theirs.fork.any(1)).reshape(n, cells) & legal
    threat = t.loss.any(1) & (legal & ~t.loss).any(1) & ~chance
    avoidable = bad.any(1) & (legal & ~bad).any(1) & ~chance
    return {"spec": str(spec), "opponent": opponent, "games": games, "score": result.both.score,
            "moves": n, "wins_missed": int((chance & ~t.win[rows, m.moves]).sum()), "win_chances": int(chance.sum()),
            "blocks_missed": int((threat & t.loss[rows, m.moves]).sum()), "under_threat": int(threat.sum()),
            "allowed": int((avoidable & bad[rows, m.moves]).sum()), "avoidable": int(avoidable.sum()),
            "lost_already": int((~(legal & ~bad).any(1) & ~chance).sum())}


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", help="a player spec, e.g. \"{checkpoint: runs/a/seed_0, rules: false}\"")
    parser.add_argument("--opponent", default="alphabeta:1")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error(f"--games {args.games}: play at least 1 game")
    try:
        spec = yaml.safe_load(args.spec)
    except yaml.YAMLError as e:
        parser.error(f"spec {args.spec!r} is not a player spec ({one_line(e)})")
    row = run_cli(move_errors, spec, args.opponent, args.games, args.seed)
    print_csv([{**row, "spec": args.spec}])
    return 0


if __name__ == "__main__":
    sys.exit(main())
