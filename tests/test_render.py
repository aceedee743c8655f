"""Pictures of positions: the SVG marks the winning line (a Qubic space diagonal), the last move and
move values; images need matplotlib and come back as (H, W, 3) uint8; text names the winning line."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from ttt.games import BOARDS, make_game
from ttt.games.render import CELL, PLAYED, RIGHT, WIN_FILL, render_svg, render_text, scene


def qubic_space_diagonal() -> tuple[list[int], int]:
    """X on the space diagonal 0-21-42-63 (its last piece on 63), O on four cells of layer 0."""
    board = [0] * 64
    for c in (0, 21, 42, 63):
        board[c] = 1
    for c in (1, 2, 5, 17):
        board[c] = -1
    return board, 63


def test_qubic_space_diagonal_renders_with_its_winning_line():
    game = make_game("4x4x4")
    board, last = qubic_space_diagonal()
    svg = render_svg(game, board, last_move=last)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    # the stroke runs through the centres of cells 0, 21, 42 and 63, one per layer, in that order
    points = re.search(r'class="winning-line" points="([^"]+)"', svg).group(1).split()
    centres = [tuple(map(float, p.split(","))) for p in points]
    s = scene(game, board, last)
    cells = {(x, y) for kind, x, y, w, *_ in s.shapes if kind == "rect" and w == CELL}
    assert len(centres) == 4 and all((x - CELL / 2, y - CELL / 2) in cells for x, y in centres)
    assert [x for x, _ in centres] == sorted(x for x, _ in centres)  # left to right: layers 0 to 3
    # exactly the four cells of the line are filled gold
    assert svg.count(f'fill="{WIN_FILL}"') == 4
    assert svg.count('class="last-move"') == 1 and svg.count("<circle") == 4  # four O pieces
    assert all(f">layer {z}<" in svg for z in range(4))


def test_no_line_no_mark_and_every_board_renders():
    for name in BOARDS:
        game = make_game(name)
        svg = render_svg(game, [0] * game.num_cells)
        assert "winning-line" not in svg and "last-move" not in svg
        assert svg.count("<rect") == 1 + game.num_cells  # the background and one square per cell
    gravity = render_svg(make_game("4x4x4_gravity"), [0] * 64)
    assert "layer 0 (bottom)" in gravity


def test_move_values_are_a_heat_map_on_empty_cells():
    game = make_game("3x3")
    board = [1, -1, 0, 0, 0, 0, 0, 0, 0]
    svg = render_svg(game, board, values={0: 0.9, 2: 1.0, 4: -1.0, 8: 0.0})
    assert ">+1.00<" in svg and ">-1.00<" in svg and ">+0.00<" in svg
    assert ">+0.90<" not in svg  # an occupied cell shows its piece, not a value
    assert 'fill="#2e9e4f"' in svg and 'fill="#d9534f"' in svg  # full green at +1, full red at -1
    with pytest.raises(ValueError, match="need 9 cells"):
        render_svg(game, [0] * 8)


def test_rgb_image_and_png():
    pytest.importorskip("matplotlib")
    from ttt.games.render import render_rgb

    game = make_game("4x4x4")
    board, last = qubic_space_diagonal()
    s = scene(game, board, last)
    image = render_rgb(game, board, last)
    assert image.shape == (s.height, s.width, 3) and image.dtype == np.uint8
    gold = np.array([int(WIN_FILL[i:i + 2], 16) for i in (1, 3, 5)])
    assert (np.abs(image.astype(int) - gold).sum(axis=2) == 0).sum() > 4 * (CELL // 2) ** 2  # the gold cells
    assert render_rgb(game, board, last, scale=2).shape == (2 * s.height, 2 * s.width, 3)


def test_png_written(tmp_path):
    pytest.importorskip("matplotlib")
    from ttt.games.render import save_png

    path = save_png(tmp_path / "q.png", make_game("4x4x4"), *qubic_space_diagonal())
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_images_without_matplotlib_say_what_to_install(monkeypatch):
    from ttt.games.render import render_rgb

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ModuleNotFoundError, match=r"need matplotlib \(the plot extra\): pip install"):
        render_rgb(make_game("3x3"), [0] * 9)


def test_text_names_the_winning_line_and_the_last_move():
    game = make_game("4x4x4")
    board, last = qubic_space_diagonal()
    text = render_text(game, board, last)
    assert text.splitlines()[-2:] == ["last move: 63 (3,3,3)",
                                      "X wins along 0,0,0 - 1,1,1 - 2,2,2 - 3,3,3 (cells 0, 21, 42, 63)"]
    assert game.winning_line(board) == (0, 21, 42, 63) and game.winning_line([0] * 64) is None


def test_the_move_played_and_the_right_moves_are_framed_in_their_cells():
    game = make_game("4x4x4")
    board = [0] * 64
    svg = render_svg(game, board, played=37, right_moves=[3, 63])
    assert svg.count('class="played-move"') == 1 and svg.count('class="right-move"') == 2
    s = scene(game, board, played=37, right_moves=[3, 63])
    cells = [(x, y) for kind, x, y, w, *_ in s.shapes if kind == "rect" and w == CELL]
    frames = {stroke: [] for stroke in (PLAYED, RIGHT)}
    for t in s.shapes:
        if t[0] == "rect" and t[6] in frames:
            frames[t[6]].append(cells.index((t[1] - 6, t[2] - 6)))  # inside the cell it marks
    assert frames == {PLAYED: [37], RIGHT: [3, 63]}
    plain = render_svg(game, board, played=-1)
    assert "played-move" not in plain and "right-move" not in plain
