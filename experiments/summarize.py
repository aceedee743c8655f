"""Summarise a multirun in the shape of the paper's results table.

    python experiments/summarize.py runs/multirun/<date> [tag=eval/benchmark/score] [last=40]

For every run directory under the given folder (one with a ``tb/`` TensorBoard log) it reads the
curve of ``tag``, takes its peak and the mean of its last ``last`` points, groups the runs by their
Hydra overrides without ``seed=...`` (so the seeds of one setting form one row), and prints
mean +- standard deviation over the runs of each group, in percent.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

DEFAULT_TAG, DEFAULT_LAST = "eval/benchmark/score", 40


def read_curve(tb_dir: Path, tag: str) -> list[float]:
    """The values of scalar ``tag`` in a run's TensorBoard folder, in step order ([] if absent)."""
    acc = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0})
    acc.Reload()
    if tag not in acc.Tags().get("scalars", []):
        return []
    return [e.value for e in sorted(acc.Scalars(tag), key=lambda e: e.step)]


def group_key(run_dir: Path) -> str:
    """The run's overrides without the seed (the folder name where Hydra left no record)."""
    overrides = run_dir / ".hydra" / "overrides.yaml"
    if overrides.is_file():
        items = yaml.safe_load(overrides.read_text()) or []
        return ",".join(x for x in items if not x.lstrip("+").startswith("seed=")) or "(defaults)"
    return run_dir.name


def _sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def summarize(root: Path, tag: str = DEFAULT_TAG, last: int = DEFAULT_LAST) -> list[dict]:
    """One row per group: name, trials, peak and end (mean, sd) in percent."""
    if last < 1:
        raise ValueError(f"last={last}: the end is the mean of the last N >= 1 points")
    groups: dict[str, list[tuple[float, float]]] = {}
    for tb in sorted(root.rglob("tb")):
        curve = read_curve(tb, tag)
        if curve:
            groups.setdefault(group_key(tb.parent), []).append((max(curve), statistics.fmean(curve[-last:])))
    rows = []
    for key, runs in sorted(groups.items()):
        peaks, ends = [100 * p for p, _ in runs], [100 * e for _, e in runs]
        rows.append(dict(group=key, trials=len(runs), peak=(statistics.fmean(peaks), _sd(peaks)),
                         end=(statistics.fmean(ends), _sd(ends))))
    return rows


def parse_last(text: str) -> int:
    """``last=N``: a whole number of points >= 1 (0 or a negative N would silently average other points)."""
    try:
        last = int(text)
    except ValueError:
        last = 0
    if last < 1:
        sys.exit(f"summarize: last={text}: give a whole number of points >= 1")
    return last


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if argv else 2)
    root, opts = Path(argv[0]), {"tag": DEFAULT_TAG, "last": str(DEFAULT_LAST)}
    for arg in argv[1:]:
        key, sep, value = arg.partition("=")
        if not sep or key not in opts:
            sys.exit(f"summarize: unknown argument {arg!r}; use tag=... last=N")
        opts[key] = value
    if not root.is_dir():
        sys.exit(f"summarize: {root}: no such folder")
    last = parse_last(opts["last"])
    rows = summarize(root, opts["tag"], last)
    if not rows:
        sys.exit(f"summarize: no run under {root} has a {opts['tag']!r} curve")
    print(f"{'setting':90s} {'trials':>6s} {'peak %':>14s} {'end %':>14s}")
    for r in rows:
        print(f"{r['group'][:90]:90s} {r['trials']:6d} {r['peak'][0]:7.1f} +-{r['peak'][1]:4.1f} "
              f"{r['end'][0]:7.1f} +-{r['end'][1]:4.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
