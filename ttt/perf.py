"""Throughput benchmarks: ``python -m ttt.perf [output=FILE.json] [sections=engine,search,train] [seconds=S]``.

Prints plies per second of batched random play on every board (section ``engine``), milliseconds
per move of the alphabeta player at depths 1-3 on the 4x4x4 boards (section ``search``) and
training episodes per second of the structured network on 4x4x4 against random (section ``train``).
With ``output=FILE.json`` it also writes ``{"engine": {board: plies_per_sec},
"search": {"BOARD depth D": ms_per_move}, "train": {...}}``; the file is checked for writability
before the measurements, and written to a fallback file (named on stderr) if it still fails.
``seconds=S`` is the measuring time of each figure (S > 0). A bad argument prints one line and
exits with code 2.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from ttt.cli import check_writable_file, run_cli, write_with_fallback
from ttt.games import BOARDS, BatchedGames, make_game, random_legal_actions


def engine_plies_per_sec(board: str, batch_size: int = 4096, seconds: float = 2.0, seed: int = 0) -> float:
    """Plies per second of uniformly random play in ``batch_size`` games, finished games restarted."""
    game = make_game(board)
    games = BatchedGames(game, batch_size)
    rng = np.random.default_rng(seed)
    plies = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        live = int((~games.done).sum())
        games.step(random_legal_actions(games.legal_mask(), rng))
        plies += live
        if games.done.any():
            games.reset(games.done)
    return plies / (time.perf_counter() - t0)


def engine_section(seconds: float) -> dict[str, float]:
    return {board: engine_plies_per_sec(board, seconds=seconds) for board in BOARDS}


def search_ms_per_move(board: str, depth: int, seconds: float = 2.0, seed: int = 0) -> float:
    """Mean milliseconds per ``AlphaBetaPlayer(depth)`` move over positions 4-20 plies into random games."""
    from ttt.players.search import AlphaBetaPlayer

    game = make_game(board)
    player = AlphaBetaPlayer(game, depth=depth)
    rng = np.random.default_rng(seed)
    moves, spent = 0, 0.0
    while spent < seconds or moves < 3:
        state = game.initial_state()
        for _ in range(rng.integers(4, 21)):
            state = state.apply(int(rng.choice(state.legal_actions())))
            if state.is_terminal():
                state = game.initial_state()
        t0 = time.perf_counter()
        player.act(state, rng)
        spent += time.perf_counter() - t0
        moves += 1
    return 1000 * spent / moves


def search_section(seconds: float) -> dict[str, float]:
    return {f"{board} depth {depth}": search_ms_per_move(board, depth, seconds=seconds / 3)
            for board in ("4x4x4", "4x4x4_gravity") for depth in (1, 2, 3)}


def train_section(seconds: float) -> dict[str, float]:
    from ttt.agents.dqn import training_throughput

    return {f"num_envs_{n}": training_throughput(num_envs=n, seconds=seconds) for n in (1, 256)}


SECTIONS = {"engine": engine_section, "search": search_section, "train": train_section}
UNITS = {"engine": ("plies/s", ",.0f"), "search": ("ms/move", ",.1f"), "train": ("episodes/s", ",.0f")}


def parse_args(argv: list[str]) -> tuple[list[str], float, str | None]:
    """(sections, seconds, output) from ``key=value`` arguments; ValueError (one line) for a bad one."""
    opts = {"output": None, "sections": ",".join(SECTIONS), "seconds": "3"}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in opts:
            raise ValueError(f"ttt.perf: unknown argument {arg!r}; use output=FILE.json, sections=..., seconds=S")
        opts[key] = value
    sections = opts["sections"].split(",")
    for name in sections:
        if name not in SECTIONS:
            raise ValueError(f"ttt.perf: unknown section {name!r}; choose from {', '.join(SECTIONS)}")
    try:
        seconds = float(opts["seconds"])
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"ttt.perf: seconds={opts['seconds']}: the measuring time must be a number > 0")
    if opts["output"]:
        check_writable_file(opts["output"], "ttt.perf: output")
    return sections, seconds, opts["output"]


def measure(argv: list[str]) -> dict:
    """Run the sections ``argv`` asks for; print one line per figure; write ``output=`` if given."""
    sections, seconds, output = parse_args(argv)
    import torch

    torch.set_num_threads(1)
    out: dict = {}
    for name in sections:
        out[name] = SECTIONS[name](seconds)
        unit, fmt = UNITS[name]
        for key, value in out[name].items():
            print(f"{name:7s} {key:22s} {value:14{fmt}} {unit}", flush=True)
    if output:
        text = json.dumps(out, indent=2)
        write_with_fallback(output, lambda p: p.write_text(text), "measurements")
    return out


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in argv):
        print(__doc__)
        sys.exit(0)
    return run_cli(measure, argv)


if __name__ == "__main__":
    main()
