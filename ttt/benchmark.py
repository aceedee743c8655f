"""Measure an agent: ``python -m ttt.benchmark`` (Hydra; ``--help`` shows the config).

With no arguments it plays the shipped ``checkpoints/dqn_444/checkpoint.pt`` against ``random``,
1,000 games, half in each seat, and prints wins / draws / losses per seat with the 95% Wilson
interval of the win rate, the score and games per second.

Players are named by a *spec* (``ttt.harness.specs``), the same in every key (``checkpoint``, ``player``,
``opponents``, ``round_robin``) and in ``ttt.play``: ``random``, ``alphabeta:2``,
``'mcts:simulations=200:c=1.4'``, ``{name:mcts,simulations:200}``, or a checkpoint path.

``benchmark(cfg)`` is the plain function (tests call it); ``main`` is the Hydra wrapper that turns
the expected errors (bad checkpoint, unknown player, board mismatch, bad option, more games than the
memory holds) into one line on stderr and exit status 2. Ctrl-C or SIGTERM keeps the matches already
over: they are printed and written (``output``) marked partial, then the exit status is 130.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from ttt.cli import Interrupted, check_writable_file, run_cli, write_json
from ttt.config import GameConfig, check_fits, check_seed_and_threads, match_bytes
from ttt.evaluation.elo import PairResult, check_prior_draws, fit_elo
from ttt.evaluation.evaluate import play_match
from ttt.harness.specs import agent_spec, board_name, distinct_labels, load_agents
from ttt.players import Player

PROGRESS_SECONDS = 10.0  # a match still running reports its progress on stderr this often


@dataclass
class BenchmarkConfig:
    """Schema of ``configs/benchmark.yaml``."""

    checkpoint: str | None = None  # the agent: a saved learner ...
    player: Any = None  # ... or a player spec; neither: the shipped dqn_444 checkpoint
    game: GameConfig | None = None  # board (the game/ group: game=3x3); default: the checkpoint's, else 4x4x4
    opponents: list[Any] = field(default_factory=lambda: ["random"])
    games: int = 1000  # games per opponent (per pair in a round robin), half in each seat
    seed: int = 0  # match k (0-based) is played with seed + k
    output: str | None = None  # write the results as JSON here
    round_robin: list[Any] | None = None  # player specs: every pair plays, then an Elo fit
    elo_anchor: str | None = "random"  # the player rated 0 (mean 0 when null or not in the list)
    elo_prior_draws: float = 1.0  # virtual draws per pair, so a perfect score gives a finite rating
    threads: int = 1  # torch intra-op threads
    exploit: bool = False  # also the agent's exact exploitability: OpenSpiel's number and per seat (3x3, 4x4)
    exploit_ties: str = "first"  # the agent's equal best moves: its lowest-numbered one, or "all" (worst case)


ConfigStore.instance().store(name="benchmark_schema", node=BenchmarkConfig)


# ---------------------------------------------------------------------------------------- benchmark
def format_table(rows: list[dict]) -> str:
    """The results as a fixed-width text table."""
    w = max([16, *(len(r["opponent"]) for r in rows)])  # the opponent column fits the longest label
    head = (f"{'opponent':<{w}} {'seat':<7} {'W / D / L':>19} {'win rate':>8}  {'95% CI':<16} {'score':>6} "
            f"{'games/s':>9} {'ms/move':>8} {'opp ms/move':>11}")
    lines = [head, "-" * len(head)]
    for r in rows:
        wdl = f"{r['wins']} / {r['draws']} / {r['losses']}"
        ci = "[{:.3f}, {:.3f}]".format(*r["win_rate_ci"])
        lines.append(f"{r['opponent']:<{w}} {r['seat']:<7} {wdl:>19} {r['win_rate']:>8.3f}  "
                     f"{ci:<16} {r['score']:>6.3f} {r['games_per_sec']:>9.1f} {r['agent_ms_per_move']:>8.2f} "
                     f"{r['opponent_ms_per_move']:>11.2f}")
    return "\n".join(lines)


def match_progress(label: str) -> Callable[[int, int], None]:
    """A ``play_match`` progress callback: a line on stderr every ``PROGRESS_SECONDS`` while the match runs."""
    t0 = time.perf_counter()
    last = t0

    def report(finished: int, total: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if now - last >= PROGRESS_SECONDS:
            last = now
            print(f"  {label}: {finished}/{total} games over ({now - t0:.0f} s)", file=sys.stderr, flush=True)

    return report


def check_games_fit(game, players: list[Player], games: int) -> None:
    """Refuse (ConfigError, one line) ``games`` games per match that would not fit in this machine's
    memory side by side (``ttt.config.match_bytes``), before any game."""
    networks = [p.network for p in players if isinstance(getattr(p, "network", None), Mapping)]
    check_fits(match_bytes(game, networks, games), f"games={games}: {game.name} games side by side", "games")


def partial_note(finished: int, planned: int) -> str:
    """The line that marks the results of an interrupted benchmark or round robin."""
    return f"partial: interrupted after {finished} of {planned} matches; these are the finished ones"


def benchmark(cfg: DictConfig, out: TextIO | None = None) -> dict:
    """Run the benchmark (or round robin) the config describes; print the table; return the results.

    ``output=PATH`` is checked for writability before any game; if writing it still fails at the
    end, the results go to a fallback file and ``ttt.cli.OutputError`` names it. Ctrl-C (or SIGTERM,
    under ``run_cli``) after a match is over: the finished matches are printed and written with
    ``"partial": true``, then ``ttt.cli.Interrupted`` is raised."""
    import torch

    out = out or sys.stdout
    if int(cfg.games) < 1:
        raise ValueError(f"games must be >= 1, got {cfg.games}")
    check_seed_and_threads(cfg)
    check_prior_draws(cfg.elo_prior_draws, "elo_prior_draws")
    if cfg.output:
        check_writable_file(cfg.output, "output")
    torch.set_num_threads(int(cfg.threads))
    if cfg.round_robin is not None:
        if cfg.exploit:
            raise ValueError("exploit=true measures one agent (checkpoint= or player=), not a round robin")
        result = round_robin(cfg, out)
    else:
        if not cfg.opponents and not cfg.exploit:
            raise ValueError("opponents is empty; give e.g. opponents=[random,benchmark]")
        specs = [agent_spec(cfg), *cfg.opponents]
        game, players = load_agents(specs, board_name(cfg))
        (agent_label, agent), opponents = players[0], players[1:]
        check_games_fit(game, [p for _, p in players], int(cfg.games))
        if cfg.exploit:  # before the matches, so a board, option or agent it cannot take fails at once
            from ttt.evaluation.exploitability import check_ties, exploitability, policy_exploitability, report

            check_ties(str(cfg.exploit_ties))
            nash = policy_exploitability(agent)
            try:
                seats = exploitability(agent, str(cfg.exploit_ties))
            except ValueError as e:  # a stochastic agent (random) has a number but no per-seat verdict
                seats, no_verdict = None, str(e)
        rows = []
        games = f"{int(cfg.games)} games per opponent, half in each seat" if opponents else "no opponents"
        print(f"{agent_label} on {game.name}: {games} (seed {int(cfg.seed)})", file=out, flush=True)
        finished = 0
        try:
            for k, (label, opponent) in enumerate(opponents):
                r = play_match(game, agent, opponent, int(cfg.games), seed=int(cfg.seed) + k,
                               agent_name=agent_label, opponent_name=label, progress=match_progress(f"vs {label}"))
                rows += r.rows(label)
                finished += 1
        except KeyboardInterrupt:
            if not finished:
                raise
        partial = finished < len(opponents)
        if rows:
            print(format_table(rows), file=out, flush=True)
        if partial:
            print(partial_note(finished, len(opponents)), file=out, flush=True)
        result = {"mode": "benchmark", "agent": agent_label, "game": game.name, "games": int(cfg.games),
                  "seed": int(cfg.seed), "partial": partial, "results": rows}
        if cfg.exploit:
            print(nash.text(), file=out, flush=True)
            print(f"per seat: no verdict ({no_verdict})" if seats is None else report(seats), file=out, flush=True)
            result["exploitability"] = nash.exploitability
            result["best_response"] = nash.as_dict()
            result["exploit_seats"] = None if seats is None else [s.as_dict() for s in seats]
    if cfg.output:
        path = write_json(cfg.output, result, "results")
        print(f"wrote {path}", file=out, flush=True)
    if result["partial"]:
        print("interrupted", file=sys.stderr)
        raise Interrupted()
    return result


def round_robin(cfg: DictConfig, out: TextIO) -> dict:
    """Every pair of ``cfg.round_robin`` plays ``cfg.games`` games; Elo ratings from all of them.
    Interrupted after a match is over: the finished matches, ``"partial": true``, no ratings."""
    specs = list(cfg.round_robin)
    if len(specs) < 2:
        raise ValueError("round_robin needs at least two players")
    game, players = load_agents(specs, board_name(cfg))
    names = distinct_labels(players, "round_robin")
    anchor = cfg.elo_anchor if cfg.elo_anchor in names else None
    check_games_fit(game, [p for _, p in players], int(cfg.games))
    print(f"round robin on {game.name}: {len(names)} players, {int(cfg.games)} games per pair, "
          f"half in each seat (seed {int(cfg.seed)})", file=out, flush=True)
    pairs, matches = [], []
    planned = len(names) * (len(names) - 1) // 2
    about = {"mode": "round_robin", "game": game.name, "games": int(cfg.games), "seed": int(cfg.seed),
             "anchor": anchor, "prior_draws": float(cfg.elo_prior_draws), "players": names}
    k = 0
    try:
        for a in range(len(players)):
            for b in range(a + 1, len(players)):
                r = play_match(game, players[a][1], players[b][1], int(cfg.games), seed=int(cfg.seed) + k,
                               agent_name=names[a], opponent_name=names[b],
                               progress=match_progress(f"{names[a]} vs {names[b]}"))
                k += 1
                both = r.both
                pairs.append(PairResult(a, b, both.wins, both.draws, both.losses))
                matches.append(dict(player=names[a], **r.rows(names[b])[-1]))
                print(f"  {names[a]} vs {names[b]}: {both.wins} / {both.draws} / {both.losses} "
                      f"(score {both.score:.3f})", file=out, flush=True)
    except KeyboardInterrupt:
        if not matches:
            raise
        print(partial_note(len(matches), planned) + " (no Elo fit)", file=out, flush=True)
        return {**about, "partial": True, "ratings": None, "results": matches}
    ratings = sorted(fit_elo(names, pairs, anchor=anchor, prior_draws=float(cfg.elo_prior_draws)),
                     key=lambda x: -x.elo)
    anchor_text = f"{anchor} = 0" if anchor else "mean 0"
    print(f"\nElo (Bradley-Terry maximum likelihood, draws count half, anchor {anchor_text}, "
          f"{float(cfg.elo_prior_draws):g} prior draws per pair)", file=out)
    head = f"{'rank':>4}  {'player':<20} {'elo':>8} {'+-se':>7}  {'95% CI':<18} {'games':>6} {'score':>6}"
    print(head + "\n" + "-" * len(head), file=out)
    for i, x in enumerate(ratings, 1):
        lo, hi = x.ci
        print(f"{i:>4}  {x.name:<20} {x.elo:>8.1f} {x.se:>7.1f}  [{lo:>7.1f}, {hi:>7.1f}] {x.games:>6} "
              f"{x.score:>6.3f}", file=out)
    out.flush()
    return {**about, "partial": False,
            "ratings": [dict(player=x.name, elo=x.elo, elo_se=x.se, elo_ci=list(x.ci), games=x.games,
                             score=x.score) for x in ratings],
            "results": matches}


# ---------------------------------------------------------------------------------------- entry point
@hydra.main(version_base="1.3", config_path="../configs", config_name="benchmark")
def main(cfg: DictConfig) -> None:
    run_cli(benchmark, cfg)


if __name__ == "__main__":
    main()
