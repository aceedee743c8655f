"""The shipped ``checkpoints/alphazero_444``: the recipe's settings at the simulations its figures were
measured with, a search that takes a win and blocks a threat, and loading in ``ttt.benchmark`` and
``ttt.play`` (``ttt.serve``: tests/test_serve.py)."""

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
SIMULATIONS = 512  # the shipped player's simulations per move (docs/search.md, "The shipped alphazero_444")


def test_the_shipped_player_is_the_recipe_searching_512_simulations_a_move():
    payload = load_checkpoint(SHIPPED, kind="alphazero", game="4x4x4")
    agent = payload["agent"]
    assert agent["eval_simulations"] == SIMULATIONS
    assert (agent["policy_head"], agent["decisive"], agent["simulations"]) == ("lines", True, 64)
    assert payload["network"]["hidden"] == [64] and payload["network"]["kind"] == "structured"
    final = json.loads((SHIPPED.parent / "final_eval.json").read_text())
    assert final["episodes"] == 20000 and final["agent"] == "alphazero"
    assert "+experiment=alphazero_444" in final["command"]


@pytest.mark.parametrize("to_move", ["X", "O"])
def test_its_search_takes_a_win_and_blocks_a_threat(to_move):
    player = load_player(SHIPPED)
    board = [0] * 64
    board[0] = board[1] = board[2] = 1  # X threatens 3
    board[21] = board[42] = -1  # O: no line of its own
    if to_move == "X":
        board[63] = -1  # three each: X to move, and 3 wins
    state = player.game.state_from_board(board)
    assert state.to_play() == (1 if to_move == "X" else -1)
    assert player.act(state) == 3  # X wins there; O must block there


def test_it_loads_in_the_benchmark_and_beats_random(capsys):
    out = bm.benchmark(compose_benchmark(f"checkpoint={SHIPPED}", "opponents=[random]", "games=2"))
    both = next(r for r in out["results"] if r["seat"] == "both")
    assert out["agent"] == "alphazero_444" and both["wins"] == 2
    assert "alphazero_444 on 4x4x4" in capsys.readouterr().out


def test_it_loads_in_play_and_answers_a_move():
    out = io.StringIO()
    tally = tp.play(compose_play(f"checkpoint={SHIPPED}", "seat=first"), io.StringIO("21\nquit\n"), out)
    assert tally["games"] == 0 and "alphazero_444 plays" in out.getvalue()
