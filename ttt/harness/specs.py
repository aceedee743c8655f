"""Player specs: how ``ttt.benchmark``, ``ttt.play`` and the tests name a player, and how a list of
specs becomes players on one board.

A *spec* is one of:

* ``random``, ``benchmark``, ``perfect``: a player of ``ttt.players.PLAYERS`` with its default options;
* ``alphabeta:2``, ``mcts:200``: a bare value after a colon sets the player's first option
  (``depth``, ``simulations``); more values fill the next options in order;
* ``'mcts:simulations=200:c=1.4'`` or ``{name: mcts, simulations: 200}``: options by name;
* a path ending in ``.pt`` or ``.npz``, or containing ``/``, or ``{checkpoint: PATH}``: a saved learner
  (a run directory stands for the ``checkpoint.pt`` or ``checkpoint.npz`` in it; one holding both is refused);
  ``{checkpoint: PATH, simulations: N}``: a searching learner's (``alphazero``) with N simulations per move
  instead of the checkpoint's own; ``{checkpoint: PATH, symmetries: K}``: a value learner's (``dqn``) whose
  network values each board as the mean over K of its images under the board's symmetries
  (``DQNPlayer.symmetries``); ``{checkpoint: PATH, rules: false}``: a value learner's network alone, with no
  rule in move selection (``DQNPlayer.without_rules``; ``true``, the default, keeps the checkpoint's rules), or
  a searching learner's search alone; ``{checkpoint: PATH, play_threats: D}``: a searching learner with the
  rules at its root, chains of at most D threats (``AlphaZeroPlayer.rules``) (``CHECKPOINT_OPTIONS``).

Every error a user can cause (unknown player, bad option, board mismatch) is a one-line ValueError
or CheckpointError.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ttt.agents import checkpoint_label, load_player
from ttt.checkpoint import CheckpointError
from ttt.config import ConfigError
from ttt.games import BOARDS, Game, make_game
from ttt.games.boards import DEFAULT_BOARDS
from ttt.harness.run_dir import CHECKPOINT_NAMES
from ttt.players import PLAYERS, Player, make_player, player_factory

SHIPPED_CHECKPOINT = Path(__file__).resolve().parents[2] / "checkpoints" / "dqn_444" / "checkpoint.pt"
DEFAULT_GAME = DEFAULT_BOARDS["players"]  # when neither ``game`` nor a checkpoint names the board (ttt.games.boards)


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


# options of a checkpoint's spec: the player attribute each sets, and who has it
CHECKPOINT_OPTIONS = {"simulations": "a searching learner (alphazero)",
                      "play_threats": "a searching learner (alphazero)",
                      "symmetries": "a value learner (dqn)",
                      "rules": "a learner with move-selection rules (dqn, alphazero)"}


def _checkpoint_options(player: Player, options: dict, spec: Any) -> Player:
    """``player`` with the spec's options set (a one-line ValueError for a player without them)."""
    for key, value in options.items():
        # rules: false is the same player without its rules (a copy); the others set an attribute of the player
        if not hasattr(player, "without_rules" if key == "rules" else key):
            raise ValueError(f"player spec {spec_text(spec)}: {key} is an option of {CHECKPOINT_OPTIONS[key]}, "
                             f"not of this {type(player).__name__}")
        if key == "rules":
            if not isinstance(value, bool):
                raise ValueError(f"player spec {spec_text(spec)}: rules must be true or false, got {value!r}")
            player = player if value else player.without_rules()
            continue
        least = 0 if key == "play_threats" else 1  # play_threats 0: wins, losses and forks, no chain
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"player spec {spec_text(spec)}: {key} must be an integer >= {least}, got {value!r}")
        try:
            setattr(player, key, value)
        except ValueError as e:
            raise ValueError(f"player spec {spec_text(spec)}: {e}") from None
    return player


def _is_checkpoint_path(text: str) -> bool:
    return text.endswith((".pt", ".npz")) or "/" in text or "\\" in text


