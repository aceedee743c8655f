"""The HTTP API and the page of ``python -m ttt.serve``, as a Starlette app (``create_app``).

Routes (JSON in and out; an error is ``{"error": "one line"}`` with a 4xx, or a 500 when an agent fails):

====================================  ===============================================================
``GET /``                             the page (``static/index.html``; its script and style beside it)
``GET /api/options``                  boards, player specs, the checkpoint folder's names, defaults
``POST /api/games``                   ``{"board", "x", "o"}``: a new game; each seat ``human``, a spec
                                      (``alphabeta:2``) or ``checkpoint:NAME``; answers the game's view
``GET /api/games/{id}``               the game's view (``WebGame.view``)
``DELETE /api/games/{id}``            forget the game
``POST /api/games/{id}/move``         ``{"move": 21}`` or ``{"move": "1,1,1"}``: a person's move
``POST /api/games/{id}/step``         the agent to move plays one move
``POST /api/games/{id}/undo``         back to the person's previous turn (no person: one ply)
``GET /api/games/{id}/hint``          the agent's value of every legal move (``WebGame.hint``)
``GET /api/games/{id}/record``        the game as a JSON file to download
====================================  ===============================================================

A request for a Host name that is not the server's (``served_names``: a name made to resolve to it, DNS
rebinding) and an API request sent by another site's page (``Origin``, ``Sec-Fetch-Site``) are refused
with a 403 (``SameOrigin``). Every request body is checked: at most ``MAX_BODY`` bytes arriving within
``BODY_SECONDS`` (else 413 or 408), a JSON object nested at most ``MAX_JSON_DEPTH`` deep with exactly the
expected keys. A client that leaves mid-request is logged as 499, never as a failure. Agents run in worker
threads of their own, one request at a time per game, within the caps of ``ttt.web.limits`` (simulations,
depth, seconds per request, searches at once; a search whose client went away is stopped); anything an
agent raises becomes a 500 with one line and the server goes on. ``TimingLog`` writes one line per request with its
time, the path's control characters escaped.
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import json
import logging
import socket
import time
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ttt.checkpoint import CheckpointError
from ttt.cli import one_line
from ttt.games import BOARDS, FIRST, SECOND
from ttt.games.boards import DEFAULT_BOARDS
from ttt.players import PLAYERS, player_factory
from ttt.players.stop import SearchStopped, stopping
from ttt.web.games import (
    CHECKPOINT_PREFIX,
    HUMAN,
    AgentError,
    CheckpointShelf,
    GameTable,
    RequestError,
    check_board,
    seat_player,
)
from ttt.web.limits import (
    CLIENT_GONE,
    Limits,
    Searches,
    check_seat,
    for_log,
    nesting_depth,
    stopped_error,
    watch_client,
)

log = logging.getLogger("ttt.serve")

MAX_BODY = 4096  # bytes of a request body
BODY_SECONDS = 10.0  # for the whole body to arrive
MAX_JSON_DEPTH = 8  # arrays and objects inside each other (the API's bodies are flat objects)
STATIC = {"index.html": "text/html", "app.js": "text/javascript", "style.css": "text/css"}
DEFAULT_BOARD = DEFAULT_BOARDS["web"]  # ttt.games.boards
DEFAULT_CHECKPOINT = "dqn_444"
EXAMPLE_SPECS = {"random": "random", "benchmark": "benchmark", "alphabeta": "alphabeta:2", "mcts": "mcts:200",
                 "perfect": "perfect", "openspiel_mcts": "openspiel_mcts:200"}
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'"}


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")  # the names a server answers to, whatever its host
WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # listening on every address: the page is reached by this machine's IP


def served_names(host: str) -> tuple[str, ...]:
    """The Host names a server listening on ``host`` answers to: the loopback names and ``host``; on a
    wildcard address also this machine's name (and any IP address: ``host_allowed``)."""
    host = host.strip("[]").lower()
    names = [*LOOPBACK_NAMES, host]
    if host in WILDCARD_HOSTS:
        names += [socket.gethostname().lower(), socket.getfqdn().lower()]
    return tuple(dict.fromkeys(names))


