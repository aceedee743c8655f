"""Games played through the browser, kept in memory: who sits in each seat, the positions so far, and
what the page is shown of them (``WebGame.view``).

A seat is ``human``, a player spec of ``ttt.harness.specs`` (``random``, ``benchmark``, ``alphabeta:2``,
``mcts:200``, ``perfect``, ``openspiel_mcts:200``), or ``checkpoint:NAME`` with NAME one of the server's
checkpoint folder (``CheckpointShelf``): no text from a client is ever used as a path.
``GameTable`` keeps the games under a cap on their count, in all and per client, and on how long they
may sit unused; a dropped game, asked for, says why it is gone.

Errors a client can fix are ``RequestError`` (an HTTP status and one line); an agent that raises, or
answers an illegal move, is an ``AgentError`` (one line; the server goes on).
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ttt.agents import load_player
from ttt.checkpoint import CheckpointError
from ttt.cli import one_line
from ttt.games import BOARDS, FIRST, SECOND, Game, State, make_game
from ttt.harness.specs import checkpoint_file, load_agents, parse_spec
from ttt.players import Player
from ttt.players.human import check_move, move_hint, move_syntax, open_lines, parse_move, winning_line
from ttt.players.stop import SearchStopped

log = logging.getLogger("ttt.serve")

MARK = {FIRST: "X", SECOND: "O"}
HUMAN = "human"
CHECKPOINT_PREFIX = "checkpoint:"
MAX_SEAT_TEXT = 100  # characters of a seat's spec
LOSS = -1.0  # a move's value when it loses
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # a checkpoint's name as listed


class RequestError(ValueError):
    """A request the client can fix: ``status`` (4xx) and a one-line message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class AgentError(RuntimeError):
    """An agent failed (raised, or answered an illegal move); the message is one line."""


# ------------------------------------------------------------------------------------ checkpoints
class CheckpointShelf:
    """The checkpoints of one folder, by name: ``NAME/checkpoint.pt`` (or ``.npz``), or ``NAME.pt``
    (``.npz``) directly in it. Each is loaded once and kept while its file is unchanged."""

    def __init__(self, folder: str | Path | None) -> None:
        self.folder = None if folder is None else Path(folder)
        self._loaded: dict[Path, tuple[int, Player | None, str]] = {}  # path -> (mtime_ns, player, board or why not)
        self._lock = threading.Lock()

    def paths(self) -> dict[str, Path]:
        """Every checkpoint file of the folder by name (a run folder's name wins over a file's stem)."""
        if self.folder is None or not self.folder.is_dir():
            return {}
        found: dict[str, Path] = {}
        for entry in sorted(self.folder.iterdir()):
            if entry.is_file() and entry.suffix in (".pt", ".npz") and NAME.fullmatch(entry.stem):
                found.setdefault(entry.stem, entry)
            elif entry.is_dir() and NAME.fullmatch(entry.name):
                try:
                    path = checkpoint_file(str(entry))
                except CheckpointError as e:  # checkpoint.pt beside checkpoint.npz: two runs' checkpoints
                    log.warning("%s; left out", one_line(e))
                    continue
                if path.is_file():
                    found[entry.name] = path
        return found

    def _load(self, path: Path) -> tuple[Player | None, str]:
        stamp = path.stat().st_mtime_ns
        with self._lock:
            cached = self._loaded.get(path)
            if cached is None or cached[0] != stamp:
                try:
                    player = load_player(path)
                    start = player.game.initial_state()
                    player.action_values(start.apply(start.legal_actions()[0]))  # the first pass pays start-up
                    cached = (stamp, player, player.game.name)
                except CheckpointError as e:
                    log.warning("checkpoint %s left out: %s", path, one_line(e))
                    cached = (stamp, None, one_line(e))
                self._loaded[path] = cached
        return cached[1], cached[2]

    def listing(self) -> list[dict[str, str]]:
        """``[{"name", "board"}]`` of the checkpoints that load (the others are logged and left out)."""
        out = []
        for name, path in self.paths().items():
            player, board = self._load(path)
            if player is not None:
                out.append({"name": name, "board": board})
        return out

    def player(self, name: str, board: str) -> Player:
        """The player saved as ``name``; a RequestError when there is none or it plays another board."""
        paths = self.paths()
        if name not in paths:
            known = ", ".join(paths) or "none"
            raise RequestError(f"no checkpoint named {name[:64]!r} on this server (it has: {known})")
        player, found = self._load(paths[name])
        if player is None:
            raise RequestError(f"checkpoint {name} cannot be loaded: {found}")
        if found != board:
            raise RequestError(f"checkpoint {name} plays {found}, not {board}")
        return player


