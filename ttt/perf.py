"""Throughput benchmarks: ``python -m ttt.perf [device=auto|cpu|cuda]
[sections=engine,search,train,online,mcts_vs_openspiel,recipe] [seconds=S] [engine_batch=B]
[num_envs=1,256,...] [simulations=N] [profile=true] [output=FILE.json]``.

Prints plies per second of batched random play on every board (section ``engine``: ``engine_batch``
games side by side, finished games restarted; 4,096 on the CPU, 1,048,576 on a GPU), milliseconds
per move of the alphabeta player at depths 1-3 on the 4x4x4 boards (section ``search``, always on the
CPU) and training episodes per second of the structured network on 4x4x4 against random (section
``train``) for each ``num_envs`` (default 1 and 256 on the CPU; 1, 256, 4,096 and 65,536 on a GPU).
Section ``online`` measures the paper's online protocol (Score Four, deep structured network, SGD,
self-play, one game at a time): total training games per second of K = 1, 4 and 16 runs side by side
in one process (``seeds=K``, the run axis of the one trainer; K = 1 is the single run).
Section ``mcts_vs_openspiel`` (always on the CPU) times the ``mcts`` player (with its defaults, and as
plain UCT) beside OpenSpiel's pure-Python ``MCTSBot`` (random rollouts, ``solve=False``) at the same
number of ``simulations`` (default 1,000) on the same 3x3, 4x4 and Qubic positions, in milliseconds
per move; OpenSpiel's side is skipped, with a note, when ``open_spiel`` is not installed.
Section ``recipe`` measures ``dqn_444``'s recipe (``configs/experiment/dqn_444.yaml`` composed, every
option it sets: the curriculum, exact losses, rule labels with fork defence, random-play labels, rank
pairs, symmetric images) in training games per second at each ``num_envs`` (default 128 and 1,024 on
the CPU, 4,096 and 65,536 on a GPU), timed after every game has ended once on average.
``device`` (default ``auto``) is where the games and networks live (``ttt.device``); the first line
names it (and the GPU). ``profile=true`` then runs each measurement once more, shorter, under a
profiler and prints where the time goes: the top torch operators and kernels (``torch.profiler``)
on a GPU, the top functions (``cProfile``) on the CPU. ``seconds=S`` is the measuring time of each
figure (S > 0).

With ``output=FILE.json`` it also writes ``{"device": "cpu"|"cuda", "gpu": name or null,
"engine_batch": B, "engine": {board: plies_per_sec}, "search": {"BOARD depth D": ms_per_move},
"train": {"num_envs_N": episodes_per_sec}, "online": {"runs_K": games_per_sec},
"mcts_vs_openspiel": {"BOARD mcts": ms_per_move, "BOARD mcts_plain": ..., "BOARD openspiel": ...},
"recipe": {"num_envs_N": games_per_sec}}`` (the sections that ran); the file is checked for writability
before the measurements, and written to a fallback file (named on stderr) if it still fails. A bad
argument, or ``device=cuda`` without a GPU, prints one line and exits with code 2.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from ttt.cli import check_writable_file, plain_help, run_cli, write_json
from ttt.device import DeviceError, array_device, resolve_device
from ttt.games import BOARDS, BatchedGames, make_game, random_legal_actions
from ttt.games.arrays import arrays_for
from ttt.games.boards import native_games

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


@dataclass(frozen=True)
class Settings:
    """What the sections measure besides ``seconds``: where, how many games, and whether to profile."""

    device: str = "cpu"  # resolved: cpu or cuda
    engine_batch: int = 4096
    num_envs: tuple[int, ...] = (1, 256)
    profile: bool = False
    simulations: int = 1000  # per move, in mcts_vs_openspiel
    recipe_envs: tuple[int, ...] = (128, 1024)  # num_envs of the recipe section


def engine_section(seconds: float, settings: Settings) -> dict[str, float]:
    out, short = {}, min(seconds, 1.0)
    device, batch = settings.device, settings.engine_batch
    for board in BOARDS:
        out[board] = engine_plies_per_sec(board, batch, seconds, device=array_device(device))
        report("engine", board, out[board])
        if settings.profile:
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


def search_section(seconds: float, settings: Settings) -> dict[str, float]:
    out = {}
    for board in ("4x4x4", "4x4x4_gravity"):
        for depth in (1, 2, 3):
            key = f"{board} depth {depth}"
            out[key] = search_ms_per_move(board, depth, seconds=seconds / 3)
            report("search", key, out[key])
    return out


# the boards OpenSpiel has, by the name of its game (ttt.games.boards); its action numbers are the cell numbers here
OPENSPIEL_GAMES = native_games()
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


def mcts_vs_openspiel_section(seconds: float, settings: Settings) -> dict[str, float]:
    out: dict[str, float] = {}
    for board in OPENSPIEL_GAMES:
        for key, value in mcts_vs_openspiel(board, settings.simulations, seconds).items():
            out[key] = value
            report("mcts_vs_openspiel", key, value)
    return out


def training_throughput(num_envs: int, seconds: float, board: str = "4x4x4", seed: int = 0,
                        device: str = "cpu") -> float:
    """Training episodes per second of the structured deep network (``dqn``'s ``Trainer``) against random.

    On a GPU the first plies (CUDA start-up, kernel selection) are played before the clock starts.
    """
    import torch
    from omegaconf import OmegaConf

    from ttt.agents.dqn import Config, Trainer

    network = OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [32], "bias": False})
    settings = Config(opponent="random", opponent_after="random")
    torch.manual_seed(seed)
    xp = arrays_for(array_device(device))
    trainer = Trainer(make_game(board), network, settings, num_envs, xp.generator(seed), device=device)
    if xp.is_torch:
        for _ in range(3):
            trainer.step()
    return _episodes_per_sec(trainer, seconds)


def _episodes_per_sec(trainer, seconds: float) -> float:
    """Episodes per second of ``trainer.step()`` over ``seconds`` (longer if no game has ended by then),
    the device waited for at both ends."""
    xp = trainer.xp
    xp.synchronize()
    start = trainer.episodes
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds or trainer.episodes == start:
        trainer.step()
    xp.synchronize()
    return (trainer.episodes - start) / (time.perf_counter() - t0)


RECIPE = "dqn_444"  # the experiment file of the shipped recipe (configs/experiment/)
RECIPE_NUM_ENVS = {"cpu": (128, 1024), "cuda": (4096, 65536)}


def recipe_config(experiment: str = RECIPE):
    """The composed training config of ``+experiment=<experiment>`` (every option the file sets)."""
    from hydra import compose, initialize
    from hydra.core.global_hydra import GlobalHydra

    from ttt.harness.learners import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize(version_base="1.3", config_path="../configs"):
        cfg = compose("train", overrides=[f"+experiment={experiment}"])
    GlobalHydra.instance().clear()
    return cfg


def recipe_throughput(num_envs: int, seconds: float, device: str = "cpu", seed: int = 0,
                      experiment: str = RECIPE) -> float:
    """Training games per second of the recipe ``experiment`` (its network, curriculum, rules, labels and
    rank pairs) with ``num_envs`` games side by side, from the start of its curriculum.

    Before the clock starts every game has ended once on average (``num_envs`` episodes): the games
    no longer end in step, and on a GPU its start-up is behind.
    """
    import torch

    from ttt.agents.dqn import Trainer

    cfg = recipe_config(experiment)
    torch.manual_seed(seed)
    xp = arrays_for(array_device(device))
    trainer = Trainer(make_game(cfg.game.name), cfg.network, cfg.agent, num_envs, xp.generator(seed),
                      device=device)
    while trainer.episodes < num_envs:
        trainer.step()
    return _episodes_per_sec(trainer, seconds)


def recipe_section(seconds: float, settings: Settings) -> dict[str, float]:
    """``dqn_444``'s training games per second at each of ``settings.recipe_envs``."""
    out, device = {}, settings.device
    for n in settings.recipe_envs:
        out[f"num_envs_{n}"] = recipe_throughput(n, seconds, device)
        report("recipe", f"num_envs_{n}", out[f"num_envs_{n}"])
        if settings.profile:
            print_profile(f"recipe num_envs={n}", device,
                          lambda n=n: recipe_throughput(n, min(seconds, 2.0), device))
    return out


def train_section(seconds: float, settings: Settings) -> dict[str, float]:
    out, device = {}, settings.device
    for n in settings.num_envs:
        out[f"num_envs_{n}"] = training_throughput(num_envs=n, seconds=seconds, device=device)
        report("train", f"num_envs_{n}", out[f"num_envs_{n}"])
        if settings.profile:
            print_profile(f"train num_envs={n}", device,
                          lambda n=n: training_throughput(num_envs=n, seconds=min(seconds, 2.0), device=device))
    return out


ONLINE_RUNS = (1, 4, 16)
ONLINE_NETWORK = {"kind": "structured", "detectors": 4, "hidden": [32], "bias": False}
ONLINE_AGENT = dict(optimizer="sgd", lr=0.005, gamma=1.0, loss="mse", epsilon=0.1)


def online_throughput(runs: int, seconds: float, board: str = "4x4x4_gravity", opponent: str = "self_play",
                      device: str = "cpu") -> float:
    """Training games per second, all runs together, of ``runs`` runs side by side (the run axis of one
    ``Trainer``, ``seeds=runs``) of the paper's online protocol (deep structured network without
    biases, SGD 0.005, gamma 1, squared error, epsilon 0.1, one game at a time per run)."""
    from omegaconf import OmegaConf

    from ttt.agents.dqn import Config, Trainer

    network = OmegaConf.create(ONLINE_NETWORK)
    agent = Config(**ONLINE_AGENT, opponent=opponent, opponent_after=opponent)
    game = make_game(board)
    xp = arrays_for(array_device(device))
    trainer = Trainer(game, network, agent, 1, [xp.generator(s) for s in range(runs)], device=device,
                      seeds=list(range(runs)))  # each network seeded as its run alone
    for _ in range(3):
        trainer.step()
    start, t0 = trainer.episodes, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        trainer.step()
    xp.synchronize()
    return (trainer.episodes - start) / (time.perf_counter() - t0)


def online_section(seconds: float, settings: Settings) -> dict[str, float]:
    """The paper's online protocol (Score Four, deep structured network, SGD, self-play, one game at a
    time per run): total training games per second of K runs side by side in one process (``seeds=K``;
    K = 1 is the single run), on the section's device."""
    out, device = {}, settings.device
    for k in ONLINE_RUNS:
        out[f"runs_{k}"] = online_throughput(k, seconds, device=device)
        report("online", f"runs_{k}", out[f"runs_{k}"])
        if settings.profile:
            print_profile(f"online runs={k}", device, lambda k=k: online_throughput(k, min(seconds, 2.0),
                                                                                   device=device))
    print(f"online  16 runs side by side: {out['runs_16'] / out['runs_1']:.1f} x the games/s of one", flush=True)
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
    key = "self_device_time_total" if gpu else "self_cpu_time_total"
    try:
        with profile(activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if gpu else [])]) as prof:
            work()
        table = prof.key_averages().table(sort_by=key, row_limit=rows)
    except Exception as e:  # a profiler the machine does not allow must not cost the other measurements
        print(f"--- profile: {title}: the profiler failed ({type(e).__name__}: {e})", flush=True)
        return
    print(f"--- profile: {title} (torch.profiler, by own {'GPU' if gpu else 'CPU'} time)\n{table}", flush=True)


