"""What a person types and reads when playing: moves as cell numbers or coordinates, hints, and the
lines worth pointing at on a board. ``ttt.play`` (the terminal) and ``ttt.serve`` (the browser) share it.

* ``parse_move(state, text)``: a cell number (``row*n + col``, ``layer*n*n + row*n + col``), or
  coordinates ``row,col`` (2D) / ``layer,row,col`` (3D); on a gravity board also a column ``row,col``
  (the piece drops to its lowest empty cell). A ``MoveError`` carries the one-line reason otherwise.
* ``move_hint(agent, state)``: the agent's value of each legal move for the player to move
  (``Player.action_values``), and which of those values its move-selection rules decide rather than
  its network or search (a player with ``rules`` and ``without_rules()``: ``ttt.agents.dqn.DQNPlayer``,
  ``ttt.agents.alphazero.AlphaZeroPlayer``; ``ttt.games.exact.exact_values``).
* ``open_lines(state)``: every line one move from completion, for both players; ``winning_line(state)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ttt.games import BatchedGames, Game, IllegalMoveError, State
from ttt.games.exact import exact_values
from ttt.players import Player, has_rules

MAX_QUOTED = 20  # characters of a person's input that an error message quotes


class MoveError(ValueError):
    """Input that is not a legal move; the message is the one-line reason shown to the player."""


def quoted(text: str) -> str:
    """``text`` as an error quotes it: its first ``MAX_QUOTED`` characters, the length named when cut."""
    return repr(text) if len(text) <= MAX_QUOTED else f"{text[:MAX_QUOTED]!r}... ({len(text)} characters)"


def long_number(digits: str, quote: bool = True) -> str:
    """A number too long to be a cell, as an error names it: ``'1234567890...' (4000 digits)``."""
    shown = digits[:10] + "..."
    return f"{repr(shown) if quote else shown} ({len(digits.lstrip('+-'))} digits)"


def move_syntax(game: Game) -> str:
    """How moves are typed on ``game``, for prompts and error messages."""
    coords = "row,col" if game.d == 2 else "layer,row,col"
    text = f"a cell number (0-{game.num_cells - 1}) or {coords}"
    if game.gravity:
        text += " or a column row,col"
    return text


def parse_move(state: State, text: str, commands: str = "") -> int:
    """The cell the person means by ``text`` in ``state``; MoveError with the reason otherwise.

    ``commands`` (e.g. ``"hint, undo"``) is named in the message for text that is no move at all.
    """
    game = state.game
    parts = [p for p in re.split(r"[,\s]+", text.strip().strip("()[]")) if p]
    # ASCII digits only: int() would also read other scripts' digits ("\u0663" as 3)
    if not parts or not all(re.fullmatch(r"[+-]?[0-9]+", p) for p in parts):
        also = f", or {commands}" if commands else ""
        raise MoveError(f"{quoted(text.strip())} is not a move: type {move_syntax(game)}{also}")
    for p in parts:  # no cell has a number this long (and int() refuses 4,300 digits and more)
        if len(p.lstrip("+-")) > 9:
            if len(parts) == 1:
                raise MoveError(f"{long_number(p)} is out of range: the cells are 0..{game.num_cells - 1}")
            raise MoveError(f"coordinate {long_number(p, quote=False)} is out of range 0..{game.n - 1}")
    nums = [int(p) for p in parts]
    if len(nums) == 1:
        cell = nums[0]
    elif len(nums) in (game.d, game.d - 1) and (len(nums) == game.d or game.gravity):
        for x in nums:
            if not 0 <= x < game.n:
                raise MoveError(f"coordinate {x} is out of range 0..{game.n - 1}")
        if len(nums) == game.d:
            cell = int(np.ravel_multi_index(nums, game.shape))
        else:  # a gravity column: the lowest empty cell
            column = [int(np.ravel_multi_index([z, *nums], game.shape)) for z in range(game.n)]
            empty = [c for c in column if state.board[c] == 0]
            if not empty:
                raise MoveError(f"column {','.join(map(str, nums))} is full")
            cell = empty[0]
    else:
        raise MoveError(f"{quoted(text.strip())}: give {move_syntax(game)}")
    return check_move(state, cell)


def check_move(state: State, cell: int) -> int:
    """``cell`` when it is legal in ``state``; MoveError with the rules' reason otherwise."""
    if abs(cell) >= 10**9:  # no cell has a number this long: the error names it, not all its digits
        raise MoveError(f"{long_number(str(cell))} is out of range: the cells are 0..{state.game.num_cells - 1}")
    try:
        return state.check_action(cell)
    except IllegalMoveError as e:
        reason = re.sub(r"^action \S+ on \S+: ", "", str(e))  # the rules' prefix repeats what the player typed
        raise MoveError(f"{cell} is not legal: {reason}") from None


@dataclass
class Hint:
    """An agent's value of each legal move for the player to move (higher is better for that player).

    ``values`` is None when the agent has none. ``by_rules``: the moves whose value the agent's
    move-selection rules decide (an exact win, loss or fork); the rest are its own estimates.
    """

    values: dict[int, float] | None
    by_rules: frozenset[int] = frozenset()


def move_hint(agent: Player, state: State) -> Hint:
    """``agent``'s values of the legal moves of ``state``, and which of them its rules decide."""
    values = agent.action_values(state)
    if not values:
        return Hint(None)
    by_rules: frozenset[int] = frozenset()
    if has_rules(agent):  # the moves its rules value exactly (no second pass of the network or the search)
        games = BatchedGames.from_states([state])
        _, known = exact_values(games.board, games.to_play, games.legal_mask(), state.game, agent.rules)
        by_rules = frozenset(int(a) for a in np.flatnonzero(known[0]) if int(a) in values)
    return Hint(values, by_rules)


def hint_text(agent: Player, label: str, state: State) -> str:
    """The hint as one line of text, best move first (``ttt.play``'s ``hint`` command)."""
    values = move_hint(agent, state).values
    if not values:
        return f"hint: {label} has no move values"
    ranked = sorted(values.items(), key=lambda kv: -kv[1])
    moves = ", ".join(f"{a} ({state.game.cell_label(a)}) {v:+.2f}" for a, v in ranked)
    return f"hint, {label}'s value of each move for you (higher is better): {moves}"


def open_lines(state: State) -> list[tuple[int, tuple[int, ...], int]]:
    """Every line one move from completion: (player, the line's cells, its empty cell), both players.

    The empty cell need not be playable yet (with gravity it may wait for the cell below).
    """
    k = state.game.line_length
    out = []
    for line in state.game.lines:
        values = [state.board[int(c)] for c in line]
        total = sum(values)
        if values.count(0) == 1 and abs(total) == k - 1:
            empty = int(line[values.index(0)])
            out.append((1 if total > 0 else -1, tuple(int(c) for c in line), empty))
    return out


def winning_line(state: State) -> tuple[int, ...] | None:
    """The cells of the line the winner completed (one through the last move), or None."""
    winner = state.winner()
    if winner == 0:
        return None
    through = state.game.lines_through[state.last_action] if state.last_action >= 0 else ()
    for line in [*through, *map(tuple, state.game.lines)]:
        if all(state.board[int(c)] == winner for c in line):
            return tuple(int(c) for c in line)
    return None
