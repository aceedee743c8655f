"""How much work one client can make the server do: ``Limits`` (set on the command line of
``python -m ttt.serve``) and ``Searches``, the agents' work running now.

- ``max_simulations`` (per move: ``mcts`` simulations, ``openspiel_mcts`` simulations x rollouts) and
  ``max_depth`` (``alphabeta`` plies; ``depth=None``, to the end, counts as the board's cells) refuse a
  seat over the cap when the game is made: a 400 that names the cap (``check_seat``).
- ``max_seconds``: an agent's move or hint that runs longer is stopped (``ttt.players.stop``) and
  answered with a 400 that names the cap; the game is left as it was.
- ``max_searches``: agents' moves and hints running at once; one more is a 503 with ``Retry-After``.
  They run in worker threads of their own, so the rest of the API always has threads to answer.
- A search whose client went away is stopped (logged as 499), and ``stop_all`` (Ctrl-C, SIGTERM)
  stops every search at once and refuses new ones (503).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ttt.games import Game
from ttt.players import Player
from ttt.players.mcts import MCTSPlayer
from ttt.players.search import AlphaBetaPlayer
from ttt.players.stop import TIME, SearchStopped, Stop
from ttt.web.games import RequestError

CLIENT_GONE = "the client went away"
SERVER_STOPPING = "the server is stopping"


@dataclass(frozen=True)
class Limits:
    """The caps on one client's work (``ServeConfig`` carries the same keys and defaults)."""

    max_simulations: int = 20_000  # mcts: about 5 s for a first move on Qubic on one core
    max_depth: int = 6  # alphabeta plies: depth 5 takes about 6 s for a first move on Qubic
    max_seconds: float = 10.0  # one agent's move or hint
    max_searches: int = 8  # agents' moves and hints at once

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ValueError(f"{f.name} must be a number above 0, got {value!r}")
            if f.type == "int" and value != int(value):
                raise ValueError(f"{f.name} must be a whole number, got {value!r}")
        if self.max_searches > 256:
            raise ValueError(f"max_searches must be at most 256 (one worker thread each), got {self.max_searches}")


def search_size(player: Player, game: Game) -> tuple[str, int] | None:
    """(the cap's key, the amount) of a search player's work per move; None for a player without one."""
    if isinstance(player, MCTSPlayer):
        return "max_simulations", player.simulations
    if type(player).__name__ == "OpenSpielMCTSPlayer":  # ttt.interop: imported only with OpenSpiel
        return "max_simulations", player.simulations * player.rollouts
    if isinstance(player, AlphaBetaPlayer):
        return "max_depth", game.num_cells if player.depth is None else player.depth
    return None


def check_seat(label: str, player: Player | None, limits: Limits) -> None:
    """A 400 RequestError naming the cap when ``player`` searches more than ``limits`` allow."""
    size = None if player is None else search_size(player, player.game)
    if size is None:
        return
    key, amount = size
    cap = getattr(limits, key)
    if amount > cap:
        what = "simulations per move" if key == "max_simulations" else "plies of search"
        raise RequestError(f"{label[:40]}: {amount} {what} is over this server's cap of {cap} ({key}={cap})")


class Searches:
    """The agents' moves and hints running now, each with its ``Stop`` (at most ``limits.max_searches``)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.running: set[Stop] = set()
        self.stopping = False
        self._threads: Any = None  # the worker threads' limiter, made in the event loop on first use

    def start(self) -> Stop:
        """A ``Stop`` for one more search (deadline ``max_seconds``); a 503 RequestError when the server is
        full or stopping. Called in the event loop."""
        if self.stopping:
            raise RequestError(SERVER_STOPPING, 503)
        if len(self.running) >= self.limits.max_searches:
            raise RequestError(f"busy: {len(self.running)} agents are searching, this server's cap "
                               f"(max_searches={self.limits.max_searches}); try again in a moment", 503)
        stop = Stop(self.limits.max_seconds)
        self.running.add(stop)
        return stop

    def end(self, stop: Stop) -> None:
        """The search of ``stop`` is over."""
        self.running.discard(stop)

    def stop_all(self) -> None:
        """Stop every search and refuse new ones. Takes no lock: safe in a signal handler."""
        self.stopping = True
        for stop in list(self.running):
            stop.stop(SERVER_STOPPING)

    def threads(self):
        """The limiter of the searches' worker threads (anyio's: made in the event loop)."""
        if self._threads is None:
            import anyio

            self._threads = anyio.CapacityLimiter(self.limits.max_searches)
        return self._threads


def stopped_error(e: SearchStopped, limits: Limits) -> RequestError:
    """The answer to a stopped search: a 400 naming the time cap, a 503 on shutdown, 499 for a client gone."""
    if e.reason == TIME:
        return RequestError(f"the agent ran past this server's cap of {limits.max_seconds:g} s per request "
                            f"(max_seconds={limits.max_seconds:g}); choose a smaller search")
    if e.reason == CLIENT_GONE:
        return RequestError(CLIENT_GONE, 499)
    return RequestError(e.reason, 503)


async def watch_client(receive, stop: Stop) -> None:
    """Wait for the client to go away (its ``http.disconnect``), then stop the search. The request's body,
    if any, has been read already; the messages seen before the disconnect are dropped."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            stop.stop(CLIENT_GONE)
            return


def nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (brackets inside strings not counted)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def for_log(text: str) -> str:
    """``text`` safe for one log line: control and other unprintable characters as ``\\xNN`` escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