def check_board(board: Any) -> str:
    """``board`` when it names one of the five boards; a RequestError otherwise."""
    if not isinstance(board, str) or board not in BOARDS:
        raise RequestError(f"unknown board {str(board)[:40]!r}; choose one of {', '.join(BOARDS)}")
    return board


def seat_player(text: Any, board: str, shelf: CheckpointShelf) -> tuple[str, Player | None]:
    """(label, player) for a seat's text: ``human`` (player None), ``checkpoint:NAME`` or a spec."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_SEAT_TEXT or not text.isprintable():
        raise RequestError(f"a seat is 'human', a player spec like 'alphabeta:2', or '{CHECKPOINT_PREFIX}NAME' "
                           f"(at most {MAX_SEAT_TEXT} characters, no control characters)")
    text = text.strip()
    if text == HUMAN:
        return HUMAN, None
    if text.startswith(CHECKPOINT_PREFIX):
        name = text[len(CHECKPOINT_PREFIX):]
        return name, shelf.player(name, board)
    kind, _, _ = parse_spec(text)
    if kind == "checkpoint":  # a path: never from a client
        raise RequestError(f"{text!r}: a checkpoint is chosen by name, {CHECKPOINT_PREFIX}NAME, from the server's list")
    try:
        _, [(label, player)] = load_agents([text], board)
    except ValueError as e:  # the spec parser offers paths, which a client may not give
        raise RequestError(one_line(e).replace("or a checkpoint path", f"or {CHECKPOINT_PREFIX}NAME")) from None
    except Exception as e:  # an option of the wrong kind that the player's constructor rejects
        raise RequestError(f"player {text!r}: {one_line(e)}") from None
    return label, player


# ------------------------------------------------------------------------------------------ games
def drop_tree(player: Player) -> None:
    """Let go of the tree a tree search keeps of its latest search (``last_roots``: about 75 MB after 20,000
    simulations on Qubic), so a server's memory holds only the searches running, not one per game."""
    if getattr(player, "last_roots", None):
        player.last_roots = []