def parse_spec(spec: Any) -> tuple[str, str, dict]:
    """Split a player spec into (kind, target, options): kind ``"checkpoint"`` (target a path) or
    ``"player"`` (target a registry name, options its keyword arguments)."""
    if OmegaConf.is_config(spec):
        spec = OmegaConf.to_container(spec, resolve=True)
    if isinstance(spec, dict):
        spec = dict(spec)
        if "checkpoint" in spec:
            options = {k: v for k, v in spec.items() if k != "checkpoint"}
            unknown = sorted(set(options) - set(CHECKPOINT_OPTIONS))
            if unknown:
                raise ValueError(f"player spec {spec}: a checkpoint takes only the options "
                                 f"({', '.join(CHECKPOINT_OPTIONS)}), not {', '.join(map(str, unknown))}")
            return "checkpoint", str(spec["checkpoint"]), options
        if "name" not in spec:
            raise ValueError(f"player spec {spec}: needs a 'name' (or a 'checkpoint')")
        name = str(spec.pop("name"))
        return "player", name, spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"player spec {spec!r}: expected a name like 'alphabeta:2' or a checkpoint path")
    spec = spec.strip()
    if _is_checkpoint_path(spec):
        return "checkpoint", spec, {}
    name, *parts = spec.split(":")
    options: dict[str, Any] = {}
    positional = [p for p in parts if "=" not in p]
    for part in parts:
        if "=" in part:
            key, value = part.split("=", 1)
            if key.strip() in options:
                raise ValueError(f"player spec {spec!r}: option {key.strip()!r} given twice")
            options[key.strip()] = _parse_value(value.strip())
    if positional:
        names = _option_names(name)
        if len(positional) > len(names):
            raise ValueError(f"player spec {spec!r}: {name} takes the options ({', '.join(names) or 'none'})")
        for key, value in zip(names, positional, strict=False):
            if key in options:
                raise ValueError(f"player spec {spec!r}: option {key!r} given twice")
            options[key] = _parse_value(value)
    return "player", name, options


def _option_names(name: str) -> list[str]:
    """The keyword options of a registered player, in order (the parameters after ``game``)."""
    check_player_name(name)
    params = list(inspect.signature(player_factory(name)).parameters.values())[1:]
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def check_options(name: str, options: dict, spec: Any) -> None:
    """Refuse (one-line ValueError) an option whose value is not of the type of the player's default:
    ``alphabeta:x`` or ``mcts:1.5`` (an int option takes an int; a float option a finite int or float,
    so ``mcts:c=nan`` and ``c=inf`` are refused; a bool option true or false; None only where the
    option may be None). Ranges (``simulations >= 1``, ``c >= 0``) are the player's own checks."""
    params = inspect.signature(player_factory(name)).parameters
    for key, value in options.items():
        param = params.get(key)
        if param is None or param.default is inspect.Parameter.empty:
            continue  # an unknown option: the player's own error names it
        default, annotation = param.default, str(param.annotation)
        if value is None:
            ok = default is None or "None" in annotation
            want = "a value"
        elif isinstance(default, bool):
            ok, want = isinstance(value, bool), "true or false"
        elif isinstance(default, int):
            ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            want = "a finite number"
        elif isinstance(default, str):
            ok, want = isinstance(value, str), "a name"
        else:
            continue
        if not ok:
            raise ValueError(f"player spec {spec_text(spec)}: {name} option {key} must be {want}, got {value!r}")


def spec_text(spec: Any) -> str:
    """A spec as it is quoted in error messages."""
    return repr(spec.strip()) if isinstance(spec, str) else str(spec)


def check_player_name(name: str) -> None:
    """Raise a one-line ValueError when ``name`` is not a known player."""
    if name not in PLAYERS:
        raise ValueError(f"unknown player {name!r}; choose one of {', '.join(sorted(PLAYERS))} or a checkpoint path")


def spec_label(spec: Any) -> str:
    """A short name for a spec in tables: the spec string itself, or name:key=value for dicts (true and
    false written as a spec string takes them)."""
    kind, target, options = parse_spec(spec)
    pairs = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in options.items()]
    if kind == "checkpoint":
        return ":".join([checkpoint_label(target), *pairs])
    if isinstance(spec, str):
        return spec.strip()
    return ":".join([target, *pairs])


