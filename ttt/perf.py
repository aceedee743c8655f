"""Throughput benchmarks: ``python -m ttt.perf [output=FILE.json] [sections=...] [seconds=S] [simulations=N]``.

Sections (all by default):

* ``engine``: plies per second of batched random play on every board;
* ``search``: milliseconds per move of the alphabeta player at depths 1-3 on the 4x4x4 boards;
* ``train``: training episodes per second of the structured network on 4x4x4 against random;
* ``mcts_vs_openspiel``: milliseconds per move of the ``mcts`` player (with its defaults, and as
  plain UCT) beside OpenSpiel's pure-Python ``MCTSBot`` (random rollouts, ``solve=False``) at the
  same number of simulations (default 1,000) on the same 3x3, 4x4 and Qubic positions. OpenSpiel's
  side is skipped, with a note, when ``open_spiel`` is not installed.

With ``output=FILE.json`` it also writes ``{"engine": {board: plies_per_sec}, "search": {"BOARD
depth D": ms_per_move}, "train": {...}, "mcts_vs_openspiel": {"BOARD mcts": ms_per_move, "BOARD
mcts_plain": ..., "BOARD openspiel": ...}}``.

The file is checked for writability before the measurements, and written to a fallback file (named
on stderr) if it still fails. ``seconds=S`` is the measuring time of each figure (S > 0). A bad
argument prints one line and exits with code 2.
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


# the boards OpenSpiel has, by the name of its game; its action numbers are the cell numbers here
OPENSPIEL_GAMES = {"3x3": "tic_tac_toe", "4x4": "mnk(m=4,n=4,k=4)", "4x4x4": "gomoku(size=4,dims=3,connect=4)"}
OPENSPIEL_UCT_C = 2.0  # the exploration constant of OpenSpiel's own MCTS examples


def quiet_positions(board: str, plies: tuple[int, ...] = (0, 2, 4), seed: int = 0) -> list[list[int]]:
    """Move sequences of ``plies`` random moves after which neither side can complete a line at once
    (so no search can answer without simulating)."""
    from ttt.games.bitboard import bitboards

    game, bits = make_game(board), bitboards(make_game(board))
    rng = np.random.default_rng(seed)
    out = []
    for n in plies:
        while True:
            state, moves = game.initial_state(), []
            for _ in range(n):
                moves.append(int(rng.choice(state.legal_actions())))
                state = state.apply(moves[-1])
            first, second = bits.masks(state.board)
            playable = bits.playable(first, second)
            threats = bits.completing(first, second) | bits.completing(second, first)
            if not state.is_terminal() and not threats & playable:
                out.append(moves)
                break
    return out


def mcts_vs_openspiel(board: str, simulations: int = 1000, seconds: float = 2.0, seed: int = 0) -> dict[str, float]:
    """Mean milliseconds per move of ``mcts`` (defaults), of ``mcts`` as plain UCT
    (``decisive=False``) and, when ``open_spiel`` is installed, of OpenSpiel's ``MCTSBot`` (one random
    rollout per leaf, ``solve=False``) at ``simulations`` on the ``quiet_positions`` of ``board``. The
    bots alternate move by move, in rounds over the positions, until each has searched ``seconds``."""
    from ttt.players.mcts import MCTSPlayer

    game = make_game(board)
    positions = quiet_positions(board, seed=seed)
    rng = np.random.default_rng(seed)
    ours = MCTSPlayer(game, simulations=simulations)
    plain = MCTSPlayer(game, simulations=simulations, decisive=False)  # like OpenSpiel's: every leaf rolled out
    bots = {"mcts": lambda moves: ours.act(_replay(game, moves), rng),
            "mcts_plain": lambda moves: plain.act(_replay(game, moves), rng)}
    try:
        import pyspiel
        from open_spiel.python.algorithms import mcts as openspiel_mcts
    except ImportError:
        print(f"mcts_vs_openspiel: open_spiel is not installed; {board} measures mcts alone", file=sys.stderr)
    else:
        spiel_game = pyspiel.load_game(OPENSPIEL_GAMES[board])
        random_state = np.random.RandomState(seed)
        evaluator = openspiel_mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=random_state)
        bot = openspiel_mcts.MCTSBot(spiel_game, OPENSPIEL_UCT_C, simulations, evaluator, solve=False,
                                     random_state=random_state)

        def spiel_move(moves: list[int]) -> int:
            state = spiel_game.new_initial_state()
            for m in moves:
                state.apply_action(m)
            assert state.legal_actions() == _replay(game, moves).legal_actions(), "cell numbers differ"
            return bot.step(state)

        bots["openspiel"] = spiel_move
    spent = dict.fromkeys(bots, 0.0)
    moves = dict.fromkeys(bots, 0)
    while min(spent.values()) < seconds or min(moves.values()) < len(positions):
        for position in positions:
            for name, move in bots.items():
                t0 = time.perf_counter()
                move(position)
                spent[name] += time.perf_counter() - t0
                moves[name] += 1
    return {f"{board} {name}": 1000 * spent[name] / moves[name] for name in bots}


def _replay(game, moves: list[int]):
    state = game.initial_state()
    for m in moves:
        state = state.apply(m)
    return state


def mcts_vs_openspiel_section(seconds: float, simulations: int = 1000) -> dict[str, float]:
    out: dict[str, float] = {}
    for board in OPENSPIEL_GAMES:
        out.update(mcts_vs_openspiel(board, simulations, seconds))
    return out


def train_section(seconds: float) -> dict[str, float]:
    from ttt.agents.dqn import training_throughput

    return {f"num_envs_{n}": training_throughput(num_envs=n, seconds=seconds) for n in (1, 256)}


SECTIONS = {"engine": engine_section, "search": search_section, "train": train_section,
            "mcts_vs_openspiel": mcts_vs_openspiel_section}
UNITS = {"engine": ("plies/s", ",.0f"), "search": ("ms/move", ",.1f"), "train": ("episodes/s", ",.0f"),
         "mcts_vs_openspiel": ("ms/move", ",.1f")}


def parse_args(argv: list[str]) -> tuple[list[str], float, str | None, int]:
    """(sections, seconds, output, simulations) from ``key=value`` arguments; ValueError (one line) for a
    bad one."""
    opts = {"output": None, "sections": ",".join(SECTIONS), "seconds": "3", "simulations": "1000"}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in opts:
            raise ValueError(f"ttt.perf: unknown argument {arg!r}; use output=FILE.json, sections=..., seconds=S, "
                             "simulations=N")
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
    if not opts["simulations"].isdigit() or int(opts["simulations"]) < 1:
        raise ValueError(f"ttt.perf: simulations={opts['simulations']}: must be an integer >= 1")
    if opts["output"]:
        check_writable_file(opts["output"], "ttt.perf: output")
    return sections, seconds, opts["output"], int(opts["simulations"])


def measure(argv: list[str]) -> dict:
    """Run the sections ``argv`` asks for; print one line per figure; write ``output=`` if given."""
    sections, seconds, output, simulations = parse_args(argv)
    import torch

    torch.set_num_threads(1)
    out: dict = {}
    width = max(map(len, sections))
    for name in sections:
        if name == "mcts_vs_openspiel":
            out[name] = mcts_vs_openspiel_section(seconds, simulations)
        else:
            out[name] = SECTIONS[name](seconds)
        unit, fmt = UNITS[name]
        for key, value in out[name].items():
            print(f"{name:{width}s} {key:22s} {value:14{fmt}} {unit}", flush=True)
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
