"""What the entry points share: one-line errors with exit codes, and outputs that survive.

Exit codes: 0 done; 2 an error the user can fix (a bad value, a bad checkpoint, a refused run
folder), printed as one line ``error: ...``; 1 a file that could not be written (a full disk, an
I/O error: the line names the file and what is safe on disk; a result that went to a fallback file
names it); 130 interrupted (Ctrl-C or SIGTERM, from the first line of the package on, without a
traceback: ``exit_on_signals``). ``HYDRA_FULL_ERROR=1`` shows the traceback of an error instead of
the one line.

Outputs are checked for writability before any work starts (``check_writable_file``,
``check_writable_dir``) and written atomically (``ttt.checkpoint.atomic_write``: an earlier file
stays whole whatever happens); an output that still fails at the end is written to a fallback
file (``write_with_fallback``), so a late failure never loses the result.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ttt.checkpoint import CheckpointError, atomic_write

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class OutputError(Exception):
    """A file could not be written where asked; the message (one line) names it, what is safe on
    disk, and ``fallback``, where the result went instead (None when it went nowhere)."""

    def __init__(self, message: str, fallback: Path | None = None) -> None:
        super().__init__(message)
        self.fallback = fallback


class Interrupted(Exception):
    """The user stopped the work (Ctrl-C or SIGTERM); what could be saved has been, and said where."""


def plain_help(doc: str) -> str:
    """A module docstring as ``--help`` text, with the double backticks of its literals removed."""
    return re.sub(r"``(.+?)``", r"\1", doc, flags=re.DOTALL).strip() + "\n"


def exit_on_help(argv: list[str], doc: str, needed: bool = True) -> None:
    """Print ``doc`` as ``--help`` text (``plain_help``) and exit 0 when ``argv`` holds ``-h`` or ``--help``,
    anywhere (``DIR --help`` too); with nothing in ``argv`` and ``needed``, print it and exit 2 (the
    command needs arguments)."""
    if any(arg in ("-h", "--help") for arg in argv) or (needed and not argv):
        print(plain_help(doc), end="")
        sys.exit(0 if argv else 2)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose refusal of a bad argument is one line ``error: ...`` and exit code 2, as
    every entry point's (argparse's own prints the usage above it), and whose ``--help`` is help wherever
    it stands (argparse's refuses a bad argument before it)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if any(arg in ("-h", "--help") for arg in (sys.argv[1:] if args is None else args)):
            self.print_help()
            self.exit(0)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def key_values(argv: list[str], defaults: dict[str, str]) -> dict[str, str]:
    """The ``key=value`` arguments of a script over its ``defaults`` (every key one of theirs); a one-line
    ValueError naming a bad argument and the known keys."""
    out = dict(defaults)
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in defaults:
            raise ValueError(f"{arg!r}: give key=value with a key of {', '.join(defaults)} (see --help)")
        out[key] = value
    return out


def full_errors() -> bool:
    """Whether tracebacks were asked for (``HYDRA_FULL_ERROR=1``)."""
    return os.environ.get("HYDRA_FULL_ERROR") == "1"


def _exit_at_once(signum: int, frame: Any) -> None:
    os.write(2, f"interrupted ({signal.Signals(signum).name})\n".encode())
    # at once: nothing is written yet, and a SystemExit raised inside an import can be swallowed there
    os._exit(130)


def exit_on_signals() -> None:
    """Ctrl-C or SIGTERM from now on exits with 130 and one line, no traceback. Called first thing
    when ``python -m ttt.<entry point>`` imports the package (``ttt/__init__.py``): the imports and
    Hydra's start-up that follow take seconds (``run_cli`` then makes SIGTERM a Ctrl-C for the work
    itself)."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored by whoever started us (nohup): keep it so
            signal.signal(signum, _exit_at_once)


def run_cli(function: Callable[..., Any], *args: Any) -> Any:
    """Call ``function(*args)``; expected errors become one line on stderr and an exit code.

    While it runs, SIGTERM is a Ctrl-C (``KeyboardInterrupt``, exit 130), so work that saves on
    Ctrl-C saves on SIGTERM too."""
    handlers = {}
    if threading_main():
        handlers = {signum: signal.signal(signum, signal.default_int_handler) for signum in STOP_SIGNALS}
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
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def threading_main() -> bool:
    """Whether this is the main thread (the only one that may set signal handlers)."""
    import threading

    return threading.current_thread() is threading.main_thread()