def host_name(header: str) -> str:
    """The name in a Host header, without its port: ``localhost:8000`` -> ``localhost``, ``[::1]:8000`` -> ``::1``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


def host_allowed(name: str, names: tuple[str, ...]) -> bool:
    """Whether a request for the Host ``name`` is served: one of ``names``, or any IP address when the server
    listens on a wildcard address (a name that resolves elsewhere, as in DNS rebinding, is never an IP)."""
    if name in names:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return any(n in WILDCARD_HOSTS for n in names)


def refusal(scope, names: tuple[str, ...]) -> str | None:
    """Why a request is refused (None: served): a Host that is not one of ``names`` (a page of another site
    whose name was made to resolve here, DNS rebinding), or an API request sent by another origin's page
    (its ``Origin`` or ``Sec-Fetch-Site`` header says so; a client other than a browser sends neither)."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    host = headers.get("host", "")
    if not host_allowed(host_name(host), names):
        return f"host {host[:40]!r} is not one of this server's names ({', '.join(names)})"
    if not scope["path"].startswith("/api/"):
        return None
    origin = headers.get("origin")
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none") or (
            origin is not None and origin.lower() != f"{scope.get('scheme', 'http')}://{host.lower()}"):
        return "the API answers its own page only: a request from another site's page is refused"
    return None


def error(message: str, status: int) -> JSONResponse:
    """The JSON answer of a failed request: ``{"error": message}`` with ``status`` (a 503 asks to retry)."""
    headers = {"Retry-After": "1"} if status == 503 else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def available_specs() -> list[str]:
    """An example spec of every registered player that can be made here (OpenSpiel's only when installed)."""
    out = []
    for name in PLAYERS:
        try:
            player_factory(name)
        except ValueError:  # its optional package is missing
            continue
        out.append(EXAMPLE_SPECS.get(name, name))
    return out


def static_files() -> dict[str, bytes]:
    """The page's files, read once from the package."""
    folder = resources.files("ttt.web") / "static"
    return {name: (folder / name).read_bytes() for name in STATIC}


