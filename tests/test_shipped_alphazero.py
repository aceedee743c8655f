"""The shipped ``checkpoints/alphazero_444``: the recipe's settings (8 detectors a line) at the simulations and
rules its figures were measured with, a player that takes a win and blocks a threat, and loading in
``ttt.benchmark`` and ``ttt.play`` (``ttt.serve``: tests/test_serve.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from test_benchmark import compose_benchmark
from test_play import compose_play

import ttt.benchmark as bm
import ttt.play as tp
from ttt.agents import load_player
from ttt.checkpoint import load_checkpoint

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "alphazero_444" / "checkpoint.pt"
SIMULATIONS = 128  # the shipped player's simulations per move (docs/search.md, "The shipped alphazero_444")
PLAY_THREATS = 3  # and its rules at the root


def test_the_shipped_player_is_the_recipe_searching_128_simulations_a_move_with_its_rules():
    payload = load_checkpoint(SHIPPED, kind="alphazero", game="4x4x4")
    agent = payload["agent"]
    assert (agent["eval_simulations"], agent["play_threats"]) == (SIMULATIONS, PLAY_THREATS)
    assert (agent["policy_head"], agent["decisive"], agent["simulations"]) == ("lines", True, 192)
    assert payload["network"]["hidden"] == [64] and payload["network"]["kind"] == "structured"
    assert payload["network"]["detectors"] == 8  # docs/search.md, "Eight line detectors at the full budget"
    player = load_player(SHIPPED)
    assert (player.simulations, player.play_threats) == (SIMULATIONS, PLAY_THREATS)
    final = json.loads((SHIPPED.parent / "final_eval.json").read_text())
    assert final["episodes"] == 24000 and final["agent"] == "alphazero"
    assert "+experiment=alphazero_444" in final["command"] and "network.detectors=8" in final["command"]
    matches = json.loads((SHIPPED.parent / "matches.json").read_text())
    assert {r["opponent"] for r in matches["results"]} == {"benchmark", "alphabeta:1", "alphabeta:2", "alphabeta:3",
                                                          "mcts:1000"}
    assert {r["games"] for r in matches["results"] if r["seat"] == "both"} == {400}


@pytest.mark.parametrize("to_move", ["X", "O"])
def test_it_and_its_search_alone_take_a_win_and_block_a_threat(to_move):
    player = load_player(SHIPPED)
    board = [0] * 64
    board[0] = board[1] = board[2] = 1  # X threatens 3
    board[21] = board[42] = -1  # O: no line of its own
    if to_move == "X":
        board[63] = -1  # three each: X to move, and 3 wins
    state = player.game.state_from_board(board)
    assert state.to_play() == (1 if to_move == "X" else -1)
    assert player.act(state) == 3  # X wins there; O must block there: by the rules at the root
    assert player.without_rules().act(state) == 3  # and by the search alone


def test_it_loads_in_the_benchmark_and_beats_random(capsys):
    out = bm.benchmark(compose_benchmark(f"checkpoint={SHIPPED}", "opponents=[random]", "games=2"))
    both = next(r for r in out["results"] if r["seat"] == "both")
    assert out["agent"] == "alphazero_444" and both["wins"] == 2
    assert "alphazero_444 on 4x4x4" in capsys.readouterr().out


def test_it_loads_in_play_and_answers_a_move():
    out = io.StringIO()
    tally = tp.play(compose_play(f"checkpoint={SHIPPED}", "seat=first"), io.StringIO("21\nquit\n"), out)
    assert tally["games"] == 0 and "alphazero_444 plays" in out.getvalue()