SECTIONS = {"engine": engine_section, "search": search_section, "train": train_section, "online": online_section,
            "mcts_vs_openspiel": mcts_vs_openspiel_section, "recipe": recipe_section}
UNITS = {"engine": ("plies/s", ",.0f"), "search": ("ms/move", ",.1f"), "train": ("episodes/s", ",.0f"),
         "online": ("games/s", ",.1f"), "mcts_vs_openspiel": ("ms/move", ",.1f"), "recipe": ("games/s", ",.1f")}


def parse_args(argv: list[str]) -> tuple[list[str], float, str | None, Settings]:
    """(sections, seconds, output, settings) from ``key=value`` arguments; ValueError (one line) for a bad one."""
    opts = {"output": None, "sections": ",".join(SECTIONS), "seconds": "3", "device": "auto",
            "engine_batch": None, "num_envs": None, "profile": "false", "simulations": "1000"}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in opts:
            raise ValueError(f"ttt.perf: unknown argument {arg!r}; use {', '.join(f'{k}=...' for k in opts)}")
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
    if opts["profile"] not in ("true", "false"):
        raise ValueError(f"ttt.perf: profile={opts['profile']}: choose true or false")
    try:
        device = resolve_device(opts["device"])
    except DeviceError as e:
        raise ValueError(f"ttt.perf: {e}") from None
    try:
        batch = int(opts["engine_batch"] or ENGINE_BATCH[device])
        num_envs = tuple(int(x) for x in opts["num_envs"].split(",")) if opts["num_envs"] else NUM_ENVS[device]
        recipe_envs = num_envs if opts["num_envs"] else RECIPE_NUM_ENVS[device]
    except ValueError:
        raise ValueError(f"ttt.perf: engine_batch={opts['engine_batch']}, num_envs={opts['num_envs']}: "
                         f"need whole numbers (num_envs: a comma-separated list)") from None
    if batch < 1 or min(num_envs) < 1:
        raise ValueError("ttt.perf: engine_batch and num_envs must be >= 1")
    if not opts["simulations"].isdigit() or int(opts["simulations"]) < 1:
        raise ValueError(f"ttt.perf: simulations={opts['simulations']}: must be a whole number >= 1")
    if opts["output"]:
        check_writable_file(opts["output"], "ttt.perf: output")
    return sections, seconds, opts["output"], Settings(device, batch, num_envs, opts["profile"] == "true",
                                                       int(opts["simulations"]), recipe_envs)


def measure(argv: list[str]) -> dict:
    """Run the sections ``argv`` asks for; print one line per figure; write ``output=`` if given."""
    sections, seconds, output, settings = parse_args(argv)
    import torch

    torch.set_num_threads(1)
    device = settings.device
    gpu = torch.cuda.get_device_name(torch.device(device)) if device != "cpu" else None
    out: dict = {"device": device, "gpu": gpu}
    print(f"device  {device}" + (f" ({gpu}, torch {torch.__version__}, CUDA {torch.version.cuda})" if gpu else ""),
          flush=True)
    for name in sections:
        if name == "engine":
            out["engine_batch"] = settings.engine_batch
            print(f"engine  {settings.engine_batch:,} games side by side", flush=True)
        out[name] = SECTIONS[name](seconds, settings)
    if output:
        write_json(output, out, "measurements")
    return out


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in argv):
        print(plain_help(__doc__), end="")
        sys.exit(0)
    return run_cli(measure, argv)


if __name__ == "__main__":
    main()
