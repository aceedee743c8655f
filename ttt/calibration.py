"""Value quality: ``python -m ttt.calibration`` (Hydra; ``--help`` shows the config).

Whether a player's afterstate values estimate outcomes. An afterstate is the board right after a
move; its value is seen from the player who just moved (+1 a win for that player, -1 a loss, 0 a
draw), as a TD(0) afterstate learner (``ttt.agents.dqn``) learns it. Any player that values its moves
can be measured: a ``dqn`` checkpoint (its ``values``), a tabular learner, ``perfect`` (exact values),
``alphabeta`` or ``mcts`` (through ``action_values``). ``rules=false`` (the default) measures the values
of a learned player's network alone; ``rules=true`` the values it plays by, where its move-selection
rules (``ttt.agents.dqn.Rules``: exact wins, losses, forks) replace some estimates by exact values. The
games are always the player's own, rules included (a value estimates the outcome of the play it was
learned in, and the rules moved in training too), except the dqn player's threat-chain rule
(``Rules.threats``): training moved without it, and its search costs about 0.3 s per Qubic game.

Three measures:

* **Against exact values** (3x3 and 4x4, the boards of ``ttt.games.solved``): every reachable
  afterstate that is not terminal, or ``positions`` of them drawn uniformly (with replacement) when
  the board has more (3x3 has 4,519, all measured at the default; 4x4 millions). Each is valued and
  compared with its exact outcome under best play (+1, 0, -1 for the player who just moved):
  ``sign_agreement``, the share whose *sign class* is right (win above ``WIN_THRESHOLD`` = 1/3, loss
  below -1/3, else draw), per class as well; ``mae``, the mean absolute difference from the exact
  outcome; ``spearman``, the rank correlation with it (ties get their mean rank; null when either
  side is constant). The same measures over the afterstates the player meets itself, ``own_games``:
  every non-terminal afterstate of ``games`` games of its epsilon-greedy self-play (repeats counted).
* **Against outcomes** (every board): ``games`` games of the player's own epsilon-greedy self-play
  (``epsilon``); from each, one afterstate that is not terminal, its ply drawn uniformly; the
  player's value of it, and the mean outcome (+1, 0, -1 for the player who made that move) of
  ``rollouts`` continuations of the player against itself, epsilon-greedy as well. Binned by the
  value into ``bins`` equal bins over [-1, 1]: the *reliability table* (per bin the positions, the
  mean value and the mean outcome) and the *expected calibration error*, ``ece = sum_b (n_b / n) *
  |mean value_b - mean outcome_b|``, on the value scale (0 calibrated; at most 2). Beside it the
  *correlation* (Pearson) of the values with the outcomes and the spread (sd) of each: a value that
  is the same for every position can be calibrated (ece near 0) and still tell nothing; it cannot
  correlate (null when the values are constant).
  ``figure=FILE.png`` draws the reliability diagram (extra ``plot``).
* **Won or lost** (every board): ``games`` games of the player against ``opponent`` (a player spec;
  default itself), both epsilon-greedy, the player first in half of them; every non-terminal
  afterstate of the player's moves, its value and its game's outcome for the player who moved. The
  *ROC AUC* of the values, won against lost (draws left out; the probability that a won position's
  value is above a lost one's, ties half: 0.5 tells nothing, as a constant does), and their Pearson
  correlation with the outcome (draws 0), overall and by the ply of the move (1-10, 11-20, 21+, 11+),
  each AUC with its 95% interval over the games (``auc_95``: a bootstrap that draws whole games, since
  the afterstates of one game share its outcome).
  With ``ceiling=R`` (default 0: not measured) also the AUC's *ceiling*: what the games decide after
  an afterstate (exploring moves, the opponent's random tie-breaks) no value of it can foresee, so no
  value scores above the AUC of each afterstate's own chance of winning a decided game. That chance is
  estimated from R continuations of each by the same two players (``auc_ceiling``), which puts the
  estimate a little below the true ceiling.
* **One-move afterstates** (every board): from every non-terminal position of ``one_move`` random
  games, up to ``one_move`` afterstates of each class whose value one move decides: ``forced_loss``
  (the opponent then completes a line at once: exact -1), ``double_threat`` (no such reply, and two
  playable winning cells it cannot both block: +1), ``completed_line`` (+1); the mean and quartiles
  of the player's values of each.
* **Opening values**: the value of every first move, grouped by the orbits of the cells under the
  board's symmetries (``Game.symmetries``; 3x3: corner, edge, centre), with their median, and the
  exact outcome of each class where the board has one.

JSON (``output=FILE.json``)::

    {"game": ..., "player": ..., "rules": bool, "rules_apply": bool, "ece": float,
     "thresholds": {"win": 1/3, "loss": -1/3},
     "exact": {"positions": N, "sampled": bool, "sign_agreement": ..., "mae": ..., "spearman": ...,
               "classes": {"win": {"positions": n, "agreement": ..., "mean_value": ...}, "draw": ..., "loss": ...},
               "own_games": {"games": G, "epsilon": e, "positions": N, "sign_agreement": ..., "mae": ...,
                             "spearman": ..., "classes": {...}}}
              (null on boards without exact values),
     "outcomes": {"positions": N, "rollouts": R, "epsilon": e, "ece": ..., "mean_value": ...,
                  "mean_outcome": ..., "pearson": ..., "value_sd": ..., "outcome_sd": ...,
                  "bins": [{"low", "high", "positions", "mean_value", "mean_outcome"}]},
     "openings": {"median": ..., "min": ..., "max": ..., "classes": [{"name", "cells", "values", "mean",
                  "exact"}]},
     "discrimination": {"opponent": name, "games": G, "epsilon": e, "positions": N, "won": n, "lost": n,
                        "auc": ..., "auc_95": [low, high], "pearson": ..., "by_phase": {"1-10": {"positions",
                        "won", "lost", "auc", "auc_95", "pearson"}, "11-20": {...}, "21+": {...}, "11+": {...}},
                        "ceiling": {"rollouts": R, "auc": ..., "by_phase": {"1-10": auc, ...}} (ceiling=R only)},
     "one_move": {"positions": N, "forced_loss": {"afterstates": n, "exact": -1, "mean", "q25", "median",
                  "q75"}, "double_threat": {...}, "completed_line": {...}}}

``calibration(cfg)`` is the plain function (tests call it); ``main`` the Hydra wrapper that turns the
expected errors into one line and exit status 2.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

import hydra
import numpy as np
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from ttt.cli import check_writable_file, run_cli, write_json, write_with_fallback
from ttt.config import GameConfig, check_seed_and_threads
from ttt.evaluation.value_games import (
    auc_ceiling,
    opponent_games,
    outcome_samples,
    own_afterstates,
    reliability,
    without_threat_chains,
)
from ttt.evaluation.value_quality import (
    PHASES,
    WIN_THRESHOLD,
    discrimination,
    exact_afterstates,
    exact_measures,
    exact_outcomes,
    has_exact_values,
    one_move_values,
    opening_values,
    pearson,
    values_of_afterstates,
)
from ttt.games import Game
from ttt.harness.specs import agent_spec, board_name, load_agents
from ttt.players import Player


# ------------------------------------------------------------------------------ the whole measure
def measure(player: Player, game: Game, positions: int = 20000, games: int = 500, rollouts: int = 16,
            epsilon: float = 0.1, bins: int = 10, seed: int = 0, valuer: Player | None = None,
            opponent: tuple[str, Player] | None = None, one_move: int = 500, ceiling: int = 0) -> dict[str, Any]:
    """Every measure of the module docstring on ``game``, as the JSON's dictionary (without the
    player's name and rules): the values of ``valuer`` (default ``player``), the games of ``player``
    (against ``opponent``, a label and a player, in the discrimination measure; None: itself), and with
    ``ceiling`` > 0 the discrimination's ceiling from that many continuations of each afterstate."""
    rng = np.random.default_rng(seed)
    valuer = valuer or player
    result: dict[str, Any] = {"game": game.name, "thresholds": {"win": WIN_THRESHOLD, "loss": -WIN_THRESHOLD}}
    exact = None
    if has_exact_values(game):
        boards, sampled = exact_afterstates(game, positions, rng)
        exact = exact_measures(values_of_afterstates(valuer, game, boards), exact_outcomes(game, boards))
        exact["sampled"] = sampled
    values, outcomes = outcome_samples(player, game, games, rollouts, epsilon, rng, valuer)
    table, ece = reliability(values, outcomes, bins)
    if exact is not None:  # after the outcome samples, so that they do not depend on it
        own = own_afterstates(player, game, games, epsilon, rng)
        exact["own_games"] = {"games": games, "epsilon": epsilon,
                              **exact_measures(values_of_afterstates(valuer, game, own), exact_outcomes(game, own))}
    result["ece"] = ece
    result["exact"] = exact
    result["outcomes"] = {"positions": games, "rollouts": rollouts, "epsilon": epsilon, "ece": ece,
                          "mean_value": float(values.mean()), "mean_outcome": float(outcomes.mean()),
                          "pearson": pearson(values, outcomes), "value_sd": float(values.std()),
                          "outcome_sd": float(outcomes.std()), "bins": table}
    result["openings"] = opening_values(valuer, game)
    # last, so that the measures above keep their random draws
    boards, plies, won, ids = opponent_games(player, None if opponent is None else opponent[1], game, games,
                                             epsilon, rng)
    result["discrimination"] = {"opponent": "self" if opponent is None else opponent[0], "games": games,
                                "epsilon": epsilon, **discrimination(values_of_afterstates(valuer, game, boards),
                                                                     won, plies, ids)}
    result["one_move"] = one_move_values(valuer, game, one_move, rng)
    if ceiling > 0:  # after every other measure, which keep their random draws
        result["discrimination"]["ceiling"] = auc_ceiling(player, None if opponent is None else opponent[1], game,
                                                          boards, plies, won, ceiling, epsilon, rng)
    return result


