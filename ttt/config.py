"""Structured-config schemas for Hydra, the one way a learner reads its settings, and the checks of
a training config's values.

``configs/train.yaml`` is validated against ``TrainConfig``; each ``configs/agent/<name>.yaml``
extends the ``Config`` dataclass of its learner module (registered as ``agent/<name>_schema``).
A misspelt key or a wrong type fails at composition. What types cannot rule out (ranges, names,
a key added with ``+key=...``) ``check_train_config`` refuses before any work starts, with a
``ConfigError`` of one line naming the key; the learner's own settings and its fit with the board
are checked by the harness (``ttt.harness.learners.check_learner``), which knows the learners.

Every learner turns its ``agent`` section (or the settings stored in its checkpoint) into its
``Config`` with ``agent_settings``; each ``Config`` checks its own values in ``__post_init__`` with
``check_choice`` and ``check_ranges``, so every learner rejects a bad value the same way
(``agent.KEY=VALUE: ...``), wherever the settings come from.
"""

from __future__ import annotations

import difflib
import math
import os
import shutil
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf


@dataclass
class GameConfig:
    name: str = "4x4x4"


@dataclass
class NetworkConfig:
    """A value network. ``structured``: the line-detector layer (``detectors`` per line) then
    ``hidden`` fully connected Tanh layers; ``mlp``: ``hidden`` fully connected Tanh layers.
    ``tie_orbits`` (structured): lines that a symmetry of the board maps onto each other share their
    detectors' weights; ``tie_lines`` (structured): every line shares one block of detectors (a pattern
    learned on a line of any kind is seen on all). ``dense_forward`` (structured): the line layer's
    forward pass as one matrix product with its zero-padded weight (faster on a CPU; the same sums, other rounding).
    ``activation``: the hidden units' function, ``tanh`` or ``sigmoid`` (the value unit stays a Tanh).
    ``playable`` (structured): each line's detectors also see, for each of its cells, whether a move
    can be played there now (an input plane computed from the board; on a gravity board the cells
    whose cell below is filled)."""

    kind: str = "structured"
    detectors: int = 4
    hidden: list[int] = field(default_factory=lambda: [32])
    bias: bool = False
    tie_orbits: bool = False
    tie_lines: bool = False
    dense_forward: bool = False
    activation: str = "tanh"
    playable: bool = False


