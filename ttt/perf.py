"""Throughput benchmarks: ``python -m ttt.perf [device=auto|cpu|cuda] [sections=engine,search,train] [seconds=S]
[engine_batch=B] [num_envs=1,256,...] [profile=true] [output=FILE.json]``.

Prints plies per second of batched random play on every board (section ``engine``: ``engine_batch``
games side by side, finished games restarted; 4,096 on the CPU, 1,048,576 on a GPU), milliseconds
per move of the alphabeta player at depths 1-3 on the 4x4x4 boards (section ``search``, always on the
CPU) and training episodes per second of the structured network on 4x4x4 against random (section
``train``) for each ``num_envs`` (default 1 and 256 on the CPU; 1, 256, 4,096 and 65,536 on a GPU).
``device`` (default ``auto``) is where the games and networks live (``ttt.device``); on a GPU the
first lines name it. ``profile=true`` then runs each measurement once more, shorter, under a
profiler and prints where the time goes: the top torch operators and kernels (``torch.profiler``)
on a GPU, the top functions (``cProfile``) on the CPU.

With ``output=FILE.json`` it also writes ``{"device": "cpu"|"cuda", "gpu": name or null,
"engine_batch": B, "engine": {board: plies_per_sec}, "search": {"BOARD depth D": ms_per_move},
"train": {"num_envs_N": episodes_per_sec}}`` (the sections that ran).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from ttt.device import DeviceError, array_device, resolve_device
from ttt.games import BOARDS, BatchedGames, make_game, random_legal_actions
from ttt.games.arrays import arrays_for

ENGINE_BATCH = {"cpu": 4096, "cuda": 1 << 20}
NUM_ENVS = {"cpu": (1, 256), "cuda": (1, 256, 4096, 65536)}


def engine_plies_per_sec(board: str, batch_size: int = 4096, seconds: float = 2.0, seed: int = 0,
                         device: str | None = None) -> float:
    """Plies per second of uniformly random play in ``batch_size`` games, finished games restarted.

    ``device``: None for numpy games on the host, else a torch device (``"cuda"``, or ``"cpu"`` for
    torch tensors on the CPU, which the tests use). On a device the plies are counted there and the
    host never waits for the GPU inside the loop.
    """
    game = make_game(board)
    games = BatchedGames(game, batch_size, device)
    xp = arrays_for(device)
    rng = xp.generator(seed)

    def ply() -> object:
        live = (~games.done).sum()
        games.play(random_legal_actions(games.legal_mask(), rng), check=not xp.is_torch)
        if xp.is_torch or games.done.any():
            games.reset(games.done)
        return live

    for _ in range(3):  # warm-up: CUDA context, kernels, caches
        ply()
    games.reset()
    xp.synchronize()
    plies = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        plies += ply()
    plies = int(plies)  # waits for the device
    xp.synchronize()
    return plies / (time.perf_counter() - t0)


def report(section: str, key: str, value: float) -> None:
    """One line of results: section, what was measured, the figure and its unit."""
    unit, fmt = UNITS[section]
    print(f"{section:7s} {key:22s} {value:14{fmt}} {unit}", flush=True)


def engine_section(seconds: float, device: str, batch: int, profile: bool = False) -> dict[str, float]:
    out, short = {}, min(seconds, 1.0)
    for board in BOARDS:
        out[board] = engine_plies_per_sec(board, batch, seconds, device=array_device(device))
        report("engine", board, out[board])
        if profile:
            print_profile(f"engine {board}", device,
                          lambda b=board: engine_plies_per_sec(b, batch, short, device=array_device(device)))
    return out


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
    out = {}
    for board in ("4x4x4", "4x4x4_gravity"):
        for depth in (1, 2, 3):
            key = f"{board} depth {depth}"
            out[key] = search_ms_per_move(board, depth, seconds=seconds / 3)
            report("search", key, out[key])
    return out


def train_section(seconds: float, device: str, num_envs: tuple[int, ...], profile: bool = False) -> dict[str, float]:
    from ttt.agents.dqn import training_throughput

    out = {}
    for n in num_envs:
        out[f"num_envs_{n}"] = training_throughput(num_envs=n, seconds=seconds, device=device)
        report("train", f"num_envs_{n}", out[f"num_envs_{n}"])
        if profile:
            print_profile(f"train num_envs={n}", device,
                          lambda n=n: training_throughput(num_envs=n, seconds=min(seconds, 2.0), device=device))
    return out


def print_profile(title: str, device: str, work, rows: int = 12) -> None:
    """Run ``work()`` under a profiler and print the ``rows`` costliest entries: functions by their own
    time (cProfile) on the CPU's numpy path, torch operators and kernels by their own time elsewhere."""
    if device == "cpu":
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.runcall(work)
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(rows)
        body = text.getvalue().strip().splitlines()
        start = next((i for i, line in enumerate(body) if line.lstrip().startswith("ncalls")), 0)
        print(f"--- profile: {title} (cProfile, by own time)\n" + "\n".join(body[start:]), flush=True)
        return
    import torch
    from torch.profiler import ProfilerActivity, profile

    gpu = torch.cuda.is_available()
    with profile(activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if gpu else [])]) as prof:
        work()
    key = "self_device_time_total" if gpu else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=key, row_limit=rows)
    print(f"--- profile: {title} (torch.profiler, by own {'GPU' if gpu else 'CPU'} time)\n{table}", flush=True)


UNITS = {"engine": ("plies/s", ",.0f"), "search": ("ms/move", ",.1f"), "train": ("episodes/s", ",.0f")}
SECTIONS = tuple(UNITS)


def fail(message: str) -> None:
    """A bad argument or an unavailable device: one line on stderr, exit status 2."""
    print(f"ttt.perf: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    opts = {"output": None, "sections": ",".join(SECTIONS), "seconds": "3", "device": "auto",
            "engine_batch": None, "num_envs": None, "profile": "false"}
    for arg in argv:
        if arg in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        key, sep, value = arg.partition("=")
        if not sep or key not in opts:
            fail(f"unknown argument {arg!r}; use {', '.join(f'{k}=...' for k in opts)}")
        opts[key] = value
    sections = opts["sections"].split(",")
    for name in sections:
        if name not in SECTIONS:
            fail(f"unknown section {name!r}; choose from {', '.join(SECTIONS)}")
    if opts["profile"] not in ("true", "false"):
        fail(f"profile={opts['profile']}: choose true or false")
    try:
        device = resolve_device(opts["device"])
        batch = int(opts["engine_batch"] or ENGINE_BATCH[device])
        num_envs = tuple(int(x) for x in opts["num_envs"].split(",")) if opts["num_envs"] else NUM_ENVS[device]
        seconds = float(opts["seconds"])
    except (DeviceError, ValueError) as e:
        fail(str(e))
    profile = opts["profile"] == "true"
    import torch

    torch.set_num_threads(1)
    gpu = torch.cuda.get_device_name(torch.device(device)) if device != "cpu" else None
    out: dict = {"device": device, "gpu": gpu}
    print(f"device  {device}" + (f" ({gpu}, torch {torch.__version__}, CUDA {torch.version.cuda})" if gpu else ""),
          flush=True)
    for name in sections:
        if name == "engine":
            out["engine_batch"] = batch
            print(f"engine  {batch:,} games side by side", flush=True)
            out[name] = engine_section(seconds, device, batch, profile)
        elif name == "search":
            out[name] = search_section(seconds)
        else:
            out[name] = train_section(seconds, device, num_envs, profile)
    if opts["output"]:
        with open(opts["output"], "w") as f:
            json.dump(out, f, indent=2)
    return out


if __name__ == "__main__":
    main()
