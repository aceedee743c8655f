"""Tactics suites: fixed positions that each ask for one kind of move, shipped for ``4x4x4`` and ``4x4x4_gravity`` in
``ttt/data/tactics/<board>.npz``, and the share of them a player solves. The player to move in a
position is the one whose turn it is by the piece counts; a position's *solutions* are the moves that
solve it, and a player solves it when its move is one of them. The four suites:

* ``win``: the mover can complete a line. Solutions: the moves that complete one.
* ``block``: the opponent has exactly one immediate win, the mover none, and exactly one move leaves
  the opponent no immediate win. Solution: that move.
* ``fork``: neither side has an immediate win and the mover has a fork (a move after which it has two
  winning cells and the opponent none; ``ttt.games.threats.move_tactics``). Solutions: every move that
  wins by force in three plies (``forced_wins``: the forks, and with gravity also a threat whose only
  block makes a second winning cell playable).
* ``block_fork``: neither side has an immediate win, the mover has no forced win in three plies, and the
  opponent would have one if it were to move. Solutions: the moves that do not lose by force within
  four plies, i.e. after which the opponent has neither an immediate win nor a forced win in three. A
  forcing threat of the mover that postpones the fork therefore counts. Only positions where at least
  one legal move and fewer than half of them solve it are kept.

**Generation** (``generate_suites``; ``python -m ttt.tactics generate=true [game=NAME]`` rewrites the
shipped files with it, bit for bit). Games are played in rounds of ``GAMES_PER_PAIRING`` games for each
pairing of ``PAIRINGS`` (random and benchmark players), round r of pairing p seeded with ``(SEED, r, p)``;
games are visited pairing by pairing within each game index. From each game every suite takes at most one position: the
first, in an order of the game's plies drawn per game, that qualifies and is not a symmetric image of one
already taken (``Game.canonical_key``). Each suite takes positions until it holds ``SIZES[suite]``, so a
smaller size gives a prefix of the same suite. Qualifying and solutions come from the rules
(``ttt.games.threats``); then **exact search verifies every position**: the solutions must be exactly
the moves that ``AlphaBetaPlayer`` scores as a win within 1 ply (``win``) or 3 plies (``fork``), or as
not lost within 2 plies (``block``) or 4 plies (``block_fork``), searching that many plies.

**Measuring** asks the player for one move in every position of every suite at once (one
``act_batch`` call: one forward pass over all afterstates for the value network). ``rules=false``
measures a learned player without its move-selection rules: a player that has them (its ``rules``, e.g.
``ttt.games.exact.Rules``: exact wins, losses, forks) offers ``without_rules()``, the same network
playing alone. Fixed and search players have none. The command line is ``ttt.tactics``.

Training logs the rates of the network alone (rules off) as ``eval/tactics/<suite>`` at every
evaluation on boards with suites (``tactics_rates``, called from ``ttt.harness.training.Run.evaluate``).
"""

from __future__ import annotations

import io
import time
import zipfile
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TextIO

import numpy as np

from ttt.checkpoint import atomic_write
from ttt.games import BatchedGames, Game, make_game
from ttt.games.boards import boards_with
from ttt.games.threats import completing_moves, forced_blocks, forced_wins, move_tactics, playable
from ttt.players import Player, has_rules, make_player, without_rules

SUITES = ("win", "block", "fork", "block_fork")
BOARDS = boards_with("tactics")  # the boards with shipped suites (ttt.games.boards)
DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "tactics"
FORMAT_VERSION = 1

# generation: these settings reproduce the shipped files
SIZES = {"win": 600, "block": 600, "fork": 300, "block_fork": 300}
SEED = 0
PAIRINGS = (("random", "random"), ("benchmark", "benchmark"), ("random", "benchmark"), ("benchmark", "random"))
GAMES_PER_PAIRING = 256  # games of each pairing per round
MAX_ROUNDS = 40
# search verification: (plies searched, "win": solutions win within them | "hold": solutions are not lost)
VERIFY = {"win": (1, "win"), "block": (2, "hold"), "fork": (3, "win"), "block_fork": (4, "hold")}