@dataclass
class TrainConfig:
    """The schema of ``configs/train.yaml`` (``train_schema``) and the one home of each top-level default."""

    game: GameConfig = field(default_factory=GameConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    agent: Any = MISSING
    episodes: int = 20000  # training episodes (games)
    eval_every: int = 2000  # episodes between evaluations (and checkpoints); 0 = only at the end
    eval_games: int = 200  # games per opponent per evaluation, half in each seat
    eval_opponents: list[str] = field(default_factory=lambda: ["random", "benchmark"])  # player specs
    eval_tactics: bool = True  # log eval/tactics/<suite> at every evaluation (boards with suites)
    eval_alone: bool = False  # dqn: also play each evaluation's matches with the network alone (eval_alone/)
    num_envs: int = 1  # games played in parallel while training
    seed: int = 0
    seeds: int = 1  # runs side by side in one process: seeds seed..seed+seeds-1, each in run_dir/seed_<s> (dqn)
    resume: bool = False  # continue from the checkpoint in the run directory
    overwrite: bool = False  # start over in a run directory that holds a checkpoint (deletes it)
    checkpoint_every: int = 0  # episodes between checkpoints besides those at evaluations; 0 = none
    checkpoint_minutes: float = 5.0  # also a checkpoint after this many minutes without one; 0 = never
    log_every: int = 0  # episodes between train/* scalars and progress lines; 0 = a tenth of eval_every (or of the run)
    progress: bool = True  # print a progress line while training
    threads: int = 1  # torch intra-op threads
    device: str = "auto"  # auto | cpu | cuda: where games, networks and batched opponents live (ttt.device)
    run_dir: str | None = None  # the run directory of a single run; else Hydra's output directory


class ConfigError(ValueError):
    """A config value the run cannot use; the message is one line naming the key."""


@dataclass(frozen=True)
class Range:
    """The values a numeric setting may take: ``low <= x <= high`` (``low < x`` when ``low_open``)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False

    def __contains__(self, x: float) -> bool:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or math.isnan(x):
            return False
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            return False
        return self.high is None or x <= self.high

    def __str__(self) -> str:
        def text(x: float) -> str:  # integers exactly (a seed's bound is 4294967295, not 4.29497e+09)
            return str(int(x)) if float(x).is_integer() else f"{x:g}"

        if self.high is None:
            return f"{'>' if self.low_open else '>='} {text(self.low)}"
        return f"in {'(' if self.low_open else '['}{text(self.low)}, {text(self.high)}]"


UNIT = Range(0, 1)  # probabilities, discounts, shares
POSITIVE = Range(0, low_open=True)
NON_NEGATIVE = Range(0)
AT_LEAST_ONE = Range(1)

SEEDS = Range(0, 2**32 - 1)  # what numpy's and torch's seeding take
# more torch threads than 4 per core only slow a run down (10,000 threads: 1 game/s)
THREADS = Range(1, 4 * (os.cpu_count() or 1))

TOP_LEVEL_RANGES = {"episodes": AT_LEAST_ONE, "eval_every": NON_NEGATIVE, "eval_games": AT_LEAST_ONE,
                    "num_envs": AT_LEAST_ONE, "seed": SEEDS, "seeds": AT_LEAST_ONE, "threads": THREADS,
                    "checkpoint_every": NON_NEGATIVE, "checkpoint_minutes": NON_NEGATIVE,
                    "log_every": NON_NEGATIVE}


def check_seed_and_threads(cfg: Any) -> None:
    """``seed`` and ``threads`` of an entry point's config within ``SEEDS`` and ``THREADS`` (ConfigError)."""
    check_ranges("", cfg, {"seed": SEEDS, "threads": THREADS})


def check_ranges(prefix: str, settings: Any, ranges: dict[str, Range]) -> None:
    """Raise ConfigError naming ``<prefix><key>`` for the first setting outside its range."""
    for key, allowed in ranges.items():
        value = settings[key] if isinstance(settings, dict) else getattr(settings, key)
        if value not in allowed:
            raise ConfigError(f"{prefix}{key}={value}: must be {allowed}")


def check_choice(prefix: str, settings: Any, key: str, choices: tuple) -> None:
    """Raise ConfigError naming ``<prefix><key>`` when its value is not one of ``choices``."""
    value = settings[key] if isinstance(settings, dict) else getattr(settings, key)
    if value not in choices:
        raise ConfigError(f"{prefix}{key}={value!r}: choose one of {', '.join(map(str, choices))}")


T = TypeVar("T")


def agent_settings(agent: Any, schema: type[T]) -> T:
    """``agent`` (a DictConfig, a plain dict such as a checkpoint's, or already a ``schema``) as the
    learner's ``schema`` dataclass, whose ``__post_init__`` checks the values (ConfigError naming the
    key). A key that is not a setting of the learner is a ConfigError too.

    The loops read the plain dataclass: attribute access on a DictConfig costs microseconds."""
    if isinstance(agent, schema):
        return agent
    values = OmegaConf.to_container(agent, resolve=True) if OmegaConf.is_config(agent) else dict(agent)
    upgrade = getattr(schema, "upgrade", None)  # a learner's older configs, as its schema reads them now
    values = upgrade(values) if upgrade is not None else values
    check_known_keys("agent.", values, schema)
    return schema(**values)


def check_known_keys(prefix: str, node: Any, schema: type) -> None:
    """Raise ConfigError naming ``<prefix><key>`` (and the nearest known key) for a key of ``node``
    that is not a field of ``schema``."""
    known = [f.name for f in fields(schema)]
    for key in node:
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {prefix}{near[0]}?)" if near else f"; known keys: {', '.join(known)}"
            raise ConfigError(f"unknown key {prefix}{key}{hint}")