def format_report(result: dict[str, Any]) -> str:
    """The results as text: exact agreement, the reliability table, the opening values."""
    lines = []
    ex = result["exact"]
    if ex is not None:
        how = "drawn uniformly" if ex["sampled"] else "all"
        rho = "n/a" if ex["spearman"] is None else f"{ex['spearman']:.3f}"
        lines.append(f"exact values ({ex['positions']} non-terminal afterstates, {how}): sign agreement "
                     f"{ex['sign_agreement']:.3f}, mae {ex['mae']:.3f}, spearman {rho}")
        for name, c in ex["classes"].items():
            if c["positions"]:
                lines.append(f"  {name:<5} {c['positions']:>7} positions  agreement {c['agreement']:.3f}  "
                             f"mean value {c['mean_value']:+.3f}")
        own = ex.get("own_games")
        if own is not None:
            parts = "  ".join(f"{name} {c['agreement']:.3f}" for name, c in own["classes"].items() if c["positions"])
            lines.append(f"exact values of the afterstates of its own {own['games']} self-play games (epsilon "
                         f"{own['epsilon']:g}, {own['positions']} afterstates): sign agreement "
                         f"{own['sign_agreement']:.3f}, mae {own['mae']:.3f} ({parts})")
    o = result["outcomes"]
    r = "n/a" if o["pearson"] is None else f"{o['pearson']:.3f}"
    lines.append(f"outcomes ({o['positions']} self-play positions x {o['rollouts']} continuations, epsilon "
                 f"{o['epsilon']:g}): ece {o['ece']:.3f}, mean value {o['mean_value']:+.3f}, "
                 f"mean outcome {o['mean_outcome']:+.3f}")
    lines.append(f"  correlation of value and outcome {r} (sd of the values {o['value_sd']:.3f}, of the outcomes "
                 f"{o['outcome_sd']:.3f}): a constant value can be calibrated, it cannot correlate")
    lines.append(f"  {'bin':<15} {'positions':>9} {'value':>7} {'outcome':>8}")
    for b in o["bins"]:
        if b["positions"]:
            lines.append(f"  [{b['low']:+.1f}, {b['high']:+.1f}]   {b['positions']:>9} {b['mean_value']:>+7.3f} "
                         f"{b['mean_outcome']:>+8.3f}")
    d = result.get("discrimination")
    if d is not None:
        def fmt(x):
            return "n/a" if x is None else f"{x:.3f}"

        def interval(p):  # the AUC's 95% interval over the games, where measured
            ci = p.get("auc_95")
            return "" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]"
        lines.append(f"won or lost ({d['positions']} afterstates of its moves in {d['games']} games against "
                     f"{d['opponent']}, epsilon {d['epsilon']:g}; {d['won']} won, {d['lost']} lost): auc "
                     f"{fmt(d['auc'])}{interval(d)} (95% over the games), correlation {fmt(d['pearson'])}")
        c = d.get("ceiling")
        if c is not None:
            lines.append(f"  the auc's ceiling, from {c['rollouts']} continuations of each afterstate by the same "
                         f"players: {fmt(c['auc'])} (what the games decide after it, no value can foresee)")
        for name, *_ in PHASES:
            p = d["by_phase"][name]
            if p["positions"]:
                top = "" if c is None else f"  ceiling {fmt(c['by_phase'][name])}"
                lines.append(f"  plies {name:<6} {p['positions']:>7} afterstates  auc {fmt(p['auc'])}{interval(p)}  "
                             f"correlation {fmt(p['pearson'])}{top}")
        m = result["one_move"]
        lines.append(f"one-move afterstates (from {m['positions']} positions of random play):")
        for name in ("forced_loss", "double_threat", "completed_line"):
            c = m[name]
            if c["afterstates"]:
                lines.append(f"  {name:<15} {c['afterstates']:>5}  exact {c['exact']:+.0f}  mean {c['mean']:+.3f}  "
                             f"quartiles {c['q25']:+.3f} {c['median']:+.3f} {c['q75']:+.3f}")
    op = result["openings"]
    lines.append(f"opening values: median {op['median']:+.3f}, min {op['min']:+.3f}, max {op['max']:+.3f}")
    for c in op["classes"]:
        exact = "" if c["exact"] is None else f"  exact {c['exact']:+d}"
        lines.append(f"  {c['name']:<20} cells {len(c['cells']):>2}  mean {c['mean']:+.3f}{exact}")
    return "\n".join(lines)