@dataclass
class Suite:
    """The positions of one suite: ``boards`` (N, cells) int8 (+1 first player, -1 second, 0 empty),
    ``solutions`` (N, cells) bool, and ``origin`` (N, 4) int32: round, pairing, game and ply they come from."""

    name: str
    boards: np.ndarray
    solutions: np.ndarray
    origin: np.ndarray

    def __len__(self) -> int:
        return len(self.boards)

    @property
    def to_play(self) -> np.ndarray:
        """(N,) int8: the player to move (+1 when both have as many pieces)."""
        return np.where(self.boards.sum(1) == 0, 1, -1).astype(np.int8)


# ---------------------------------------------------------------------------------- the definitions
def _masks(board: np.ndarray, to_play: np.ndarray, game: Game) -> dict[str, np.ndarray]:
    """Per position, whether it qualifies for the cheap suites, and the rules' move masks."""
    legal = playable(board, game)
    t = move_tactics(board, to_play, legal, game)
    theirs = completing_moves(board, -to_play, legal, game).sum(1)
    mine = t.win.any(1)
    quiet = ~mine & (theirs == 0)
    return {
        "legal": legal, "tactics": t,
        "win": mine,
        "block": forced_blocks(board, to_play, legal, game, t).any(1),
        "fork": quiet & t.fork.any(1),
        "block_fork": quiet & ~t.fork.any(1),  # the forced-win conditions are checked one by one
    }


def _block_fork_solutions(board: np.ndarray, to_play: int, legal: np.ndarray, loss: np.ndarray,
                          game: Game) -> np.ndarray | None:
    """The moves that do not lose within four plies, if the position belongs in ``block_fork``; else None."""
    one = board[None]
    me = np.array([to_play], dtype=np.int8)
    if forced_wins(one, me, legal[None], game).any() or not forced_wins(one, -me, legal[None], game).any():
        return None
    moves = np.flatnonzero(legal & ~loss)  # moves after which the opponent has no immediate win
    after = np.repeat(one, len(moves), axis=0)
    after[np.arange(len(moves)), moves] = to_play
    theirs = forced_wins(after, np.full(len(moves), -to_play, dtype=np.int8), playable(after, game), game)
    solutions = np.zeros_like(legal)
    solutions[moves[~theirs.any(1)]] = True
    n = int(solutions.sum())
    return solutions if 0 < n and 2 * n < int(legal.sum()) else None


def _solutions(suite: str, board: np.ndarray, to_play: int, m: dict, i: int, game: Game) -> np.ndarray | None:
    legal, t = m["legal"][i], m["tactics"]
    if suite == "win":
        return t.win[i].copy()
    if suite == "block":
        return legal & ~t.loss[i]
    if suite == "fork":
        return forced_wins(board[None], np.array([to_play], dtype=np.int8), legal[None], game)[0]
    return _block_fork_solutions(board, to_play, legal, t.loss[i], game)


def search_solutions(suite: str, board: np.ndarray, game: Game) -> np.ndarray:
    """The solutions of ``board`` in ``suite`` by exact alpha-beta search (``VERIFY``), independent of the rules."""
    from ttt.players.search import WIN, AlphaBetaPlayer

    plies, kind = VERIFY[suite]
    scores = AlphaBetaPlayer(game, depth=plies).move_scores(game.state_from_board(board), all_exact=True)
    out = np.zeros(game.num_cells, dtype=bool)
    for move, v in scores.items():
        # a win d plies from the root scores WIN - d, a loss -(WIN - d)
        out[move] = v >= WIN - plies if kind == "win" else v > -(WIN - plies)
    return out


