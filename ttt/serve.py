"""Play and inspect agents in the browser: ``python -m ttt.serve`` (Hydra; ``--help`` shows the config).

Serves one page (``ttt/web/static``: no outside resources, so it works offline) and its JSON API
(``ttt.web.app``) with uvicorn, on ``host=127.0.0.1`` ``port=8000`` unless told otherwise; a host that
is not a loopback address prints a warning, since anyone who reaches it can play and load the
checkpoints offered. ``checkpoints=DIR`` is the folder whose checkpoints the page offers by name
(default: the shipped ``checkpoints/``). Every request is logged with its time in milliseconds.
Needs the ``web`` extra (Starlette, uvicorn).

One client's work is bounded (``ttt.web.limits``): ``max_simulations`` per move (``mcts``,
``openspiel_mcts``) and ``max_depth`` (``alphabeta``) refuse a seat over them with a 400 naming the cap;
``max_seconds`` stops an agent's move or hint that runs longer (a 400 naming the cap); ``max_searches``
agents' moves and hints run at once (one more: a 503); a search whose client went away is stopped.
Ctrl-C or SIGTERM stops every search at once and ends the server within seconds, under load too.

``serve(cfg)`` is the plain function; ``listen(host, port)`` binds the socket it serves on.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from ttt.cli import run_cli
from ttt.config import check_seed_and_threads
from ttt.harness.specs import SHIPPED_CHECKPOINT
from ttt.web.limits import Limits

DEFAULT_LIMITS = Limits()
SHUTDOWN_SECONDS = 2  # for the answers of the stopped searches to go out, after Ctrl-C or SIGTERM


@dataclass
class ServeConfig:
    """Schema of ``configs/serve.yaml``."""

    host: str = "127.0.0.1"  # the address to listen on
    port: int = 8000  # 0: any free port
    checkpoints: str | None = None  # folder of checkpoints offered by name; None: the shipped checkpoints/
    max_games: int = 64  # games kept in memory at once
    max_games_per_client: int = 16  # games of one client address at once
    max_idle_minutes: float = 60  # a game unused this long is dropped
    seed: int = 0  # the agents' random choices
    threads: int = 1  # torch intra-op threads
    max_simulations: int = DEFAULT_LIMITS.max_simulations  # per move of mcts / openspiel_mcts (x rollouts)
    max_depth: int = DEFAULT_LIMITS.max_depth  # plies of alphabeta (depth=None counts the board's cells)
    max_seconds: float = DEFAULT_LIMITS.max_seconds  # one agent's move or hint
    max_searches: int = DEFAULT_LIMITS.max_searches  # agents' moves and hints running at once


ConfigStore.instance().store(name="serve_schema", node=ServeConfig)

SHIPPED_FOLDER = SHIPPED_CHECKPOINT.parents[1]


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` resolves to is this machine's loopback."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening; a one-line ValueError when it cannot be."""
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be in 0..65535, got {port}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as e:
        raise ValueError(f"host {host!r}: {e.strerror or e}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise ValueError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    """The address a listening socket serves, as a URL of its page."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(cfg: DictConfig) -> None:
    """Serve the page until Ctrl-C or SIGTERM."""
    if not 0 <= int(cfg.port) <= 65535:
        raise ValueError(f"port must be in 0..65535, got {cfg.port}")
    if min(int(cfg.max_games), int(cfg.max_games_per_client), int(cfg.threads)) < 1 or float(cfg.max_idle_minutes) <= 0:
        raise ValueError("max_games, max_games_per_client and threads must be at least 1, max_idle_minutes above 0")
    check_seed_and_threads(cfg)
    limits = Limits(max_simulations=cfg.max_simulations, max_depth=cfg.max_depth, max_seconds=cfg.max_seconds,
                    max_searches=cfg.max_searches)
    folder = Path(cfg.checkpoints) if cfg.checkpoints is not None else SHIPPED_FOLDER
    if cfg.checkpoints is not None and not folder.is_dir():
        raise ValueError(f"checkpoints={folder}: no such folder")
    try:
        import uvicorn

        from ttt.web.app import create_app
    except ModuleNotFoundError as e:
        raise ValueError(f"python -m ttt.serve needs the web extra ({e.name} is missing): "
                         "pip install -e '.[web]'") from None
    import torch

    torch.set_num_threads(int(cfg.threads))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("ttt.serve").setLevel(logging.INFO)
    host = str(cfg.host)
    if not is_loopback(host):
        print(f"warning: host={host} is not a loopback address: anyone who can reach this machine can use the "
              "server and the agents it offers", file=sys.stderr)
    app = create_app(folder, max_games=int(cfg.max_games), max_idle_minutes=float(cfg.max_idle_minutes),
                     seed=int(cfg.seed), limits=limits, host=host, max_games_per_client=int(cfg.max_games_per_client))
    sock = listen(host, int(cfg.port))
    print(f"serving {url_of(sock)} (checkpoints from {folder}; Ctrl-C stops)", flush=True)

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:  # Ctrl-C, SIGTERM: the searches stop first, at once
            app.state.searches.stop_all()
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off",
                            timeout_graceful_shutdown=SHUTDOWN_SECONDS)
    try:
        Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (run_cli): the server has stopped, every search with it
        print("interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        # games live in memory only, nothing is left to save: skip the interpreter's teardown, which takes
        # seconds with torch loaded (2.5-3.5 s measured on the shared 2-core machine)
        os._exit(130)


@hydra.main(version_base="1.3", config_path="../configs", config_name="serve")
def main(cfg: DictConfig) -> None:
    run_cli(serve, cfg)


if __name__ == "__main__":
    main()
