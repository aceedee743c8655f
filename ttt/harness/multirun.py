"""Stopping a joblib multirun (``python -m ttt.train -m hydra/launcher=joblib ...``) without losing a job.

The parent passes every SIGINT or SIGTERM it gets to its jobs (the launcher's worker processes):
on the first, each job saves its checkpoint and stops as a single run does on Ctrl-C, the jobs not
begun yet are skipped, and the command exits with 130 once they are done. A job hears each signal
once: it leaves the terminal's process group when its worker starts, so a Ctrl-C reaches the parent
alone (a job that heard it twice, from the terminal and from the parent, would stop without saving).
A second signal stops the jobs at once: the parent passes it on, waits up to ``GRACE_SECONDS`` for
the jobs to give back their ``train.lock``, ends the workers still there and exits with 130; a third
ends them without waiting. No worker outlives the command.

A job's stop does not reach joblib as an exception: joblib would kill the other jobs while they save.
Nor does a job's error (a value refused when the job starts, exit status 2, its one line printed): the
job is recorded as failed (``JobFailed``), the other jobs run to their end, and the command then exits
with 1, naming the first failed job's overrides.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra.errors import CompactHydraException

from ttt.cli import STOP_SIGNALS, _exit_at_once, run_cli, threading_main
from ttt.harness.run_dir import LOCK_NAME

PARENT = "TTT_MULTIRUN_PARENT"  # environment: the pid of the multirun's parent, read by its workers
GRACE_SECONDS = 10.0  # after a second signal, how long the jobs may take to give back their locks

_stop: int | None = None  # the parent: the first signal
_skip = False  # a worker: a stop was heard, its next jobs are skipped
_sweep: Path | None = None


# ------------------------------------------------------------------------------------------ the parent
def pass_signals_to_jobs(sweep_dir: str | os.PathLike) -> None:
    """In the parent, before the launcher starts its workers: SIGINT and SIGTERM go on to the jobs
    (module docstring); ``sweep_dir`` holds the jobs' folders."""
    global _sweep
    _sweep = Path(sweep_dir)
    os.environ[PARENT] = str(os.getpid())  # the workers inherit it
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop_jobs)


def stopped() -> bool:
    """Whether a signal stopped the multirun (the parent then exits with 130)."""
    return _stop is not None


def _stop_jobs(signum: int, frame: Any) -> None:
    global _stop
    jobs = _jobs()
    if not jobs:  # no job has started: nothing to save
        _exit_at_once(signum, frame)
    _stop = signum
    for s in STOP_SIGNALS:
        signal.signal(s, _stop_jobs_at_once)
    os.write(2, f"ttt.train: {signal.Signals(signum).name} received; waiting for the jobs to save "
                f"(again stops at once)\n".encode())
    _send(jobs, signum)


def _stop_jobs_at_once(signum: int, frame: Any) -> None:
    for s in STOP_SIGNALS:
        signal.signal(s, _end_jobs)
    os.write(2, f"ttt.train: {signal.Signals(signum).name} again; stopping the jobs at once "
                f"(again ends them without waiting)\n".encode())
    jobs = _jobs()
    _send(jobs, signum)
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline and _locks_held(jobs):
        time.sleep(0.05)
    _end_jobs(signum, frame)


def _end_jobs(signum: int, frame: Any) -> None:
    _send(_jobs(), signal.SIGKILL)
    os._exit(130)


def _send(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:  # already gone
            pass


def _jobs() -> list[int]:
    """The pids of this process's children that take SIGTERM: the workers (``/proc``; none where it
    cannot be read). The launcher's resource trackers ignore it, and are left to end with the parent."""
    pids = []
    try:
        for task in os.listdir(f"/proc/{os.getpid()}/task"):
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return [pid for pid in pids if not _ignores_sigterm(pid)]


def _ignores_sigterm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            ignored = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
    except (OSError, StopIteration, ValueError):
        return False
    return bool(ignored & (1 << (signal.SIGTERM - 1)))


def _locks_held(pids: list[int]) -> bool:
    """Whether one of ``pids`` still holds a ``train.lock`` under the sweep folder."""
    if _sweep is None or not pids:
        return False
    for path in _sweep.rglob(LOCK_NAME):
        try:
            if json.loads(path.read_text()).get("pid") in pids:
                return True
        except (OSError, ValueError, AttributeError):  # released meanwhile, or being written
            continue
    return False


# ------------------------------------------------------------------------------------------ the jobs
def is_job() -> bool:
    """Whether this process is a worker of a joblib multirun's parent (not the parent itself, which
    runs the jobs when ``n_jobs`` is 1)."""
    return os.environ.get(PARENT) == str(os.getppid()) and threading_main()


def join_jobs() -> None:
    """In a worker, when it imports ``ttt.train`` (it starts from that module): leave the terminal's
    process group, and remember a signal heard between jobs (the next jobs are then skipped)."""
    if not is_job() or signal.getsignal(signal.SIGTERM) is _heard:
        return
    try:
        os.setpgid(0, 0)
    except OSError:  # not allowed here (a session leader): the terminal's signals still come
        pass
    for signum in STOP_SIGNALS:
        signal.signal(signum, _heard)


def _heard(signum: int, frame: Any) -> None:
    global _skip
    _skip = True


class JobFailed(CompactHydraException):
    """A job of a joblib multirun that ended with an error, printed by the job: Hydra records the job as
    failed instead of joblib killing the other jobs, and raises this once they are done (one line, exit 1)."""


def run_job(function: Callable[..., Any], *args: Any) -> Any:
    """``run_cli(function, *args)``; in a worker, a job begun after the stop is skipped (its empty folder
    removed), a job stopped by a signal (exit status 130, its checkpoint saved) returns None, and a job
    that ends with an error (its line printed) raises ``JobFailed``: never a SystemExit, which would make
    joblib kill the other jobs."""
    if not is_job():
        return run_cli(function, *args)
    join_jobs()
    global _skip
    if _skip:
        from hydra.core.hydra_config import HydraConfig

        try:
            Path(HydraConfig.get().runtime.output_dir).rmdir()  # the folder Hydra made for the job, when empty
        except (OSError, ValueError):
            pass
        print("ttt.train: the multirun was stopped before this job began; not started", file=sys.stderr, flush=True)
        return None
    try:
        return run_cli(function, *args)
    except SystemExit as e:
        if e.code in (0, None):
            raise
        if e.code != 130:
            from hydra.core.hydra_config import HydraConfig

            raise JobFailed(f"ttt.train: job {HydraConfig.get().job.num} of the sweep ended with exit status {e.code} "
                            f"(its error is above); the other jobs ran") from None
        _skip = True
        return None