# ---------------------------------------------------------------------------------------- generation
def _round_positions(game: Game, round_index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every position before a move in the round's games: (boards, to_play, origin), game by game."""
    boards, movers, origins = [], [], []
    for p, names in enumerate(PAIRINGS):
        players = [make_player(name, game) for name in names]
        rng = np.random.default_rng([SEED, round_index, p])
        g = BatchedGames(game, GAMES_PER_PAIRING)
        ply = 0
        while not g.done.all():
            live = np.flatnonzero(~g.done)
            boards.append(g.board[live].copy())
            movers.append(g.to_play[live].copy())
            origins.append(np.stack([np.full(len(live), round_index), np.full(len(live), p), live,
                                     np.full(len(live), ply)], axis=1))
            g.play(players[ply % 2].act_batch(g, rng))
            ply += 1
    origin = np.concatenate(origins).astype(np.int32)
    # game index first, then pairing, then ply: the pairings take turns
    order = np.lexsort((origin[:, 3], origin[:, 1], origin[:, 2]))
    return np.concatenate(boards)[order], np.concatenate(movers)[order], origin[order]


def generate_suites(game: Game, sizes: dict[str, int] | None = None, verify: bool = True,
                    out: TextIO | None = None) -> dict[str, Suite]:
    """Build the suites of ``game`` (``SIZES`` positions each unless ``sizes`` says otherwise).

    Deterministic: the same sizes give the same suites, and a smaller size a prefix of the larger
    suite. With ``verify`` every position's solutions are checked against exact search; a mismatch
    raises RuntimeError.
    """
    sizes = dict(SIZES if sizes is None else sizes)
    taken: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {s: [] for s in SUITES}
    seen: set = set()
    t0 = time.perf_counter()
    for r in range(MAX_ROUNDS):
        if all(len(taken[s]) >= sizes.get(s, 0) for s in SUITES):
            break
        boards, to_play, origin = _round_positions(game, r)
        m = _masks(boards, to_play, game)
        rng = np.random.default_rng([SEED, r, len(PAIRINGS)])
        starts = np.flatnonzero(np.r_[True, (np.diff(origin[:, 1:3], axis=0) != 0).any(1)])
        for lo, hi in zip(starts, np.r_[starts[1:], len(boards)], strict=True):
            order = lo + rng.permutation(hi - lo)  # drawn for every game, so the choice never depends on sizes
            for s in SUITES:
                if len(taken[s]) >= sizes.get(s, 0):
                    continue
                for i in order[m[s][order]]:
                    key = game.canonical_key(boards[i])
                    if key in seen:
                        continue
                    sol = _solutions(s, boards[i], int(to_play[i]), m, i, game)
                    if sol is None:
                        continue
                    seen.add(key)
                    taken[s].append((boards[i], sol, origin[i]))
                    break
        if out is not None:
            counts = ", ".join(f"{s} {len(taken[s])}" for s in SUITES)
            print(f"{game.name}: round {r}: {counts} ({time.perf_counter() - t0:.0f} s)", file=out, flush=True)
    suites = {}
    for s in SUITES:
        rows = taken[s][: sizes.get(s, 0)]
        cells = game.num_cells
        suites[s] = Suite(s, np.array([b for b, _, _ in rows], dtype=np.int8).reshape(-1, cells),
                          np.array([x for _, x, _ in rows], dtype=bool).reshape(-1, cells),
                          np.array([o for _, _, o in rows], dtype=np.int32).reshape(-1, 4))
    if verify:
        for s, suite in suites.items():
            bad = verify_suite(game, suite)
            if bad:
                raise RuntimeError(f"{game.name} {s}: search disagrees with the rules at positions {bad[:10]}")
            if out is not None:
                print(f"{game.name}: {s}: {len(suite)} positions verified by search "
                      f"({time.perf_counter() - t0:.0f} s)", file=out, flush=True)
    return suites


def verify_suite(game: Game, suite: Suite, indices=None) -> list[int]:
    """The positions (of ``indices``, default all) whose stored solutions differ from exact search's."""
    indices = range(len(suite)) if indices is None else indices
    return [int(i) for i in indices
            if not np.array_equal(search_solutions(suite.name, suite.boards[i], game), suite.solutions[i])]


# --------------------------------------------------------------------------------------- files
def suite_path(board: str) -> Path:
    """Where the suites of ``board`` ship."""
    return DATA_DIR / f"{board}.npz"


def save_suites(path: str | Path, game: Game, suites: dict[str, Suite]) -> None:
    """Write ``suites`` as an uncompressed .npz whose bytes depend only on the arrays (fixed zip dates)."""
    arrays: dict[str, np.ndarray] = {"format_version": np.array(FORMAT_VERSION), "game": np.array(game.name)}
    for s, suite in suites.items():
        arrays[f"{s}_boards"] = suite.boards.astype(np.int8)
        arrays[f"{s}_solutions"] = np.packbits(suite.solutions, axis=1, bitorder="little")
        arrays[f"{s}_origin"] = suite.origin.astype(np.int32)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name, array in arrays.items():
            with z.open(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), "w") as f:
                np.lib.format.write_array(f, array, allow_pickle=False)
    atomic_write(path, lambda tmp: tmp.write_bytes(buf.getvalue()))