class WebGame:
    """One game: its board, its two seats (a person or an agent each) and every position so far."""

    def __init__(self, game_id: str, game: Game, seats: dict[int, tuple[str, Player | None]], seed: Any) -> None:
        self.id = game_id
        self.game = game
        self.seats = seats
        self.states: list[State] = [game.initial_state()]
        self.rng = np.random.default_rng(seed)
        self.lock = asyncio.Lock()  # one request at a time changes a game; the others wait in the event loop
        self.used = time.monotonic()

    @property
    def state(self) -> State:
        """The current position."""
        return self.states[-1]

    def _mover(self) -> tuple[int, str, Player | None]:
        state = self.state
        if state.is_terminal():
            raise RequestError("the game is over: undo, or start a new one", 409)
        label, player = self.seats[state.to_play()]
        return state.to_play(), label, player

    def play(self, move: Any) -> int:
        """A person's move: a cell number, or text as typed in ``ttt.play`` (``5``, ``1,2``, ``0,1,2``)."""
        mark, label, player = self._mover()
        if player is not None:
            raise RequestError(f"it is {MARK[mark]}'s turn, and {label} plays {MARK[mark]}: step it", 409)
        if isinstance(move, bool) or not isinstance(move, (int, str)) or (isinstance(move, str) and len(move) > 40):
            raise RequestError(f"a move is {move_syntax(self.game)}")
        cell = check_move(self.state, move) if isinstance(move, int) else parse_move(self.state, move)
        self.states.append(self.state.apply(cell))
        return cell

    def step(self) -> int:
        """The agent to move plays one move; AgentError when it fails."""
        mark, label, player = self._mover()
        if player is None:
            raise RequestError(f"it is {MARK[mark]}'s turn, a person's: play a move", 409)
        try:
            cell = self.state.check_action(player.act(self.state, self.rng))
        except SearchStopped:  # a server's cap or cancel (ttt.players.stop): no failure of the agent
            raise
        except Exception as e:  # any failure of the agent's code, or an illegal answer
            raise AgentError(f"{label} failed to move: {one_line(e)}") from e
        finally:
            drop_tree(player)
        self.states.append(self.state.apply(cell))
        return cell

    def undo(self) -> None:
        """Back to the latest earlier position where a person is to move (with no person: one ply back)."""
        people = [p for p, (_, player) in self.seats.items() if player is None] or [FIRST, SECOND]
        earlier = [i for i in range(len(self.states) - 1) if self.states[i].to_play() in people]
        if not earlier:
            raise RequestError("nothing to undo", 409)
        del self.states[earlier[-1] + 1:]

    def hint(self) -> dict[str, Any]:
        """The values of the legal moves for the player to move, from the agent to move, else the other
        seat's agent: ``{"source", "for", "values": [{"cell", "value", "rules"}] or None, "best", "reason"}``;
        ``best`` is the cell of the highest value, None when there are no values or every move loses (-1)."""
        state = self.state
        out: dict[str, Any] = {"source": None, "for": None, "values": None, "best": None, "reason": None}
        if state.is_terminal():
            out["reason"] = "the game is over"
            return out
        mover = state.to_play()
        out["for"] = MARK[mover]
        label, agent = self.seats[mover]
        if agent is None:
            label, agent = self.seats[-mover]
        if agent is None:
            out["reason"] = "no agent sits in this game"
            return out
        out["source"] = label
        try:
            hint = move_hint(agent, state)
        except SearchStopped:
            raise
        except Exception as e:
            raise AgentError(f"{label} failed to value the moves: {one_line(e)}") from e
        finally:
            drop_tree(agent)
        if hint.values is None:
            out["reason"] = f"{label} has no move values"
            return out
        out["values"] = [{"cell": int(a), "value": float(v), "rules": a in hint.by_rules}
                         for a, v in sorted(hint.values.items())]
        best = max(out["values"], key=lambda v: v["value"])
        out["best"] = None if best["value"] <= LOSS + 1e-9 else best["cell"]  # a lost position has no best move
        return out

    def moves(self) -> list[dict[str, Any]]:
        """Every move so far: ``{"ply", "mark", "cell", "label"}``."""
        return [{"ply": i, "mark": MARK[prev.to_play()], "cell": s.last_action,
                 "label": self.game.cell_label(s.last_action)}
                for i, (prev, s) in enumerate(zip(self.states, self.states[1:], strict=False), start=1)]

    def result(self) -> str | None:
        """``X (label) wins``, ``O (label) wins``, ``Draw``, or None while the game goes on."""
        state = self.state
        if not state.is_terminal():
            return None
        if state.winner() == 0:
            return "Draw"
        mark = state.winner()
        return f"{MARK[mark]} ({self.seats[mark][0]}) wins"

    def view(self) -> dict[str, Any]:
        """Everything the page draws: the board, the seats, the moves, open lines and the result."""
        g, state = self.game, self.state
        return {
            "id": self.id,
            "board": {"name": g.name, "n": g.n, "d": g.d, "gravity": g.gravity, "k": g.line_length,
                      "cells": g.num_cells, "syntax": move_syntax(g)},
            "seats": {MARK[p]: {"label": label, "human": player is None} for p, (label, player) in self.seats.items()},
            "cells": [MARK.get(v, "") for v in state.board],
            "to_play": None if state.is_terminal() else MARK[state.to_play()],
            "legal": state.legal_actions(),
            "moves": self.moves(),
            "last": state.last_action if state.last_action >= 0 else None,
            "open_lines": [{"mark": MARK[p], "cells": list(cells), "empty": empty}
                           for p, cells, empty in open_lines(state)],
            "over": state.is_terminal(),
            "result": self.result(),
            "win_line": list(winning_line(state) or []) or None,
            "lines": g.lines.tolist(),
        }

    def record(self) -> dict[str, Any]:
        """The game as a file: the board, the seats, the moves, the result and the final cells."""
        view = self.view()
        return {"format": "ttt-game/1", "board": self.game.name,
                "players": {m: s["label"] for m, s in view["seats"].items()},
                "moves": view["moves"], "result": view["result"],
                "winner": MARK.get(self.state.winner()), "win_line": view["win_line"], "cells": view["cells"]}


