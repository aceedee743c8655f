"""TensorBoard event files written in the caller's thread: what ``ttt.harness.training.Run`` logs with.

``torch.utils.tensorboard.SummaryWriter`` writes from a thread of its own, one per writer: K runs
side by side would start K threads, and a full disk there ends in that thread's traceback while
training goes on. ``EventFile`` writes the same records (``events.out.tfevents.*``, read by
TensorBoard, ``ttt.harness.curves`` and ``ttt.plot``) from the thread that logs, through a buffer flushed
by ``flush`` and ``close``; a failed write is an ``OSError`` naming the event file, raised where
the run can say what is safe on disk. ``purge_step`` marks a resumed run's restart, as
SummaryWriter's does: TensorBoard drops the earlier file's events from that step on.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

_NUMBERS = itertools.count()  # tells apart the files one process opens in one second


class EventFile:
    """One event file in ``log_dir`` (created if missing): ``add_scalar``, ``add_text``, ``flush``, ``close``."""

    def __init__(self, log_dir: str | os.PathLike, purge_step: int | None = None) -> None:
        from tensorboard.compat.proto.event_pb2 import Event, SessionLog
        from tensorboard.summary.writer.record_writer import RecordWriter

        self._event = Event
        folder = Path(log_dir)
        self.path = folder / (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                              f"{os.getpid()}.{next(_NUMBERS)}")
        self._file = None
        with self._naming():
            folder.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "wb")  # noqa: SIM115 (closed in close())
        self._records = RecordWriter(self._file)
        self._write(Event(wall_time=time.time(), file_version="brain.Event:2"))
        if purge_step is not None:
            self._write(Event(wall_time=time.time(), step=purge_step, session_log=SessionLog(status=SessionLog.START)))

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        from torch.utils.tensorboard.summary import scalar

        self._summary(scalar(tag, float(value)), step)

    def add_text(self, tag: str, text: str, step: int) -> None:
        from torch.utils.tensorboard.summary import text as text_summary

        self._summary(text_summary(tag, text), step)

    def flush(self) -> None:
        if self._file is not None:
            with self._naming():
                self._file.flush()

    def close(self) -> None:
        """Flush and close; after a failed write only close (the error has been raised already)."""
        f, self._file = self._file, None
        if f is not None:
            with self._naming():
                f.close()

    def _summary(self, summary, step: int) -> None:
        self._write(self._event(wall_time=time.time(), step=int(step), summary=summary))

    def _write(self, event) -> None:
        if self._file is None:
            raise ValueError(f"{self.path} is closed")
        with self._naming():
            self._records.write(event.SerializeToString())

    @contextlib.contextmanager
    def _naming(self) -> Iterator[None]:
        """An ``OSError`` inside names the event file; the file is closed and its unwritten buffer
        dropped (a full disk would refuse it again at every later call)."""
        try:
            yield
        except OSError as e:
            f, self._file = self._file, None
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
            raise OSError(e.errno, e.strerror or str(e), str(self.path)) from None
