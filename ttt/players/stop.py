"""Stopping a search from outside it: a deadline, or a word from another thread.

The loops of the search players call ``check_stop()`` as they go: each simulation of ``mcts`` (and of
AlphaZero's search, both through ``ttt.players.tree.simulate``), every 256 nodes of ``alphabeta`` and
of ``perfect``'s searched boards, each leaf of ``openspiel_mcts``. It raises ``SearchStopped`` once the
``Stop`` set for the calling thread (``stopping(stop)``) has passed its deadline or been told to stop.
``python -m ttt.serve`` sets one around every agent's move and hint: it bounds the time of a request,
drops the work of a client that went away, and lets Ctrl-C or SIGTERM end the server at once. Where no
``Stop`` is set (every other command) the check is one attribute read and never raises.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

TIME = "time"  # the reason of a Stop whose deadline passed


class SearchStopped(Exception):
    """A search was stopped before its end; ``reason`` says why (``TIME``, or what ``Stop.stop`` was given)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"search stopped ({reason})")
        self.reason = reason


class Stop:
    """When a search must stop: after ``seconds`` (None: no deadline), or once ``stop`` is called (from any
    thread, a signal handler included: it takes no lock)."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.reason: str | None = None

    def stop(self, reason: str) -> None:
        """Ask the search to stop; the first reason given is the one kept."""
        if self.reason is None:
            self.reason = reason

    def check(self) -> None:
        """Raise ``SearchStopped`` when the search must stop."""
        if self.reason is None and self.deadline is not None and time.monotonic() >= self.deadline:
            self.stop(TIME)
        if self.reason is not None:
            raise SearchStopped(self.reason)


_thread = threading.local()


@contextmanager
def stopping(stop: Stop) -> Iterator[Stop]:
    """Within this block, the searches of the calling thread obey ``stop``."""
    previous = getattr(_thread, "stop", None)
    _thread.stop = stop
    try:
        yield stop
    finally:
        _thread.stop = previous


def check_stop() -> None:
    """Raise ``SearchStopped`` when the calling thread's ``Stop`` says so; nothing when none is set."""
    stop = getattr(_thread, "stop", None)
    if stop is not None:
        stop.check()
