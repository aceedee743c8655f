"""Automorphisms of a board's line hypergraph: the cell permutations that map lines to lines."""

from __future__ import annotations

import numpy as np


def line_automorphisms(num_cells: int, lines: np.ndarray, cell_class: np.ndarray | None = None,
                       same_group: np.ndarray | None = None) -> np.ndarray:
    """All permutations p of the cells with {p(line)} == {line} for the given lines.

    ``cell_class`` (optional) restricts cell i to images of the same class (e.g. a gravity layer);
    ``same_group`` (optional) labels groups of cells (e.g. gravity columns) that must map onto groups.
    Backtracking over cells with pruning on invariants every automorphism preserves (number of lines
    through a cell, and whether two cells share a line); every complete candidate is checked
    against the line set. Returns an int64 array (group size, cells), identity first.
    """
    lines = np.asarray(lines)
    collinear = np.zeros((num_cells, num_cells), dtype=np.int8)
    degree = np.zeros(num_cells, dtype=np.int64)
    for line in lines:
        collinear[np.ix_(line, line)] += 1
        degree[line] += 1
    relations = [collinear]
    if same_group is not None:
        same_group = np.asarray(same_group)
        relations.append((same_group[:, None] == same_group[None, :]).astype(np.int8))
    klass = degree if cell_class is None else degree * (int(np.max(cell_class)) + 1) + np.asarray(cell_class)

    # visit cells so that each new cell shares lines with already placed ones (strong pruning)
    order = [int(np.argmax(degree))]
    while len(order) < num_cells:
        placed = np.array(order)
        score = (collinear[:, placed] > 0).sum(1).astype(float)
        score[placed] = -1
        order.append(int(np.argmax(score)))

    line_set = {tuple(sorted(map(int, line))) for line in lines}
    image = np.full(num_cells, -1, dtype=np.int64)
    used = np.zeros(num_cells, dtype=bool)
    found: list[np.ndarray] = []

    def extend(depth: int) -> None:
        if depth == num_cells:
            if all(tuple(sorted(image[list(line)])) in line_set for line in lines):
                found.append(image.copy())
            return
        cell = order[depth]
        placed = np.array(order[:depth], dtype=np.int64)
        ok = (klass == klass[cell]) & ~used
        if depth:
            imgs = image[placed]
            for rel in relations:
                ok &= (rel[:, imgs] == rel[cell, placed]).all(axis=1)
        for cand in np.flatnonzero(ok):
            image[cell] = cand
            used[cand] = True
            extend(depth + 1)
            used[cand] = False
        image[cell] = -1

    extend(0)
    perms = np.array(found, dtype=np.int64)
    identity = np.arange(num_cells)
    first = int(np.flatnonzero((perms == identity).all(1))[0])
    perms[[0, first]] = perms[[first, 0]]
    return perms


def line_orbits(lines: np.ndarray, symmetries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lines' orbits under a symmetry group, and every line's cells in an order the group gives.

    ``lines`` (L, k) cell indices, ``symmetries`` (G, cells) permutations that map lines to lines
    (``Game.symmetries``). Returns ``(orbit, oriented)``: ``orbit`` (L,) int64 numbers the orbits
    0, 1, ... in order of their first line; ``oriented`` (L, k) lists each line's cells as the image,
    cell by cell, of the first line of its orbit under one group element, so that position j of
    every line in an orbit is the image of position j of the orbit's first line (identity for the
    first line itself). Weights shared along positions of an orbit's lines (``StructuredLayer``'s
    ``tie_orbits``) then see symmetric cells alike.
    """
    lines = np.asarray(lines, dtype=np.int64)
    symmetries = np.asarray(symmetries, dtype=np.int64)
    index = {tuple(sorted(line)): i for i, line in enumerate(lines.tolist())}
    orbit = np.full(len(lines), -1, dtype=np.int64)
    oriented = lines.copy()
    count = 0
    for i, first in enumerate(lines):
        if orbit[i] >= 0:
            continue
        for perm in symmetries:  # identity first: the orbit's first line keeps its own order
            image = perm[first]
            j = index.get(tuple(sorted(image.tolist())))
            if j is None:
                raise ValueError("symmetries must map every line onto a line")
            if orbit[j] < 0:
                orbit[j] = count
                oriented[j] = image
        count += 1
    return orbit, oriented


def symmetry_sample(symmetries: np.ndarray, count: int, seed: int = 0) -> np.ndarray:
    """(count, cells) rows of ``symmetries`` (a group, identity first: ``Game.symmetries``): the identity and
    ``count - 1`` others drawn without replacement by a generator of ``seed``, the same rows on every
    machine; the whole group, in its own order, when ``count`` is its size. A ValueError past its size."""
    symmetries = np.asarray(symmetries, dtype=np.int64)
    if not 1 <= count <= len(symmetries):
        raise ValueError(f"symmetries must be between 1 and the board's {len(symmetries)}, got {count}")
    if count == len(symmetries):
        return symmetries
    others = np.random.default_rng(seed).choice(np.arange(1, len(symmetries)), count - 1, replace=False)
    return symmetries[np.concatenate([[0], np.sort(others)])]