def guard_hydra_record() -> None:
    """Hydra writes its record of a job (``.hydra/config.yaml``, ``hydra.yaml``, ``overrides.yaml``)
    into the job's folder before the job starts: a start that is then refused (a bad value, another
    run's lock, a resume with other settings) would have rewritten the record of the run already in
    that folder, and ``summarize.py`` and ``ttt.plot``, which read it, would file that run under the
    refused command. Hold the record back instead: ``write_hydra_record`` writes it once the run has
    its first checkpoint (``ttt.harness.training.Run``)."""
    import hydra.core.utils as hydra_utils
    from omegaconf import OmegaConf

    if getattr(hydra_utils._save_config, "ttt_guarded", False):
        return

    def held(cfg: Any, filename: str, output_dir: Path) -> None:
        _HELD.setdefault(str(Path(output_dir).resolve()), {})[filename] = OmegaConf.to_yaml(cfg)

    held.ttt_guarded = True  # type: ignore[attr-defined]
    hydra_utils._save_config = held


_HELD: dict[str, dict[str, str]] = {}  # folder -> {file name: text}: the records Hydra asked to write


def write_hydra_record(run_dir: str | os.PathLike) -> None:
    """Write Hydra's record of the job held back for ``run_dir`` into ``run_dir/.hydra/`` (atomically,
    replacing an earlier run's); nothing when none is held (outside Hydra)."""
    folder = Path(run_dir) / ".hydra"
    for filename, text in _HELD.pop(str(folder.resolve()), {}).items():
        atomic_write(folder / filename, lambda tmp, text=text: tmp.write_text(text, encoding="utf-8"))


def guard_config_files() -> None:
    """A config file that is not valid YAML (an experiment with a bracket left open) would end in
    Hydra's traceback of the YAML parser: make it one line naming the file, line and column, and exit
    code 2. Installed first thing by ``python -m ttt.<entry point>`` (``ttt/__init__.py``), for every
    entry point (they all compose through Hydra)."""
    import hydra._internal.utils as hydra_internal

    report = hydra_internal.run_and_report
    if getattr(report, "ttt_guarded", False):
        return

    def guarded(func: Callable[[], Any]) -> Any:
        try:
            return report(lambda: _raise_yaml(func))
        except _YAMLFileError as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(2)

    def _raise_yaml(func: Callable[[], Any]) -> Any:
        import yaml

        try:
            return func()
        except yaml.YAMLError as e:
            if full_errors():
                raise
            mark = getattr(e, "problem_mark", None)
            where = f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}" if mark else "a config file"
            what = ": ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x)
            raise _YAMLFileError(f"{where}: not valid YAML ({what or one_line(e)}); fix the file") from None

    guarded.ttt_guarded = True  # type: ignore[attr-defined]
    hydra_internal.run_and_report = guarded


class _YAMLFileError(BaseException):
    """A config file that is not valid YAML, on its way past Hydra's report (a BaseException: Hydra
    prints a traceback for every Exception)."""


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
    if path is None or not str(path).strip():
        raise ValueError(f"{what}='' names no folder; give a folder (e.g. {what}=runs/mine)")
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise ValueError(f"{what} {path} is a symbolic link to {os.readlink(path)}, which does not exist")
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
    """``write(tmp)`` writes the output; it becomes ``path`` atomically (``atomic_write``). When that
    fails with an OSError, the output goes to ``fallback_path(path)`` and OutputError names both (and
    says an earlier ``path`` is unchanged). Returns ``path`` when the first write succeeded."""
    path = Path(path)
    try:
        return atomic_write(path, write)
    except OSError as e:
        reason = e.strerror or one_line(e)
        fallback = fallback_path(path)
        atomic_write(fallback, write)
        earlier = "; the earlier file there is unchanged" if path.is_file() else ""
        raise OutputError(f"could not write the {what} to {path} ({reason}){earlier}; it was written to {fallback}",
                          fallback) from None


def print_csv(rows: list[dict], out: str | os.PathLike | None = None) -> str:
    """``rows`` as CSV (every column any row has, in first-seen order; a row without one leaves it empty) to
    stdout, and to the file ``out`` when given; returns the text."""
    import csv
    import io

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
    writer.writeheader()
    writer.writerows(rows)
    sys.stdout.write(text.getvalue())
    if out is not None:
        Path(out).write_text(text.getvalue())
    return text.getvalue()