class GameTable:
    """The games of a server by id, at most ``max_games``, at most ``max_per_client`` of one client (its
    address), each dropped after ``max_idle_s`` unused seconds. A client's new game beyond its own cap drops
    its own game unused longest; beyond the server's cap, that of the client with the most games, so no
    client pushes out another's games by starting many. A dropped game's id is remembered (the latest
    ``REMEMBERED`` of them), so asking for it says why it is gone."""

    REMEMBERED = 4096

    def __init__(self, max_games: int, max_idle_s: float, max_per_client: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_games, self.max_idle_s, self.clock = max_games, max_idle_s, clock
        self.max_per_client = max_games if max_per_client is None else max_per_client  # None: no cap of its own
        self._games: dict[str, WebGame] = {}
        self._clients: dict[str, str] = {}  # game id -> the client that started it
        self._gone: dict[str, str] = {}  # a dropped game's id -> why (oldest first)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._games)

    def _drop(self, game_id: str, why: str) -> None:
        del self._games[game_id]
        self._clients.pop(game_id, None)
        self._gone[game_id] = why
        while len(self._gone) > self.REMEMBERED:
            del self._gone[next(iter(self._gone))]

    def _expire(self) -> None:
        now = self.clock()
        for gid in [gid for gid, g in self._games.items() if now - g.used > self.max_idle_s]:
            self._drop(gid, f"it was unused longer than this server's max_idle_minutes={self.max_idle_s / 60:g}")

    def _oldest(self, client: str) -> str:
        return min((gid for gid, c in self._clients.items() if c == client), key=lambda gid: self._games[gid].used)

    def new(self, board: str, seats: dict[int, tuple[str, Player | None]], seed: Any, client: str = "") -> WebGame:
        """A new game of ``client`` in the table (dropping expired games, then, when a cap is reached, the
        game unused longest of the client with the most games or of ``client``)."""
        with self._lock:
            self._expire()
            while len(self._games) >= self.max_games:
                counts: dict[str, int] = {}
                for c in self._clients.values():
                    counts[c] = counts.get(c, 0) + 1
                heaviest = max(counts, key=lambda c: (counts[c], c == client))
                self._drop(self._oldest(heaviest), f"the server was full ({self.max_games} games, max_games) and "
                                                   "its client had the most")
            while sum(c == client for c in self._clients.values()) >= self.max_per_client:
                self._drop(self._oldest(client), f"its client started {self.max_per_client} newer games, this "
                                                  f"server's cap per client (max_games_per_client)")
            game = WebGame(secrets.token_hex(8), make_game(board), seats, seed)
            game.used = self.clock()
            self._games[game.id] = game
            self._clients[game.id] = client
        return game

    def get(self, game_id: str) -> WebGame:
        """The game ``game_id``, marked as used now; a 404 RequestError when there is none, saying why when it
        was dropped."""
        with self._lock:
            self._expire()
            game = self._games.get(game_id)
            if game is None:
                why = self._gone.get(game_id)
                raise RequestError(f"this game was dropped: {why}; start a new one" if why else
                                   "no such game: start a new one", 404)
            game.used = self.clock()
        return game

    def remove(self, game_id: str) -> None:
        """Forget the game ``game_id`` (404 when there is none)."""
        with self._lock:
            if self._games.pop(game_id, None) is None:
                raise RequestError("no such game", 404)
            self._clients.pop(game_id, None)