def checkpoint_file(target: str) -> Path:
    """``target``, or the ``checkpoint.pt`` / ``checkpoint.npz`` inside it when it is a run directory.

    A run directory that holds both is a CheckpointError: they are checkpoints of two runs, and only
    the file itself says which is meant."""
    path = Path(target)
    if not path.is_dir():
        return path
    found = [path / name for name in CHECKPOINT_NAMES if (path / name).is_file()]
    if len(found) > 1:
        raise CheckpointError(f"{path} holds both {' and '.join(f.name for f in found)}, checkpoints of two runs: "
                              f"give the file itself ({' or '.join(str(f) for f in found)})")
    return found[0] if found else path


def load_agents(specs: list[Any], game_name: str | None) -> tuple[Game, list[tuple[str, Player]]]:
    """Build the players of ``specs`` on one board; returns (game, [(label, player)]).

    The board is ``game_name``, else the first checkpoint's, else ``DEFAULT_GAME`` (4x4x4). A checkpoint trained on
    another board is a CheckpointError naming the file.
    """
    if game_name is not None and game_name not in BOARDS:
        raise ValueError(f"unknown board {game_name!r}; choose one of {', '.join(BOARDS)}")
    parsed = [parse_spec(s) for s in specs]
    loaded: dict[int, Player] = {}
    for i, (kind, target, options) in enumerate(parsed):
        if kind == "checkpoint":
            loaded[i] = _checkpoint_options(load_player(checkpoint_file(target), game=game_name), options, specs[i])
            if game_name is None:
                game_name = loaded[i].game.name
            elif loaded[i].game.name != game_name:
                raise CheckpointError(f"{target}: trained on board {loaded[i].game.name!r}, not {game_name!r}")
    game = make_game(game_name or DEFAULT_GAME)
    out = []
    for i, (spec, (kind, target, options)) in enumerate(zip(specs, parsed, strict=True)):
        if kind == "checkpoint":
            player = loaded[i]
        else:
            check_player_name(target)
            check_options(target, options, spec)
            try:
                player = make_player(target, game, **options)
            except TypeError as e:  # an option the player does not take
                raise ValueError(f"player {target!r}: {e}; options are ({', '.join(_option_names(target))})") from None
        out.append((spec_label(spec), player))
    return game, out


def distinct_labels(players: list[tuple[str, Player]], what: str) -> list[str]:
    """The labels of ``players`` (``load_agents``); ConfigError naming ``what``, the key that lists them, when
    a player is listed twice (its results would be filed under one name twice)."""
    names = [label for label, _ in players]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigError(f"{what} lists a player twice ({', '.join(twice)}); list each once")
    return names


def board_name(cfg: DictConfig) -> str | None:
    """The board chosen with ``game=NAME``, or None."""
    return None if cfg.game is None else str(cfg.game.name)


def agent_spec(cfg: DictConfig) -> Any:
    """The agent's spec from ``checkpoint`` / ``player``; the shipped checkpoint when neither is set."""
    if cfg.checkpoint is not None and cfg.player is not None:
        raise ValueError("give either checkpoint=PATH or player=NAME, not both")
    if cfg.player is not None:
        return cfg.player
    if cfg.checkpoint is not None:
        return {"checkpoint": str(cfg.checkpoint)}
    if not SHIPPED_CHECKPOINT.is_file():
        raise CheckpointError(f"{SHIPPED_CHECKPOINT}: the shipped dqn_444 checkpoint is missing; train it with "
                              "`python -m ttt.train +experiment=dqn_444`, or choose checkpoint=PATH or player=NAME")
    return {"checkpoint": str(SHIPPED_CHECKPOINT)}


def suite_checkpoints(targets: list[str | Path]) -> list[Path]:
    """The checkpoint file of each of ``targets`` (a file, or a run folder: ``checkpoint_file``),
    each checked before any is measured: that it exists and that suites ship for its board. A one-line
    ValueError (or CheckpointError) names the first that fails."""
    from ttt.checkpoint import load_checkpoint
    from ttt.evaluation.suites import BOARDS, has_suites

    files = [checkpoint_file(str(t)) for t in targets]
    for target, path in zip(targets, files, strict=True):
        if not path.is_file():
            raise ValueError(f"{target}: no such checkpoint (a checkpoint file, or a run folder with checkpoint.pt)")
        board = load_checkpoint(path)["game"]
        if not has_suites(board):
            raise ValueError(f"{path}: a {board} checkpoint; the tactics suites ship for {' and '.join(BOARDS)}")
    return files
