"""The shipped ``checkpoints/dqn_444_plain``: the design's plain learner (seed 1 of 3, the median against the
benchmark player), its settings those of the experiment, its one rule the terminal afterstates' values, its
value head unsaturated, and loading in ``ttt.benchmark`` and ``ttt.play`` (``ttt.serve``: tests/test_serve.py).
Its figures: docs/notes/plain_learner.md, "The recipe at 150,000 games"."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
from test_benchmark import compose_benchmark
from test_experiments import compose_config, flat, network_differences, with_part_defaults
from test_play import compose_play

import ttt.benchmark as bm
import ttt.play as tp
from ttt.agents import load_player
from ttt.agents.dqn.health import health
from ttt.agents.dqn.player import checkpoint_rules
from ttt.agents.dqn.settings import upgrade_agent
from ttt.checkpoint import load_checkpoint
from ttt.games import BatchedGames, random_legal_actions
from ttt.games.exact import Rules

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "dqn_444_plain" / "checkpoint.pt"


def test_the_shipped_player_is_the_experiments_network_and_settings_with_terminal_values_alone():
    payload = load_checkpoint(SHIPPED, kind="dqn", game="4x4x4")
    recipe = compose_config(["+experiment=dqn_444_plain"])
    assert network_differences(payload["network"], "dqn_444_plain") == []
    assert checkpoint_rules(payload) == (Rules(wins=True, losses=False, forks=False, threats=0), 0.9)
    assert "rank_head" not in payload
    # its config records the flat settings of before the parts: read as today's (settings.upgrade_agent)
    agent = with_part_defaults(flat(upgrade_agent(payload["config"]["agent"]), "agent."))
    recipe = with_part_defaults(recipe)
    for key in ("gamma", "lr", "first_lr", "td_lambda", "loss", "optimizer", "opponent", "opponent_after",
                "switch_episode", "refresh_every", "parts.labels.rule_labels", "parts.labels.rank_labels",
                "parts.rules.exact_losses"):
        assert agent[f"agent.{key}"] == recipe[f"agent.{key}"], key
    final = json.loads((SHIPPED.parent / "final_eval.json").read_text())
    assert final["episodes"] >= recipe["episodes"] == 150000 and final["seed"] == 1
    assert "+experiment=dqn_444_plain" in final["command"]
    both = {r["opponent"]: r["score"] for r in final["results"] if r["seat"] == "both"}
    assert both["random"] >= 0.98  # measured 1.000 (200 games)


def test_its_value_head_is_not_saturated_and_values_a_win_above_a_move_that_leaves_one():
    # measured over 512 positions of random play: saturated 0, a win about 0.4 above a move that leaves one
    player = load_player(SHIPPED)
    game, rng = player.game, np.random.default_rng(0)
    games = BatchedGames(game, 512)
    for _ in range(14):
        games.play(random_legal_actions(games.legal_mask(), rng), check=False)
    live = ~games.done
    views = games.board[live] * games.to_play[live, None]
    figures = health(player.net, game, views)
    assert figures["saturated"] < 0.1 and figures["spread"] > 0.01
    assert figures["win"] > figures["leaves_win"] + 0.1


def test_it_loads_in_the_benchmark_and_beats_random(capsys):
    out = bm.benchmark(compose_benchmark(f"checkpoint={SHIPPED}", "opponents=[random]", "games=2"))
    both = next(r for r in out["results"] if r["seat"] == "both")
    assert out["agent"] == "dqn_444_plain" and both["wins"] == 2


def test_it_loads_in_play_and_answers_a_move():
    out = io.StringIO()
    tally = tp.play(compose_play(f"checkpoint={SHIPPED}", "seat=first"), io.StringIO("21\nquit\n"), out)
    assert tally["games"] == 0 and "dqn_444_plain plays" in out.getvalue()