def read_suites(path: str | Path, game: Game) -> dict[str, Suite]:
    """Read suites written by ``save_suites`` (no pickle). ValueError, one line, on a bad file."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            if int(z["format_version"]) != FORMAT_VERSION or str(z["game"]) != game.name:
                raise ValueError(f"{path}: tactics suites of {str(z['game'])!r} (format {int(z['format_version'])}), "
                                 f"expected {game.name!r} (format {FORMAT_VERSION})")
            return {s: Suite(s, z[f"{s}_boards"],
                             np.unpackbits(z[f"{s}_solutions"], axis=1, count=game.num_cells,
                                           bitorder="little").astype(bool),
                             z[f"{s}_origin"])
                    for s in SUITES}
    except ValueError:
        raise
    except Exception as e:
        raise ValueError(f"{path}: cannot read tactics suites ({type(e).__name__}: {e})") from None


def has_suites(board: str) -> bool:
    """Whether suites ship for ``board``."""
    return board in BOARDS and suite_path(board).is_file()


@cache
def load_suites(board: str) -> dict[str, Suite]:
    """The shipped suites of ``board``; ValueError naming the boards that have them otherwise."""
    if not has_suites(board):
        raise ValueError(f"no tactics suites for board {board!r}; they ship for {' and '.join(BOARDS)}")
    return read_suites(suite_path(board), make_game(board))


# ---------------------------------------------------------------------------------------- measuring
def rule_flags(player: Player) -> dict[str, bool | int]:
    """The move-selection rules of ``player`` and whether each is on, or how deep (``threats``); {} for a
    player without rules."""
    if not has_rules(player):
        return {}
    return asdict(player.rules)


def suite_moves(player: Player, game: Game, suites: dict[str, Suite], seed: int = 0) -> dict[str, np.ndarray]:
    """Per suite, (N,) int64: ``player``'s move in each position. One ``act_batch`` call."""
    boards = np.concatenate([suites[s].boards for s in SUITES])
    games = BatchedGames(game, len(boards))
    games.board[:] = boards
    games.to_play[:] = np.concatenate([suites[s].to_play for s in SUITES])
    games.num_moves[:] = (boards != 0).sum(1)
    actions = np.asarray(player.act_batch(games, np.random.default_rng(seed)), dtype=np.int64)
    return dict(zip(SUITES, np.split(actions, np.cumsum([len(suites[s]) for s in SUITES])[:-1]), strict=True))


def solved_by(suite: Suite, actions: np.ndarray) -> np.ndarray:
    """(N,) bool: whether ``actions`` (one per position, -1 or out of range for none) solve ``suite``."""
    ok = (actions >= 0) & (actions < suite.solutions.shape[1])
    return suite.solutions[np.arange(len(suite)), np.where(ok, actions, 0)] & ok


def solved(player: Player, game: Game, suites: dict[str, Suite], seed: int = 0) -> dict[str, np.ndarray]:
    """Per suite, (N,) bool: whether ``player``'s move solves each position. One ``act_batch`` call."""
    return {s: solved_by(suites[s], a) for s, a in suite_moves(player, game, suites, seed).items()}


def results_of(hits: dict[str, np.ndarray]) -> dict[str, dict]:
    """``{suite: {"positions": N, "solved": K, "rate": K / N}}`` from ``solved``'s hits."""
    out = {}
    for s, hit in hits.items():
        n, k = len(hit), int(hit.sum())
        out[s] = {"positions": n, "solved": k, "rate": k / n if n else 0.0}
    return out


def suite_results(player: Player, game: Game, seed: int = 0) -> dict[str, dict]:
    """``{suite: {"positions": N, "solved": K, "rate": K / N}}`` on the shipped suites of ``game``."""
    return results_of(solved(player, game, load_suites(game.name), seed))


def tactics_rates(player: Player, game: Game) -> dict[str, float]:
    """Solve rate per suite of ``player`` without its rules (the training curves); {} without suites."""
    if not has_suites(game.name):
        return {}
    return {s: r["rate"] for s, r in suite_results(without_rules(player), game).items()}