def check_train_config(cfg: Any) -> None:
    """Refuse, before any work starts, a training config whose values the schemas know the run cannot use.

    Checks: no key outside the schemas (``+episods=1`` is a typo, not a setting), numeric ranges,
    the board name, the network, ``resume`` and ``overwrite`` not both. Raises ConfigError (one line
    naming the key). The learner's settings and ``eval_alone`` (``ttt.harness.learners.check_learner``)
    and the evaluation opponents are checked by
    ``ttt.harness.training.Run``, which knows the learners and builds the opponents.
    """
    from ttt.games import BOARDS

    check_known_keys("", cfg, TrainConfig)
    check_ranges("", cfg, TOP_LEVEL_RANGES)
    if int(cfg.seed) + int(cfg.seeds) - 1 > SEEDS.high:
        raise ConfigError(f"seed={cfg.seed} seeds={cfg.seeds}: the last seed, {int(cfg.seed) + int(cfg.seeds) - 1}, "
                          f"must be <= {int(SEEDS.high)}")
    if cfg.run_dir is not None and not str(cfg.run_dir).strip():
        raise ConfigError("run_dir='' names no folder; give a folder, or leave run_dir out for Hydra's")
    if cfg.resume and cfg.overwrite:
        raise ConfigError("resume=true and overwrite=true: choose one (continue the run, or start it over)")
    check_known_keys("game.", cfg.game, GameConfig)
    if cfg.game.name not in BOARDS:
        raise ConfigError(f"game.name={cfg.game.name!r}: choose one of {', '.join(BOARDS)}")
    check_known_keys("network.", cfg.network, NetworkConfig)
    check_choice("network.", cfg.network, "kind", ("structured", "mlp"))
    check_ranges("network.", cfg.network, {"detectors": AT_LEAST_ONE})
    for i, width in enumerate(cfg.network.hidden):
        if width not in AT_LEAST_ONE:
            raise ConfigError(f"network.hidden[{i}]={width}: layer widths must be >= 1")


# bytes per value of one afterstate passing through the network (float32). Measured: the peak memory
# of 20 dqn_444 training steps was 152 MB above start-up with 256 games side by side and 329 MB with
# 2,048, about 104 KB a game; this estimate says 103 KB (64 afterstates x 401 units x 4 bytes)
BYTES_PER_UNIT = 4
# what a run needs besides its games: networks, optimiser state, evaluation opponents, logs. Measured: 17
# dqn_444 runs side by side (num_envs=1) peaked 20.7 MB above one run, 1.3 MB a run
RUN_BYTES = 2 * 2**20


def afterstate_bytes(game: Any, network: Any) -> int:
    """About the memory one game's legal afterstates need on their way through ``network`` (its settings:
    ``kind``, ``hidden``, ``detectors``) at a ply: every cell's afterstate through every unit (board
    cells, line detectors, hidden units), ``BYTES_PER_UNIT`` each."""
    units = game.num_cells + sum(int(w) for w in network["hidden"]) + 1
    if network["kind"] == "structured":
        units += len(game.lines) * int(network.get("detectors", 4))
    return game.num_cells * units * BYTES_PER_UNIT


def training_bytes(cfg: Any, game: Any) -> int:
    """About the memory the ``num_envs`` games of a batched learner need side by side (of every one of
    ``seeds`` runs): every legal afterstate of every game passes through the network at each ply
    (``afterstate_bytes``); with ``seeds`` > 1 also ``RUN_BYTES`` a run."""
    runs = int(cfg.get("seeds", 1))
    own = runs * RUN_BYTES if runs > 1 else 0
    return int(cfg.num_envs) * runs * afterstate_bytes(game, cfg.network) + own


# the memory of a game played in a batch, a cell of its board: measured, random against random peaked 57 MB
# above start-up for 100,000 4x4x4 games side by side (9 bytes a cell), 27 MB for 200,000 3x3 games (16)
GAME_BYTES_PER_CELL = 16


def match_bytes(game: Any, networks: list[Any], games: int) -> int:
    """About the memory ``ttt.evaluation.evaluate.play_match`` needs for ``games`` games between players with
    ``networks`` (the settings of those that have one): the games of one seat, the larger half, are
    played side by side, each with its board and its legal afterstates through the larger network."""
    return (games + 1) // 2 * (GAME_BYTES_PER_CELL * game.num_cells
                               + max((afterstate_bytes(game, n) for n in networks), default=0))


