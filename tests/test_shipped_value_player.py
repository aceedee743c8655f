"""The shipped ``checkpoints/dqn_444_value_d16``: a value player, not the main job. Its network is
the experiment's, its value head alone takes wins and makes most blocks of the tactics suites, values a move
that leaves the opponent a win low and a double threat high, and it loads in ``ttt.benchmark``.
(docs/notes/values_on_qubic.md, "Blocks by the kind of line"; the main job ``checkpoints/dqn_444``
follows the design and is tested in tests/test_benchmark.py and tests/test_experiments.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from test_benchmark import compose_benchmark
from test_experiments import compose_config, network_differences

import ttt.benchmark as bm
from ttt.agents import load_player
from ttt.agents.dqn.player import checkpoint_rules
from ttt.checkpoint import load_checkpoint
from ttt.evaluation.suites import suite_results, without_rules
from ttt.evaluation.value_quality import one_move_values
from ttt.games.exact import Rules

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "dqn_444_value_d16" / "checkpoint.pt"


def test_the_shipped_player_is_the_experiments_network_and_rules_without_a_rank_head():
    payload = load_checkpoint(SHIPPED, kind="dqn", game="4x4x4")
    recipe = compose_config(["+experiment=dqn_444_value_d16"])
    assert network_differences(payload["network"], "dqn_444_value_d16") == []
    assert "rank_head" not in payload  # the value head is the player
    # its rules as they load (written while the rules carried the discount, its learner's 0.97)
    assert checkpoint_rules(payload) == (Rules(wins=True, losses=True, forks=True, threats=3), 0.97)
    final = json.loads((SHIPPED.parent / "final_eval.json").read_text())
    assert final["episodes"] == recipe["episodes"] == 30000 and final["seed"] == 0
    assert "+experiment=dqn_444_value_selfplay_decay" in final["command"] and "network.detectors=16" in final["command"]
    both = {r["opponent"]: r["score"] for r in final["results"] if r["seat"] == "both"}
    assert both["benchmark"] >= 0.95 and both["alphabeta:1"] >= 0.6


def test_its_value_head_alone_takes_wins_and_blocks():
    # measured: 1.000 of the win suite, 0.952 of the block suite (the network alone, no rules)
    player = load_player(SHIPPED)
    rates = {name: r["rate"] for name, r in suite_results(without_rules(player), player.game).items()}
    assert rates["win"] >= 0.97 and rates["block"] >= 0.92


def test_averaged_over_16_of_the_boards_symmetries_it_makes_more_of_the_blocks_and_forks():
    # measured: blocks 0.952 -> 0.975, forks 0.880 -> 0.997 (docs/notes/values_on_qubic.md, "Values through
    # the board's symmetries")
    player = load_player(SHIPPED)
    player.symmetries = 16
    rates = {name: r["rate"] for name, r in suite_results(without_rules(player), player.game).items()}
    assert rates["win"] == 1.0 and rates["block"] >= 0.96 and rates["fork"] >= 0.97


def test_its_values_see_a_win_left_to_the_opponent_and_a_double_threat():
    # measured over 300 of each: -0.74 and +0.84; the shipped dqn_444's value head gives about 0 to both
    player = load_player(SHIPPED)
    out = one_move_values(without_rules(player), player.game, 60, np.random.default_rng(0))
    assert out["forced_loss"]["afterstates"] >= 30 and out["double_threat"]["afterstates"] >= 30
    assert out["forced_loss"]["mean"] <= -0.6 and out["double_threat"]["mean"] >= 0.6


def test_it_loads_in_the_benchmark_and_beats_random(capsys):
    out = bm.benchmark(compose_benchmark(f"checkpoint={SHIPPED}", "opponents=[random]", "games=2"))
    both = next(r for r in out["results"] if r["seat"] == "both")
    assert out["agent"] == "dqn_444_value_d16" and both["wins"] == 2
