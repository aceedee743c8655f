"""The bitboard face of the rules (search rollouts): legal cells, completing cells and random playouts
agree with ``State`` and ``threats`` on every board, and playouts from the empty board reproduce the
random-play baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ttt.games import BOARDS, make_game
from ttt.games.bitboard import bitboards
from ttt.games.threats import completing_cells, completing_moves

# random vs random from the empty board: (first player wins, second player wins), docs/rules.md
RANDOM_PLAY = {"3x3": (0.582, 0.291), "4x4x4_gravity": (0.552, 0.448)}


def random_positions(board: str, count: int, seed: int = 0):
    """Unfinished positions 0..cells-2 plies into seeded random games."""
    game = make_game(board)
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        state = game.initial_state()
        for _ in range(rng.integers(0, game.num_cells - 1)):
            if state.is_terminal():
                break
            state = state.apply(int(rng.choice(state.legal_actions())))
        if not state.is_terminal():
            out.append(state)
    return out


def cells_of(mask: int, cells: int) -> np.ndarray:
    return np.array([bool(mask >> c & 1) for c in range(cells)])


@pytest.mark.parametrize("board", BOARDS)
def test_masks_playable_and_completing_cells_agree_with_the_rules(board):
    game, bits = make_game(board), bitboards(make_game(board))
    for state in random_positions(board, 150):
        first, second = bits.masks(state.board)
        np.testing.assert_array_equal(cells_of(first, game.num_cells), np.array(state.board) == 1)
        np.testing.assert_array_equal(cells_of(second, game.num_cells), np.array(state.board) == -1)
        playable = bits.playable(first, second)
        np.testing.assert_array_equal(cells_of(playable, game.num_cells), state.legal_mask())
        board_row = np.array(state.board, dtype=np.int8)[None]
        for player, mine, theirs in ((1, first, second), (-1, second, first)):
            who = np.array([player], dtype=np.int8)
            np.testing.assert_array_equal(cells_of(bits.completing(mine, theirs), game.num_cells),
                                          completing_cells(board_row, who, game)[0])
            np.testing.assert_array_equal(cells_of(bits.completing(mine, theirs) & playable, game.num_cells),
                                          completing_moves(board_row, who, state.legal_mask()[None], game)[0])


@pytest.mark.parametrize("board", BOARDS)
def test_random_playouts_are_legal_games_with_the_rules_winner(board):
    bits = bitboards(make_game(board))
    rng = np.random.default_rng(1)
    for state in random_positions(board, 60, seed=2):
        moves: list[int] = []
        winner = bits.random_playout(*bits.masks(state.board), state.to_play(), rng, moves)
        for m in moves:
            assert not state.is_terminal()  # the playout stopped at the first finished position
            state = state.apply(m)  # raises on an illegal move
        assert state.is_terminal() and state.winner() == winner


@pytest.mark.parametrize("board, games", [("3x3", 20_000), ("4x4x4_gravity", 4_000)])
def test_random_playouts_from_the_start_reproduce_random_play(board, games):
    bits = bitboards(make_game(board))
    rng = np.random.default_rng(3)
    winners = np.array([bits.random_playout(0, 0, 1, rng) for _ in range(games)])
    for rate, expected in zip(((winners == 1).mean(), (winners == -1).mean()), RANDOM_PLAY[board], strict=True):
        assert abs(rate - expected) <= 4.5 * math.sqrt(expected * (1 - expected) / games), (rate, expected)