async def read_json(request: Request, keys: set[str], required: set[str] | None = None) -> dict[str, Any]:
    """The request's body as a JSON object with only ``keys`` (all of ``required``); RequestError otherwise."""
    too_big = RequestError(f"request body over {MAX_BODY} bytes", 413)
    declared = request.headers.get("content-length", "0")
    if not declared.isdigit() or int(declared) > MAX_BODY:
        raise too_big
    body = b""
    try:
        with anyio.fail_after(BODY_SECONDS):  # a body sent slowly holds a connection no longer than this
            async for chunk in request.stream():  # read no more than the cap, whatever the header said
                body += chunk
                if len(body) > MAX_BODY:
                    raise too_big
    except TimeoutError:
        raise RequestError(f"the request body took over {BODY_SECONDS:g} s to arrive", 408) from None
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise RequestError("the request body is not JSON") from None
    if nesting_depth(text) > MAX_JSON_DEPTH:  # before json.loads, which recurses as deep as the body
        raise RequestError(f"the request body nests arrays or objects over {MAX_JSON_DEPTH} deep")
    if not text.strip():
        data: Any = {}
    else:
        try:
            data = json.loads(text)
        except ValueError:
            raise RequestError("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise RequestError("the request body must be a JSON object")
    unknown = sorted(set(data) - keys)
    if unknown:
        raise RequestError(f"unknown key {str(unknown[0])[:40]!r}; expected {', '.join(sorted(keys)) or 'none'}")
    missing = sorted((required or set()) - set(data))
    if missing:
        raise RequestError(f"missing key {missing[0]!r}")
    return data


async def in_worker(request: Request, work, threads: anyio.CapacityLimiter | None = None):
    """``work()`` in a worker thread (agents may take a while; ``threads``: the limiter of the threads it
    may use, None Starlette's); its CPU time goes into the request's log line."""

    def run():
        start = time.thread_time()
        try:
            return work()
        finally:
            request.scope.setdefault("state", {})["worker_cpu_ms"] = 1000 * (time.thread_time() - start)

    if threads is None:
        return await run_in_threadpool(run)
    return await anyio.to_thread.run_sync(run, limiter=threads)


def api(handler):
    """Wrap an endpoint: RequestError -> its 4xx, a user's ValueError or CheckpointError -> 400, an agent's
    failure -> 500, anything else -> 500 (logged with its traceback); always one line."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except ClientDisconnect:  # it left while sending its body: nobody to answer
            return error(CLIENT_GONE, 499)
        except RequestError as e:
            return error(one_line(e), e.status)
        except (ValueError, CheckpointError) as e:
            return error(one_line(e), 400)
        except AgentError as e:
            log.error("%s", e, exc_info=e.__cause__)
            return error(one_line(e), 500)
        except Exception as e:
            log.exception("%s %s failed", request.method, for_log(request.url.path))
            return error(f"server error: {one_line(e)}", 500)

    return endpoint


class SameOrigin:
    """ASGI middleware: a request that ``refusal`` refuses gets a 403 with its one line, and goes no further."""

    def __init__(self, app, names: tuple[str, ...]) -> None:
        self.app, self.names = app, names

    async def __call__(self, scope, receive, send) -> None:
        why = refusal(scope, self.names) if scope["type"] == "http" else None
        if why is None:
            await self.app(scope, receive, send)
        else:
            await error(why, 403)(scope, receive, send)


class TimingLog:
    """ASGI middleware: one log line per request, ``METHOD path status milliseconds``, with the CPU time
    of its worker thread where it had one (an agent's move or values: the rest of the wall time is
    waiting for a core), and the security headers on every response. The path's control characters
    are escaped (``%0a`` logs as ``\\n``), so no request can write a line of its own; 499: the client
    went away before the answer."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [500]

        async def send_timed(message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"],
                                      *((k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items())]
            await send(message)

        try:
            await self.app(scope, receive, send_timed)
        finally:
            ms = 1000 * (time.perf_counter() - start)
            cpu = scope.get("state", {}).get("worker_cpu_ms")
            worker = "" if cpu is None else f" ({cpu:.1f} ms CPU in its worker)"
            log.info("%s %s %d %.1f ms%s", scope["method"], for_log(scope["path"]), status[0], ms, worker)


def create_app(checkpoints: str | Path | None = None, max_games: int = 64, max_idle_minutes: float = 60,
               seed: int = 0, limits: Limits | None = None, host: str = "127.0.0.1",
               max_games_per_client: int = 16) -> Starlette:
    """The server's app: checkpoints by name from the folder ``checkpoints`` (None: none), at most
    ``max_games`` games in memory and ``max_games_per_client`` of one client address (``GameTable``), each
    dropped after ``max_idle_minutes`` unused; game i's agents draw
    their random choices from ``numpy.random.default_rng([seed, i])``; the agents' work within ``limits``
    (None: the defaults of ``Limits``); requests for the Host names of a server on ``host`` only
    (``served_names``), the API's from its own page only (``SameOrigin``).
    ``app.state.searches.stop_all()`` stops every search (shutdown)."""
    limits = Limits() if limits is None else limits
    searches = Searches(limits)
    shelf = CheckpointShelf(checkpoints)
    table = GameTable(max_games, 60 * max_idle_minutes, max_games_per_client)
    files = static_files()
    counter = itertools.count(1)  # the games' numbers, for their seeds

    async def page(request: Request) -> Response:
        return Response(files["index.html"], media_type=STATIC["index.html"])

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in files:
            return error("not found", 404)
        return Response(files[name], media_type=STATIC[name])

    @api
    async def options(request: Request) -> Response:
        listing = await in_worker(request, shelf.listing)
        names = [c["name"] for c in listing]
        default = DEFAULT_CHECKPOINT if DEFAULT_CHECKPOINT in names else None
        return JSONResponse({
            "boards": [{"name": b, **spec} for b, spec in BOARDS.items()],
            "specs": available_specs(),
            "checkpoints": listing,
            "checkpoint_prefix": CHECKPOINT_PREFIX,
            "default": {"board": DEFAULT_BOARD, "x": HUMAN,
                        "o": f"{CHECKPOINT_PREFIX}{default}" if default else "benchmark"},
        })

    @api
    async def new_game(request: Request) -> Response:
        data = await read_json(request, {"board", "x", "o"}, {"board", "x", "o"})
        board = check_board(data["board"])

        def build():
            seats = {FIRST: seat_player(data["x"], board, shelf), SECOND: seat_player(data["o"], board, shelf)}
            for label, player in seats.values():
                check_seat(label, player, limits)
            client = request.client.host if request.client else ""
            return table.new(board, seats, seed=[seed, next(counter)], client=client).view()

        return JSONResponse(await in_worker(request, build), status_code=201)

    def game_of(request: Request):
        return table.get(request.path_params["game_id"])

    def and_view(work):
        """``work(game)``, answering the game's view."""

        def run(game):
            work(game)
            return game.view()

        return run

    async def locked(request: Request, work) -> Response:
        """``work(game)`` in a worker thread with the game locked; answers the game's view."""
        game = game_of(request)
        async with game.lock:
            return JSONResponse(await in_worker(request, lambda: and_view(work)(game)))

    async def search(request: Request, work) -> Any:
        """``work(game)`` of an agent: the game locked (waiting in the event loop, not in a thread), within
        ``limits`` (a slot of ``max_searches``, ``max_seconds``), stopped when the client goes away."""
        game = game_of(request)
        async with game.lock:
            stop = searches.start()
            watcher = asyncio.ensure_future(watch_client(request.receive, stop))

            def run():
                with stopping(stop):
                    stop.check()  # the client may have left while the game was busy
                    return work(game)

            try:
                return await in_worker(request, run, searches.threads())
            except SearchStopped as e:
                raise stopped_error(e, limits) from None
            finally:
                watcher.cancel()
                searches.end(stop)

    @api
    async def get_game(request: Request) -> Response:
        return JSONResponse(game_of(request).view())

    @api
    async def delete_game(request: Request) -> Response:
        table.remove(request.path_params["game_id"])
        return JSONResponse({"deleted": request.path_params["game_id"]})

    @api
    async def move(request: Request) -> Response:
        data = await read_json(request, {"move"}, {"move"})
        return await locked(request, lambda g: g.play(data["move"]))

    @api
    async def step(request: Request) -> Response:
        await read_json(request, set())
        return JSONResponse(await search(request, and_view(lambda g: g.step())))

    @api
    async def undo(request: Request) -> Response:
        await read_json(request, set())
        return await locked(request, lambda g: g.undo())

    @api
    async def hint(request: Request) -> Response:
        return JSONResponse(await search(request, lambda g: g.hint()))

    @api
    async def record(request: Request) -> Response:
        game = game_of(request)
        body = json.dumps(game.record(), indent=2) + "\n"
        filename = f"ttt-{game.game.name}-{game.id}.json"
        return Response(body, media_type="application/json",
                        headers={"Content-Disposition": f'attachment; filename="{filename}"'})

    async def http_error(request: Request, exc: HTTPException) -> Response:
        return error(exc.detail if isinstance(exc.detail, str) else "error", exc.status_code)

    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/api/options", options),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game_id}", get_game, methods=["GET"]),
        Route("/api/games/{game_id}", delete_game, methods=["DELETE"]),
        Route("/api/games/{game_id}/move", move, methods=["POST"]),
        Route("/api/games/{game_id}/step", step, methods=["POST"]),
        Route("/api/games/{game_id}/undo", undo, methods=["POST"]),
        Route("/api/games/{game_id}/hint", hint),
        Route("/api/games/{game_id}/record", record),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    app.add_middleware(SameOrigin, names=served_names(host))
    app.add_middleware(TimingLog)  # the outermost: the refused requests are logged too
    app.state.table = table
    app.state.shelf = shelf
    app.state.searches = searches
    return app
