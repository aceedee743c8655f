"""ttt.games.threats against explicit afterstates: wins, forced losses and forks on every board."""

import numpy as np
import pytest

from ttt.games import BatchedGames, make_game, random_legal_actions
from ttt.games.threats import completing_moves, forced_wins, move_tactics
from ttt.players.search import WIN, AlphaBetaPlayer


def random_positions(game, n, seed):
    """Boards of n random games, each stopped at a random ply before its end (numpy arrays)."""
    rng = np.random.default_rng(seed)
    g = BatchedGames(game, n)
    stop = rng.integers(0, game.num_cells, size=n)
    boards, players = [], []
    for ply in range(game.num_cells):
        take = (stop == ply) & ~g.done
        boards.append(g.board[take].copy())
        players.append(g.to_play[take].copy())
        if g.done.all():
            break
        g.play(random_legal_actions(g.legal_mask(), rng))
    return np.concatenate(boards), np.concatenate(players)


def brute_force(game, board, player):
    """Masks computed from the explicit afterstate of every legal move."""
    legal = _legal(game, board)
    win = np.zeros(game.num_cells, bool)
    loss = np.zeros(game.num_cells, bool)
    fork = np.zeros(game.num_cells, bool)
    for a in np.flatnonzero(legal):
        after = board.copy()
        after[a] = player
        if completing_moves(board[None], np.array([player]), legal[None], game)[0, a]:
            win[a] = True
            continue
        la = _legal(game, after)
        theirs = completing_moves(after[None], np.array([-player]), la[None], game)[0]
        mine = completing_moves(after[None], np.array([player]), la[None], game)[0]
        loss[a] = theirs.any()
        fork[a] = not theirs.any() and mine.sum() >= 2
    return legal, win, loss, fork


def _legal(game, board):
    legal = board == 0
    below = game.below
    has = below >= 0
    legal[has] &= board[below[has]] != 0
    return legal


@pytest.mark.parametrize("name", ["3x3", "4x4", "3x3x3", "4x4x4", "4x4x4_gravity"])
def test_move_tactics_matches_explicit_afterstates(name):
    game = make_game(name)
    boards, players = random_positions(game, 300, seed=11)
    legal = np.stack([_legal(game, b) for b in boards])
    t = move_tactics(boards, players, legal, game)
    counts = np.zeros(3, int)
    for i in range(len(boards)):
        _, win, loss, fork = brute_force(game, boards[i], players[i])
        assert (t.win[i] == win).all(), (name, i)
        assert (t.loss[i] == loss).all(), (name, i)
        assert (t.fork[i] == fork).all(), (name, i)
        counts += [win.any(), loss.any(), fork.any()]
    # the sample holds positions of every kind, so each mask was really compared
    assert (counts > 0).all(), counts


def test_fork_and_loss_by_hand_on_3x3():
    game = make_game("3x3")
    x = np.array([1], np.int8)

    def tactics(board):
        board = np.array(board, dtype=np.int8)
        return move_tactics(board[None], x, (board == 0)[None], game)

    # O holds 1 and 4 and threatens 7: every X move but the block loses at once
    t = tactics([1, -1, 0,
                 0, -1, 0,
                 0, 0, 1])
    assert not t.win[0].any()
    assert set(np.flatnonzero(t.loss[0])) == {2, 3, 5, 6}  # every legal move but the block, 7
    assert not t.fork[0].any()
    # X holds two corners, O the centre: the other corners each make two winning cells
    t = tactics([1, 0, 0,
                 0, -1, 0,
                 0, 0, 1])
    assert set(np.flatnonzero(t.fork[0])) == {2, 6}
    assert not t.loss[0].any() and not t.win[0].any()
    # X holds 0 and 4, O holds 7 and 8: X must take 6, which also makes two winning cells
    t = tactics([1, 0, 0,
                 0, 1, 0,
                 0, -1, -1])
    assert set(np.flatnonzero(t.win[0])) == set()  # 8 is taken by O
    assert set(np.flatnonzero(t.loss[0])) == {1, 2, 3, 5}  # O completes 6-7-8 unless X takes 6
    assert set(np.flatnonzero(t.fork[0])) == {6}  # 6 blocks and makes 2 (2-4-6) and 3 (0-3-6)


@pytest.mark.parametrize("name", ["3x3", "4x4", "3x3x3", "4x4x4", "4x4x4_gravity"])
def test_forced_wins_contain_the_forks_and_equal_them_without_gravity(name):
    game = make_game(name)
    boards, players = random_positions(game, 300, seed=12)
    legal = np.stack([_legal(game, b) for b in boards])
    fork = move_tactics(boards, players, legal, game).fork
    forced = forced_wins(boards, players, legal, game)
    assert fork.any()
    assert not (fork & ~forced).any()  # a fork wins at the next move whatever the reply
    if not game.gravity:
        assert (forced == fork).all()  # a reply cannot open a winning cell for the other side