def available_bytes(device: str = "cpu") -> int | None:
    """The memory this machine can still give a run: ``MemAvailable`` of ``/proc/meminfo`` (else
    free pages, ``os.sysconf``), or the GPU's free memory for ``cuda``; None where unknown."""
    if device == "cuda":
        import torch

        return int(torch.cuda.mem_get_info()[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(cfg: Any, game: Any, device: str = "cpu") -> None:
    """Refuse (ConfigError, one line) ``num_envs`` games whose estimated memory (``training_bytes``)
    exceeds what the machine has available, before any work starts."""
    n, runs = int(cfg.num_envs), int(cfg.get("seeds", 1))
    if runs > 1:
        check_fits(training_bytes(cfg, game), f"seeds={runs} runs of num_envs={n} {game.name} games side by side",
                   "seeds or num_envs", device, f" ({RUN_BYTES // 2**20} MiB a run besides its games)")
    else:
        check_fits(training_bytes(cfg, game), f"num_envs={n}: {game.name} games side by side", "num_envs", device)


def check_fits(need: int, what: str, fewer: str, device: str = "cpu", aside: str = "") -> None:
    """Refuse (ConfigError, one line) work that needs about ``need`` bytes when the machine (``cuda``:
    the GPU) has less available, before it starts: "``what`` need about N GiB``aside``, more than ...;
    choose fewer ``fewer``"."""
    have = available_bytes(device)
    if have is not None and need > have:
        where = "the GPU has free" if device == "cuda" else "this machine has available"
        raise ConfigError(f"{what} need about {need / 2**30:,.1f} GiB{aside}, more than the {have / 2**30:,.1f} GiB "
                          f"{where}; choose fewer {fewer}")


def register_schemas(agent_schemas: dict[str, type]) -> None:
    """Store the schemas in Hydra's ConfigStore (idempotent): the training config's, and each
    learner's ``Config`` as ``agent/<name>_schema`` (``agent_schemas``: name -> dataclass)."""
    global _registered
    if _registered:
        return
    if not OmegaConf.has_resolver("ttt.first_set"):
        # ${ttt.first_set:a,b}: a unless it is null, else b (Hydra's run dir follows run_dir when set)
        OmegaConf.register_new_resolver("ttt.first_set", lambda *xs: next((x for x in xs if x is not None), None))
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    cs.store(group="network", name="network_schema", node=NetworkConfig)
    cs.store(group="game", name="game_schema", node=GameConfig)
    for name, schema in agent_schemas.items():
        cs.store(group="agent", name=f"{name}_schema", node=schema)
    _registered = True


_registered = False


# ------------------------------------------------------------------------------------ runs side by side
FILES_PER_RUN = 2  # what a run keeps open while it trains: train.log and its TensorBoard events
SPARE_FILES = 64  # the process's own: the interpreter, torch's libraries, the terminal
RUN_DISK_BYTES = 2**20  # a run folder: its checkpoint (dqn_444, num_envs=1: 0.25 MB) and its logs


def check_runs_side_by_side(seeds: int, run_dir: Path) -> None:
    """Refuse (ConfigError, one line) ``seeds`` runs side by side that this process cannot hold open
    (``FILES_PER_RUN`` each, against ``ulimit -n``) or whose folders the disk under ``run_dir`` cannot
    hold (``RUN_DISK_BYTES`` each), before any folder is made. Their memory is ``check_memory``'s."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    need = seeds * FILES_PER_RUN + SPARE_FILES
    if limit != resource.RLIM_INFINITY and need > limit:
        raise ConfigError(f"seeds={seeds}: each run keeps {FILES_PER_RUN} files open (train.log and its TensorBoard "
                          f"events), {need:,} with this process's own, more than the {limit:,} it may open (ulimit "
                          f"-n); choose seeds <= {(limit - SPARE_FILES) // FILES_PER_RUN:,}, or raise ulimit -n")
    where = Path(run_dir).absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        free = shutil.disk_usage(where).free
    except OSError:  # unknown: the folder checks that follow say why
        return
    if seeds * RUN_DISK_BYTES > free:
        raise ConfigError(f"seeds={seeds}: the runs' folders need about {seeds * RUN_DISK_BYTES / 2**20:,.0f} MiB on "
                          f"disk ({RUN_DISK_BYTES // 2**20} MiB a run: its checkpoint and logs), more than the "
                          f"{free / 2**20:,.0f} MiB free under {where}; choose fewer seeds or another run_dir")
