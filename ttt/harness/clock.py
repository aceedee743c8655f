"""The CPU time a training run has spent learning, logged as ``train/cpu_seconds`` at every checkpoint.

Strength per CPU-hour compares learners by what their training cost, so the clock counts the CPU
seconds of the process (``time.process_time``: every thread of it, so torch's threads too) from the
start of training, and leaves out every evaluation the process runs (``left_out``): test games, tactics
suites and value measures are a cost of watching a run, not of training it. A resumed run goes on from
the figure its last checkpoint logged (``logged_at``), so a run trained in several sessions reports the
sum of them. Runs side by side (``seeds=K``) share one process: each logs the group's CPU time, and one
run's share is that figure over K. The figure includes the work of the machine's other processes only
through slower caches; it is the process's CPU time, not the wall time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CPU_TAG = "train/cpu_seconds"
_LEFT_OUT = [0.0]  # CPU seconds of the evaluations this process has run, for every clock in it


class TrainingClock:
    """CPU seconds of training: ``before`` (the earlier sessions of a resumed run) plus this process's
    CPU time since the clock was made, less the evaluations run since then."""

    def __init__(self, before: float = 0.0) -> None:
        self.before = float(before)
        self._start = time.process_time()
        self._left_out_at_start = _LEFT_OUT[0]

    def seconds(self) -> float:
        return self.before + (time.process_time() - self._start) - (_LEFT_OUT[0] - self._left_out_at_start)


@contextmanager
def left_out() -> Iterator[None]:
    """Leave the CPU time of the block (an evaluation) out of every clock of this process."""
    start = time.process_time()
    try:
        yield
    finally:
        _LEFT_OUT[0] += time.process_time() - start


def logged_at(tb_dir: Path, step: int) -> float:
    """The ``train/cpu_seconds`` a run logged at the latest step up to ``step`` (its checkpoint's), or 0
    when it logged none (a run from before the clock)."""
    from ttt.harness.curves import read_run

    if not Path(tb_dir).is_dir():
        return 0.0
    curve = read_run(Path(tb_dir)).curves.get(CPU_TAG)
    if curve is None:
        return 0.0
    points = [(s, v) for s, v in zip(curve.steps, curve.values, strict=True) if s <= step]
    return float(max(points)[1]) if points else 0.0