def test_forced_wins_match_depth_3_search():
    # the search scores a win d plies away as WIN - d; a forced win in three plies (not one) is WIN - 3
    for name in ("4x4x4", "4x4x4_gravity"):
        game = make_game(name)
        boards, players = random_positions(game, 400, seed=13)
        legal = np.stack([_legal(game, b) for b in boards])
        forced = forced_wins(boards, players, legal, game)
        rows = np.flatnonzero(forced.any(1))[:3]
        assert len(rows) == 3
        for i in rows:
            scores = AlphaBetaPlayer(game, depth=3).move_scores(game.state_from_board(boards[i]), all_exact=True)
            assert {m for m, v in scores.items() if v == WIN - 3} == set(np.flatnonzero(forced[i])), (name, i)


def test_forced_win_by_a_threat_whose_block_opens_the_cell_above():
    # Score Four (cell = 16 * layer + 4 * row + col), X to move. X holds 1 and 2 of the bottom row 0-3
    # and 23, 27, 31 of the line 19-23-27-31 one layer up. X at 0 threatens 3 only; O must block at 3,
    # which makes 19 playable: X wins there. X at 3 threatens 0 and makes 19 playable at once: a fork.
    game = make_game("4x4x4_gravity")
    board = np.zeros(64, np.int8)
    board[[1, 2, 15, 23, 27, 31]] = 1
    board[[5, 7, 10, 11, 12, 13]] = -1
    x = np.array([1], np.int8)
    legal = _legal(game, board)[None]
    assert not completing_moves(board[None], x, legal, game).any()
    assert not completing_moves(board[None], -x, legal, game).any()
    assert set(np.flatnonzero(forced_wins(board[None], x, legal, game)[0])) == {0, 3}
    assert set(np.flatnonzero(move_tactics(board[None], x, legal, game).fork[0])) == {3}


def _forced_in_five(game, board, player, a):
    """Brute force: after a, every opponent reply but one loses at once, and after that one the mover
    has a fork (move_tactics' fork is checked against explicit afterstates above)."""
    after = board.copy()
    after[a] = player
    legal = _legal(game, after)
    opp = np.array([-player], np.int8)
    replies = move_tactics(after[None], opp, legal[None], game)
    if replies.win.any():
        return False
    saving = np.flatnonzero(legal & ~replies.loss[0])
    if len(saving) != 1:
        return False
    block = after.copy()
    block[saving[0]] = -player
    mover = np.array([player], np.int8)
    return bool(move_tactics(block[None], mover, _legal(game, block)[None], game).fork.any())


@pytest.mark.parametrize("name", ["3x3x3", "4x4x4", "4x4x4_gravity"])
def test_threat_forks_match_a_brute_force_search(name):
    from ttt.games.threats import threat_forks

    game = make_game(name)
    boards, players = random_positions(game, 200, seed=5)
    legal = np.stack([_legal(game, b) for b in boards])
    t = move_tactics(boards, players, legal, game)
    found = threat_forks(boards, players, legal, game, t)
    hits = 0
    for i in range(len(boards)):
        for a in np.flatnonzero(legal[i] & ~t.win[i] & ~t.loss[i] & ~t.fork[i]):
            assert found[i, a] == _forced_in_five(game, boards[i], players[i], a), (name, i, a)
        hits += found[i].any()
    assert hits > 0


def test_threat_depths_in_slices_equal_one_pass(monkeypatch):
    # memory is bounded by searching THREAT_ROWS boards at a time, at every level of the chain
    import ttt.games.threats as threats

    game = make_game("4x4x4")
    boards, players = random_positions(game, 120, seed=7)
    legal = np.stack([_legal(game, b) for b in boards])
    whole = threats.threat_depths(boards, players, legal, game, depth=3)
    assert (whole > 1).any()  # chains longer than one threat occur
    monkeypatch.setattr(threats, "THREAT_ROWS", 7)
    np.testing.assert_array_equal(threats.threat_depths(boards, players, legal, game, depth=3), whole)


@pytest.mark.parametrize("torch_arrays", [False, True])
def test_tactics_of_no_games_are_empty_on_either_array_library(torch_arrays):
    """A ply may ask for the tactics of no games (a side-by-side run whose learners have no game to move):
    empty answers of the right shape, with numpy and with the torch arrays of ``device=cuda``'s code path."""
    import torch

    game = make_game("4x4x4")
    board = np.zeros((0, game.num_cells), dtype=np.int8)
    to_play = np.ones(0, dtype=np.int8)
    legal = board == 0
    if torch_arrays:
        board, to_play, legal = (torch.from_numpy(x) for x in (board, to_play, legal))
    wins = completing_moves(board, to_play, legal, game)
    assert tuple(wins.shape) == (0, game.num_cells)
    t = move_tactics(board, to_play, legal, game)
    assert tuple(t.loss.shape) == (0, game.num_cells)
