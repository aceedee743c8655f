"""What the entry points share: one-line errors with exit codes, and outputs that survive.

Exit codes: 0 done; 2 an error the user can fix (a bad value, a bad checkpoint, a refused run
folder), printed as one line ``error: ...``; 1 an output that could not be written where asked
(the result went to a fallback file, named in the message); 130 interrupted (Ctrl-C or SIGTERM).
``HYDRA_FULL_ERROR=1`` shows the traceback of an error instead of the one line.

Outputs are checked for writability before any work starts (``check_writable_file``,
``check_writable_dir``); an output that still fails at the end is written to a fallback file
(``write_with_fallback``), so a late failure never loses the result.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ttt.checkpoint import CheckpointError


class OutputError(Exception):
    """An output could not be written where asked; it went to ``fallback``, which the message names."""

    def __init__(self, message: str, fallback: Path) -> None:
        super().__init__(message)
        self.fallback = fallback


class Interrupted(Exception):
    """The user stopped the work (Ctrl-C or SIGTERM); what could be saved has been, and said where."""


def plain_help(doc: str) -> str:
    """A module docstring as ``--help`` text, with the double backticks of its literals removed."""
    return re.sub(r"``(.+?)``", r"\1", doc, flags=re.DOTALL).strip() + "\n"


def full_errors() -> bool:
    """Whether tracebacks were asked for (``HYDRA_FULL_ERROR=1``)."""
    return os.environ.get("HYDRA_FULL_ERROR") == "1"


def run_cli(function: Callable[..., Any], *args: Any) -> Any:
    """Call ``function(*args)``; expected errors become one line on stderr and an exit code."""
    try:
        return function(*args)
    except Interrupted:
        sys.exit(130)  # the message (what was saved, how to resume) is already printed
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
    except (CheckpointError, ValueError) as e:
        if full_errors():
            raise
        print(f"error: {one_line(e)}", file=sys.stderr)
        sys.exit(2)
    except (OutputError, OSError) as e:
        if full_errors():
            raise
        print(f"error: {one_line(e)}", file=sys.stderr)
        sys.exit(1)


def one_line(error: BaseException) -> str:
    """The message of ``error`` on one line (its first line; the type name when it has none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _probe(folder: Path) -> None:
    with tempfile.TemporaryFile(dir=folder, prefix=".ttt-write-test-"):
        pass


def check_writable_dir(path: str | os.PathLike, what: str) -> Path:
    """Create the folder ``path`` (with its parents) and check a file can be written in it.

    Raises ValueError, one line naming ``what`` and the path, when it is a file or cannot be
    created or written (a read-only filesystem, no permission). Returns the path.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what} {path} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        _probe(path)
    except OSError as e:
        raise ValueError(f"{what} {path} is not writable ({e.strerror or one_line(e)})") from None
    return path


def check_writable_file(path: str | os.PathLike, what: str) -> Path:
    """Check that the file ``path`` can be written, before the work that produces it starts.

    Raises ValueError, one line naming ``what`` and the path, when it is a folder or its folder
    cannot be created or written. Folders created for the check are removed again.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what} {path} is a folder, not a file")
    missing = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    try:
        if parent.exists() and not parent.is_dir():
            raise NotADirectoryError(20, "a parent is a file, not a folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        _probe(path.parent)
    except OSError as e:
        raise ValueError(f"{what} {path} is not writable ({e.strerror or one_line(e)})") from None
    finally:
        for folder in missing:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                pass
    return path


def fallback_path(path: Path) -> Path:
    """Where a result meant for ``path`` goes when ``path`` cannot be written: the system's temporary
    folder, with the file's name, a time stamp and the suffix kept."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.gettempdir()) / f"{path.stem}.{stamp}.{os.getpid()}{path.suffix}"


def write_json(path: str | os.PathLike, data: Any, what: str) -> Path:
    """``data`` as indented JSON at ``path`` (through ``write_with_fallback``); returns where it went."""
    import json

    text = json.dumps(data, indent=2) + "\n"
    return write_with_fallback(path, lambda p: p.write_text(text), what)


def write_with_fallback(path: str | os.PathLike, write: Callable[[Path], Any], what: str) -> Path:
    """``write(path)``; when that fails with an OSError, ``write(fallback_path(path))`` and raise
    OutputError naming both. Returns ``path`` when the first write succeeded."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
        return path
    except OSError as e:
        reason = e.strerror or one_line(e)
        fallback = fallback_path(path)
        write(fallback)
        raise OutputError(f"could not write the {what} to {path} ({reason}); it was written to {fallback}",
                          fallback) from None