def draw_reliability(result: dict[str, Any], path, label: str) -> None:
    """The reliability diagram (mean outcome against mean value per bin, and the positions per bin) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = [b for b in result["outcomes"]["bins"] if b["positions"]]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(5, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    top.plot([-1, 1], [-1, 1], color="grey", lw=1, ls="--", label="calibrated")
    top.plot([b["mean_value"] for b in bins], [b["mean_outcome"] for b in bins], "o-", label=label)
    top.set_ylabel("mean outcome (player who moved)")
    top.set_xlim(-1.05, 1.05)
    top.set_ylim(-1.05, 1.05)
    top.set_title(f"{result['game']}: ece {result['ece']:.3f}")
    top.legend(loc="upper left")
    centres = [(b["low"] + b["high"]) / 2 for b in result["outcomes"]["bins"]]
    width = result["outcomes"]["bins"][0]["high"] - result["outcomes"]["bins"][0]["low"]
    bottom.bar(centres, [b["positions"] for b in result["outcomes"]["bins"]], width=width * 0.9, color="tab:blue")
    bottom.set_xlabel("afterstate value")
    bottom.set_ylabel("positions")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------ entry point
@dataclass
class CalibrationConfig:
    """Schema of ``configs/calibration.yaml``."""

    checkpoint: str | None = None  # the player: a saved learner ...
    player: Any = None  # ... or a player spec (ttt.benchmark syntax); neither: the shipped dqn_444
    game: GameConfig | None = None  # board (game=3x3); default: the checkpoint's, else 4x4x4
    rules: bool = False  # true: a learned player's move-selection rules stay on (in its values and moves)
    positions: int = 20000  # exact boards: at most this many afterstates (all when there are fewer)
    games: int = 500  # self-play positions measured against outcomes
    rollouts: int = 16  # continuations of each
    epsilon: float = 0.1  # exploration of the self-play and the continuations
    bins: int = 10  # equal bins over [-1, 1]
    opponent: Any = None  # won or lost: the player's games against this player spec; null: itself
    one_move: int = 500  # one-move afterstates of each class (forced loss, double threat, completed line)
    ceiling: int = 0  # > 0: the won-or-lost AUC's ceiling, from this many continuations of each afterstate
    seed: int = 0
    output: str | None = None  # the results as JSON
    figure: str | None = None  # the reliability diagram as PNG (extra plot)
    threads: int = 1  # torch intra-op threads


ConfigStore.instance().store(name="calibration_schema", node=CalibrationConfig)


def calibration(cfg: DictConfig, out: TextIO | None = None) -> dict:
    """Measure the player the config names; print the report; return the results."""
    import torch

    out = out or sys.stdout
    for key in ("positions", "games", "rollouts", "bins", "threads", "one_move"):
        if int(cfg[key]) < 1:
            raise ValueError(f"{key} must be >= 1, got {cfg[key]}")
    if int(cfg.ceiling) < 0:
        raise ValueError(f"ceiling must be >= 0 (0: not measured), got {cfg.ceiling}")
    if not 0.0 <= float(cfg.epsilon) <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {cfg.epsilon}")
    check_seed_and_threads(cfg)
    if cfg.output:
        check_writable_file(cfg.output, "output")
    if cfg.figure:
        check_writable_file(cfg.figure, "figure")
        try:
            import matplotlib  # noqa: F401
        except ModuleNotFoundError:
            raise ValueError("figure= needs matplotlib: pip install -e '.[plot]'") from None
    torch.set_num_threads(int(cfg.threads))
    specs = [agent_spec(cfg)] + ([cfg.opponent] if cfg.opponent not in (None, "self") else [])
    game, loaded = load_agents(specs, board_name(cfg))
    (label, player), opponent = loaded[0], (loaded[1] if len(loaded) > 1 else None)
    switchable = callable(getattr(player, "without_rules", None))
    valuer = player.without_rules() if switchable and not cfg.rules else player
    player = without_threat_chains(player)
    t0 = time.perf_counter()
    result = measure(player, game, int(cfg.positions), int(cfg.games), int(cfg.rollouts), float(cfg.epsilon),
                     int(cfg.bins), int(cfg.seed), valuer, opponent, int(cfg.one_move), int(cfg.ceiling))
    seconds = time.perf_counter() - t0
    result = {"game": game.name, "player": label, "rules": bool(cfg.rules), "rules_apply": switchable,
              **{k: v for k, v in result.items() if k != "game"}, "seconds": seconds}
    rules_text = f"rules={str(bool(cfg.rules)).lower()}" if switchable else "no rules to switch"
    print(f"{label} on {game.name} ({rules_text}); {seconds:.1f} s", file=out)
    print(format_report(result), file=out, flush=True)
    if cfg.output:
        path = write_json(cfg.output, result, "results")
        print(f"wrote {path}", file=out)
    if cfg.figure:
        path = write_with_fallback(cfg.figure, lambda p: draw_reliability(result, p, label), "figure")
        print(f"wrote {path}", file=out)
    return result


@hydra.main(version_base="1.3", config_path="../configs", config_name="calibration")
def main(cfg: DictConfig) -> None:
    run_cli(calibration, cfg)


if __name__ == "__main__":
    main()
