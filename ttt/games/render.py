"""Pictures of positions: SVG (plain strings, no dependency), RGB arrays and PNG (matplotlib, the ``plot`` extra).

Every board is drawn the same way: a 2D board as one grid, a 3D board as its layers side by side
(layer 0 on the left; under gravity layer 0 is the bottom), rows and columns numbered in the margins
as in the text rendering. On top of the pieces (X blue crosses, O red rings):

* the last move: a thick purple frame around its cell;
* the winning line: its cells filled gold and joined by an orange stroke through their centres, so a
  line through all four layers of Qubic (0-21-42-63) reads at a glance;
* move values (optional, e.g. an agent's ``action_values``): a heat map on the empty cells, green for
  values good for the mover, red for bad ones (full colour at +-1), with the value printed in the cell;
* a move played and the right moves (optional, e.g. a position of a tactics suite a player missed):
  a red frame around the played cell, green frames around the right ones.

``scene`` lays the picture out once as a list of shapes in pixel coordinates; ``render_svg`` writes
them as SVG and ``render_rgb`` / ``save_png`` draw the same shapes with matplotlib, so the two agree.
``render_text`` is the text form (``render_board`` plus the winning line and the last move).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np

from ttt.games.rules import FIRST, Game, render_board

CELL = 40  # pixels per cell
PAD = 10  # outer padding
MARGIN = 16  # room for the row and column numbers
GAP = 22  # between the layers of a 3D board
TITLE = 22  # height of the title row (layer names, or the caption of a 2D board)

X_COLOUR, O_COLOUR = "#1f5fbf", "#c0392b"
GRID, EMPTY, TEXT = "#7f7f7f", "#ffffff", "#333333"
WIN_FILL, WIN_STROKE, LAST_MOVE = "#ffe066", "#e67e00", "#7b2cbf"
PLAYED, RIGHT = "#d62728", "#2ca02c"  # the frames of a move played and of the right moves
# the SVG class of each frame, so that a reader (or a test) can find them
FRAME_CLASS = {LAST_MOVE: "last-move", PLAYED: "played-move", RIGHT: "right-move"}
GOOD, BAD = (46, 158, 79), (217, 83, 79)  # heat map ends, RGB


@dataclass
class Scene:
    """A picture as shapes in pixel coordinates (y down): ``("rect", x, y, w, h, fill, stroke, width)``,
    ``("circle", cx, cy, r, stroke, width)``, ``("line", x1, y1, x2, y2, stroke, width)``,
    ``("polyline", points, stroke, width)``, ``("text", x, y, text, size, colour)`` (centred)."""

    width: int
    height: int
    shapes: list[tuple] = field(default_factory=list)


def _heat(value: float) -> str:
    t = float(np.clip(abs(value), 0.0, 1.0))
    end = GOOD if value > 0 else BAD
    r, g, b = (round(255 + (e - 255) * t) for e in end)
    return f"#{r:02x}{g:02x}{b:02x}"


def _values_array(game: Game, values) -> np.ndarray | None:
    if values is None:
        return None
    out = np.full(game.num_cells, np.nan)
    if isinstance(values, Mapping):
        for cell, v in values.items():
            out[int(cell)] = float(v)
    else:
        out[:] = np.asarray(values, dtype=float).ravel()
    return out


def scene(game: Game, board: Sequence[int], last_move: int | None = None,
          values: Mapping[int, float] | Sequence[float] | None = None, title: str | None = None, *,
          played: int | None = None, right_moves: Sequence[int] = ()) -> Scene:
    """Lay out ``board`` (+1 X / -1 O / 0 per cell) of ``game``; see the module docstring.

    ``last_move``: a cell to frame (None or -1: none). ``values``: move values by cell (a mapping, or
    a sequence of ``cells`` numbers with NaN for none), drawn on empty cells. ``title``: a caption
    above a 2D board (3D boards name their layers there). ``played`` (None or -1: none) and
    ``right_moves``: cells framed red and green, a move a player made and the moves it should have.
    """
    board = np.asarray(board, dtype=np.int64).ravel()
    if board.shape != (game.num_cells,):
        raise ValueError(f"board {game.name}: need {game.num_cells} cells, got {board.size}")
    if game.d not in (2, 3):
        raise ValueError(f"board {game.name}: pictures are drawn for 2D and 3D boards")
    n = game.n
    panels = n if game.d == 3 else 1
    panel = MARGIN + n * CELL
    width = 2 * PAD + panels * panel + (panels - 1) * GAP
    if game.d == 2 and title:  # a caption wider than the grid widens the picture (about 7.5 px a letter)
        width = max(width, 2 * PAD + round(len(title) * 7.5))
    height = 2 * PAD + TITLE + MARGIN + n * CELL
    out = Scene(width, height)
    heat = _values_array(game, values)
    line = game.winning_line(board)
    top = PAD + TITLE + MARGIN

    def origin(cell: int) -> tuple[float, float]:
        coords = game.coords[cell]
        z, r, c = (coords if game.d == 3 else (0, *coords))
        return PAD + z * (panel + GAP) + MARGIN + c * CELL, top + r * CELL

    for z in range(panels):
        left = PAD + z * (panel + GAP) + MARGIN
        caption = f"layer {z}" + (" (bottom)" if game.gravity and z == 0 else "") if game.d == 3 else (title or "")
        if caption:
            x = left + n * CELL / 2 if game.d == 3 else width / 2
            out.shapes.append(("text", x, PAD + TITLE / 2, caption, 13, TEXT))
        for i in range(n):  # coordinates in the margins, as the text rendering numbers them
            out.shapes.append(("text", left + (i + 0.5) * CELL, top - MARGIN / 2, str(i), 10, GRID))
            out.shapes.append(("text", left - MARGIN / 2, top + (i + 0.5) * CELL, str(i), 10, GRID))
    for cell in range(game.num_cells):
        x, y = origin(cell)
        fill = EMPTY
        if line is not None and cell in line:
            fill = WIN_FILL
        elif heat is not None and board[cell] == 0 and not np.isnan(heat[cell]):
            fill = _heat(heat[cell])
        out.shapes.append(("rect", x, y, CELL, CELL, fill, GRID, 1))
        if board[cell] == FIRST:
            k = CELL * 0.25
            out.shapes.append(("line", x + k, y + k, x + CELL - k, y + CELL - k, X_COLOUR, 4))
            out.shapes.append(("line", x + k, y + CELL - k, x + CELL - k, y + k, X_COLOUR, 4))
        elif board[cell] == -FIRST:
            out.shapes.append(("circle", x + CELL / 2, y + CELL / 2, CELL * 0.29, O_COLOUR, 4))
        elif heat is not None and not np.isnan(heat[cell]):
            out.shapes.append(("text", x + CELL / 2, y + CELL / 2, f"{heat[cell]:+.2f}", 10, TEXT))
    if last_move is not None and last_move >= 0:
        x, y = origin(int(last_move))
        out.shapes.append(("rect", x + 2, y + 2, CELL - 4, CELL - 4, "none", LAST_MOVE, 3))
    # inside the last-move frame, so that a cell can carry both
    for cell, colour in [(c, RIGHT) for c in right_moves] + [(played, PLAYED)]:
        if cell is not None and 0 <= int(cell) < game.num_cells:
            x, y = origin(int(cell))
            out.shapes.append(("rect", x + 6, y + 6, CELL - 12, CELL - 12, "none", colour, 3))
    if line is not None:
        centres = [(x + CELL / 2, y + CELL / 2) for x, y in map(origin, line)]
        out.shapes.append(("polyline", centres, WIN_STROKE, 3))
    return out


def render_svg(game: Game, board: Sequence[int], last_move: int | None = None,
               values: Mapping[int, float] | Sequence[float] | None = None, title: str | None = None, *,
               played: int | None = None, right_moves: Sequence[int] = ()) -> str:
    """The position as an SVG document (a string); arguments as ``scene``."""
    s = scene(game, board, last_move, values, title, played=played, right_moves=right_moves)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{s.width}" height="{s.height}" '
             f'viewBox="0 0 {s.width} {s.height}" font-family="sans-serif">',
             f'<rect width="{s.width}" height="{s.height}" fill="#ffffff"/>']
    for kind, *a in s.shapes:
        if kind == "rect":
            x, y, w, h, fill, stroke, sw = a
            css = f' class="{FRAME_CLASS[stroke]}"' if stroke in FRAME_CLASS and fill == "none" else ""
            parts.append(f'<rect{css} x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{fill}" '
                         f'stroke="{stroke}" stroke-width="{sw}"/>')
        elif kind == "circle":
            cx, cy, r, stroke, sw = a
            parts.append(f'<circle cx="{cx:g}" cy="{cy:g}" r="{r:g}" fill="none" stroke="{stroke}" '
                         f'stroke-width="{sw}"/>')
        elif kind == "line":
            x1, y1, x2, y2, stroke, sw = a
            parts.append(f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{stroke}" '
                         f'stroke-width="{sw}" stroke-linecap="round"/>')
        elif kind == "polyline":
            points, stroke, sw = a
            pts = " ".join(f"{x:g},{y:g}" for x, y in points)
            parts.append(f'<polyline class="winning-line" points="{pts}" fill="none" stroke="{stroke}" '
                         f'stroke-width="{sw}" stroke-opacity="0.85" stroke-linejoin="round"/>')
        else:
            x, y, text, size, colour = a
            parts.append(f'<text x="{x:g}" y="{y:g}" font-size="{size}" fill="{colour}" text-anchor="middle" '
                         f'dominant-baseline="central">{escape(text)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Circle, Rectangle
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError("images of positions need matplotlib (the plot extra): pip install -e '.[plot]'",
                                  name=e.name) from None
    return Figure, FigureCanvasAgg, Circle, Rectangle


def _figure(s: Scene, scale: float):
    Figure, FigureCanvasAgg, Circle, Rectangle = _matplotlib()
    dpi = 100 * scale
    fig = Figure(figsize=(s.width / 100, s.height / 100), dpi=dpi)
    FigureCanvasAgg(fig)  # Agg on this figure only: no pyplot, no global backend
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, s.width)
    ax.set_ylim(s.height, 0)
    ax.axis("off")
    pt = 72 / 100  # one pixel of the layout in points
    for kind, *a in s.shapes:
        if kind == "rect":
            x, y, w, h, fill, stroke, sw = a
            ax.add_patch(Rectangle((x, y), w, h, facecolor=fill, edgecolor=stroke, linewidth=sw * pt))
        elif kind == "circle":
            cx, cy, r, stroke, sw = a
            ax.add_patch(Circle((cx, cy), r, facecolor="none", edgecolor=stroke, linewidth=sw * pt))
        elif kind == "line":
            x1, y1, x2, y2, stroke, sw = a
            ax.plot([x1, x2], [y1, y2], color=stroke, linewidth=sw * pt, solid_capstyle="round")
        elif kind == "polyline":
            points, stroke, sw = a
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, color=stroke, linewidth=sw * pt, alpha=0.85, solid_joinstyle="round")
        else:
            x, y, text, size, colour = a
            ax.text(x, y, text, fontsize=size * pt, color=colour, ha="center", va="center")
    return fig


def render_rgb(game: Game, board: Sequence[int], last_move: int | None = None,
               values: Mapping[int, float] | Sequence[float] | None = None, title: str | None = None,
               scale: float = 1.0, *, played: int | None = None, right_moves: Sequence[int] = ()) -> np.ndarray:
    """The position as an (H, W, 3) uint8 image (matplotlib); ``scale`` 2 doubles the resolution."""
    fig = _figure(scene(game, board, last_move, values, title, played=played, right_moves=right_moves), scale)
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()


def save_png(path: str | Path, game: Game, board: Sequence[int], last_move: int | None = None,
             values: Mapping[int, float] | Sequence[float] | None = None, title: str | None = None,
             scale: float = 2.0, *, played: int | None = None, right_moves: Sequence[int] = ()) -> Path:
    """Write the position as a PNG (matplotlib); returns the path."""
    fig = _figure(scene(game, board, last_move, values, title, played=played, right_moves=right_moves), scale)
    fig.savefig(path, dpi=100 * scale)
    return Path(path)


def line_text(game: Game, cells: Sequence[int]) -> str:
    """Cells for people: ``0,0,0 - 1,1,1 - 2,2,2 - 3,3,3 (cells 0, 21, 42, 63)``."""
    return " - ".join(game.cell_label(c) for c in cells) + f" (cells {', '.join(map(str, cells))})"


def render_text(game: Game, board: Sequence[int], last_move: int | None = None) -> str:
    """``render_board`` plus a line for the last move and, once a line is complete, the winning line."""
    lines = [render_board(game, board)]
    if last_move is not None and last_move >= 0:
        lines.append(f"last move: {last_move} ({game.cell_label(int(last_move))})")
    line = game.winning_line(board)
    if line is not None:
        lines.append(f"{'X' if board[line[0]] == FIRST else 'O'} wins along {line_text(game, line)}")
    return "\n".join(lines)
