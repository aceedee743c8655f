"""Symmetry groups: sizes, group axioms, lines onto lines, canonical forms and orbit counts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ttt.games import BOARDS, make_game

GROUP_SIZES = {"3x3": 8, "4x4": 32, "3x3x3": 48, "4x4x4": 192, "4x4x4_gravity": 8}


def line_set(lines) -> set[frozenset[int]]:
    return {frozenset(int(c) for c in line) for line in lines}


def coordinate_map(n: int, d: int, axes: tuple[int, ...], flips: tuple[bool, ...], value_map=None) -> np.ndarray:
    """The cell permutation that permutes the axes, flips some, and relabels coordinates by ``value_map``."""
    coords = np.array(list(itertools.product(range(n), repeat=d)))
    new = coords[:, list(axes)]
    new = np.where(np.array(flips), n - 1 - new, new)
    if value_map is not None:
        new = np.asarray(value_map)[new]
    return np.ravel_multi_index(new.T, (n,) * d)


@pytest.mark.parametrize("board", BOARDS)
def test_group_size_identity_and_permutations(board):
    g = make_game(board)
    sym = g.symmetries
    assert sym.shape == (GROUP_SIZES[board], g.num_cells)
    assert (sym[0] == np.arange(g.num_cells)).all()
    assert all(sorted(row) == list(range(g.num_cells)) for row in sym.tolist())
    assert len({tuple(row) for row in sym.tolist()}) == len(sym)


@pytest.mark.parametrize("board", BOARDS)
def test_every_symmetry_maps_lines_onto_lines(board):
    g = make_game(board)
    lines = line_set(g.lines)
    for perm in g.symmetries:
        assert line_set(perm[g.lines]) == lines


@pytest.mark.parametrize("board", BOARDS)
def test_symmetries_form_a_group(board):
    g = make_game(board)
    group = {tuple(row) for row in g.symmetries.tolist()}
    sym = g.symmetries
    for a in sym:
        inverse = np.argsort(a)
        assert tuple(inverse) in group
        for b in sym:
            assert tuple(a[b]) in group


@pytest.mark.parametrize(("board", "d"), [("3x3", 2), ("3x3x3", 3)])
def test_odd_boards_have_exactly_the_cube_symmetries(board, d):
    # on 3^d boards the line-preserving maps are the rotations and reflections of the square/cube
    g = make_game(board)
    cube = {tuple(coordinate_map(3, d, axes, flips))
            for axes in itertools.permutations(range(d)) for flips in itertools.product((False, True), repeat=d)}
    assert {tuple(row) for row in g.symmetries.tolist()} == cube


def test_4x4_contains_middle_rows_and_columns_swap():
    g = make_game("4x4")
    swap = coordinate_map(4, 2, (0, 1), (False, False), value_map=[0, 2, 1, 3])
    group = {tuple(row) for row in g.symmetries.tolist()}
    assert tuple(swap) in group
    assert tuple(coordinate_map(4, 2, (1, 0), (True, False))) in group  # a rotation of the square
    # swapping only the middle rows is not a symmetry
    rows_only = np.array([[r if r in (0, 3) else 3 - r, c] for r in range(4) for c in range(4)])
    assert tuple(rows_only[:, 0] * 4 + rows_only[:, 1]) not in group


def test_qubic_has_cube_and_inside_out_symmetries():
    g = make_game("4x4x4")
    group = {tuple(row) for row in g.symmetries.tolist()}
    for axes in itertools.permutations(range(3)):
        for flips in itertools.product((False, True), repeat=3):
            assert tuple(coordinate_map(4, 3, axes, flips)) in group
    # the same relabelling of coordinates on every axis: middle pair swapped, or inside-out
    assert tuple(coordinate_map(4, 3, (0, 1, 2), (False,) * 3, value_map=[0, 2, 1, 3])) in group
    assert tuple(coordinate_map(4, 3, (0, 1, 2), (False,) * 3, value_map=[1, 0, 3, 2])) in group


def test_gravity_symmetries_keep_layers_and_columns():
    g = make_game("4x4x4_gravity")
    layer = g.coords[:, 0]
    column = g.coords[:, 1] * 4 + g.coords[:, 2]
    for perm in g.symmetries:
        assert (layer[perm] == layer).all()
        # cells of one column land in one column
        for col in range(16):
            assert len(set(column[perm[column == col]])) == 1


@pytest.mark.parametrize("board", BOARDS)
def test_canonical_invariant_and_key_equal_within_orbit(board):
    g = make_game(board)
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = g.initial_state()
        for _ in range(rng.integers(1, g.num_cells // 2)):
            if s.is_terminal():
                break
            s = s.apply(int(rng.choice(s.legal_actions())))
        b = s.array()
        canon, key = g.canonical(b), g.canonical_key(b)
        for perm in g.symmetries[rng.choice(len(g.symmetries), size=min(8, len(g.symmetries)), replace=False)]:
            image = b[perm]
            assert (g.canonical(image) == canon).all()
            assert g.canonical_key(image) == key


def all_positions(board: str) -> set[tuple[int, ...]]:
    """Every position reachable in legal play (a game stops at its first completed line)."""
    g = make_game(board)
    seen, frontier = set(), [g.initial_state()]
    while frontier:
        s = frontier.pop()
        if s.board in seen:
            continue
        seen.add(s.board)
        if not s.is_terminal():
            frontier.extend(s.apply(a) for a in s.legal_actions())
    return seen


def test_3x3_positions_and_orbits():
    g = make_game("3x3")
    positions = all_positions("3x3")
    assert len(positions) == 5478
    # orbits by brute force: the set of all images of each position
    orbits = {frozenset(tuple(np.array(b)[perm]) for perm in g.symmetries) for b in positions}
    assert len(orbits) == 765
    keys = {g.canonical_key(np.array(b)) for b in positions}
    assert len(keys) == 765  # canonical_key separates exactly the orbits
    canon = {tuple(g.canonical(np.array(b))) for b in positions}
    assert len(canon) == 765


def test_canonical_key_distinguishes_orbits_on_4x4():
    g = make_game("4x4")
    rng = np.random.default_rng(1)
    boards = [rng.choice([-1, 0, 1], size=16).astype(np.int8) for _ in range(30)]
    boards += [b[g.symmetries[rng.integers(1, 32)]] for b in boards]  # one image of each
    pairs_in_orbit = 0
    for a, b in itertools.combinations(boards, 2):
        same_orbit = any((a[perm] == b).all() for perm in g.symmetries)
        assert (g.canonical_key(a) == g.canonical_key(b)) == same_orbit
        pairs_in_orbit += same_orbit
    assert pairs_in_orbit >= 30
    # and a board with many images: all images share one key
    keys = {g.canonical_key(boards[0][perm]) for perm in g.symmetries}
    assert len(keys) == 1


# orbit sizes of the lines under each board's symmetry group (sorted): on Qubic the 4 main diagonals,
# and three orbits of 24 (the 48 axis lines split by the inside-out symmetries, and the 24 face diagonals)
LINE_ORBITS = {
    "3x3": [2, 2, 4],
    "4x4": [2, 8],
    "3x3x3": [3, 4, 6, 12, 12, 12],
    "4x4x4": [4, 24, 24, 24],
}


@pytest.mark.parametrize("board", sorted(LINE_ORBITS))
def test_line_orbits_sizes_and_orientation(board):
    from ttt.games.symmetry import line_orbits

    game = make_game(board)
    orbit, oriented = line_orbits(game.lines, game.symmetries)
    assert sorted(np.bincount(orbit).tolist()) == LINE_ORBITS[board]
    assert sorted(np.unique(orbit).tolist()) == list(range(orbit.max() + 1))
    # each oriented line has its line's cells, and is the image of its orbit's first line, cell by cell
    assert (np.sort(oriented, 1) == np.sort(game.lines, 1)).all()
    for o in range(orbit.max() + 1):
        members = np.flatnonzero(orbit == o)
        first = game.lines[members[0]]
        assert (oriented[members[0]] == first).all()
        reachable = {tuple(p[first]) for p in game.symmetries}
        for m in members:
            assert tuple(oriented[m]) in reachable
    # two lines in different orbits: no symmetry maps one onto the other
    a, b = np.flatnonzero(orbit == 0)[0], np.flatnonzero(orbit == 1)[0]
    assert not any(set(p[game.lines[a]]) == set(game.lines[b]) for p in game.symmetries)


def test_line_orbits_refuse_permutations_that_are_not_symmetries():
    from ttt.games.symmetry import line_orbits

    game = make_game("3x3")
    swap = np.arange(9)
    swap[[0, 1]] = [1, 0]  # swaps two cells: the diagonal 0-4-8 is sent to 1-4-8, not a line
    with pytest.raises(ValueError, match="line"):
        line_orbits(game.lines, np.stack([np.arange(9), swap]))
