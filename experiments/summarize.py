"""Summarise a multirun in the shape of the paper's results table, as Markdown or CSV.

    python experiments/summarize.py runs/multirun/<date> [tag=eval/benchmark/score] [last=40] [format=md|csv]

For every run under the given folder (a folder with a ``tb/`` TensorBoard log) it reads the curve of
``tag``, takes its peak and the mean of its last ``last`` points, groups the runs by their settings
(Hydra overrides without ``seed=...``, see ``ttt.curves``: the seeds of one setting form one row),
and prints mean +- standard deviation over the runs of each group, in percent, with n (runs) and
the number of points per run. A group with a run of fewer than ``last`` points gets no end value
but a note saying so; it is never averaged over fewer points.
"""

from __future__ import annotations

import csv
import io
import statistics
import sys
from pathlib import Path

from ttt.curves import find_runs, group_runs, short_labels

DEFAULT_TAG, DEFAULT_LAST = "eval/benchmark/score", 40
FORMATS = ("md", "csv")


def _sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def summarize(root: Path, tag: str = DEFAULT_TAG, last: int = DEFAULT_LAST) -> list[dict]:
    """One row per group of runs that log ``tag``: group (label), trials (n), points (fewest points of
    a run), peak (mean, sd) in percent, end (mean, sd) in percent or None when a run has fewer than
    ``last`` points, note (why end is missing, else ""), seeds (of the runs, None where unknown)."""
    if last < 1:
        raise ValueError(f"last={last}: the end is the mean of the last N >= 1 points")
    rows = []
    for label, runs in group_runs(r for r in find_runs(root) if len(r.curves.get(tag, ()))).items():
        curves = [r.curves[tag].values for r in runs]
        points = min(len(c) for c in curves)
        peaks = [100 * float(c.max()) for c in curves]
        end, note = None, ""
        if points >= last:
            ends = [100 * statistics.fmean(c[-last:].tolist()) for c in curves]
            end = (statistics.fmean(ends), _sd(ends))
        else:
            note = f"fewer than {last} points ({points})"
        rows.append(dict(group=label, trials=len(runs), points=points, peak=(statistics.fmean(peaks), _sd(peaks)),
                         end=end, note=note, seeds=[r.seed for r in runs]))
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


def _pm(x: tuple[float, float] | None) -> str:
    return "" if x is None else f"{x[0]:.1f} ± {x[1]:.1f}"


def markdown_table(rows: list[dict], tag: str = DEFAULT_TAG, last: int = DEFAULT_LAST) -> str:
    """The rows as a Markdown table (percent, mean ± sd over the runs of each setting); with several
    settings, what they all share is said once above the table and left out of the rows."""
    common, labels = short_labels([r["group"] for r in rows]) if len(rows) > 1 else ("", [r["group"] for r in rows])
    lines = [f"Every setting also has `{common}`.", ""] if common else []
    lines += [f"| setting | n | points | peak {tag} % | mean of last {last} % |", "|---|---|---|---|---|"]
    for r, label in zip(rows, labels, strict=True):
        end = _pm(r["end"]) or f"n/a: {r['note']}"
        lines.append(f"| `{label}` | {r['trials']} | {r['points']} | {_pm(r['peak'])} | {end} |")
    return "\n".join(lines) + "\n"


def csv_table(rows: list[dict], tag: str = DEFAULT_TAG, last: int = DEFAULT_LAST) -> str:
    """The rows as CSV: one line per setting; end columns empty (and a note) when a run is too short."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["setting", "n", "points", "tag", "last", "peak_mean", "peak_sd", "end_mean", "end_sd", "note"])
    for r in rows:
        end = [f"{r['end'][0]:.2f}", f"{r['end'][1]:.2f}"] if r["end"] else ["", ""]
        w.writerow([r["group"], r["trials"], r["points"], tag, last, f"{r['peak'][0]:.2f}", f"{r['peak'][1]:.2f}",
                    *end, r["note"]])
    return out.getvalue()


def duplicate_seeds(rows: list[dict]) -> list[str]:
    """Warnings for groups in which two runs share a seed (the same run counted twice)."""
    out = []
    for r in rows:
        seeds = [s for s in r["seeds"] if s is not None]
        twice = sorted({s for s in seeds if seeds.count(s) > 1})
        if twice:
            out.append(f"summarize: warning: {r['group']}: seed {', '.join(map(str, twice))} appears more than once")
    return out


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if argv else 2)
    root, opts = Path(argv[0]), {"tag": DEFAULT_TAG, "last": str(DEFAULT_LAST), "format": "md"}
    for arg in argv[1:]:
        key, sep, value = arg.partition("=")
        if not sep or key not in opts:
            sys.exit(f"summarize: unknown argument {arg!r}; use tag=... last=N format=md|csv")
        opts[key] = value
    if opts["format"] not in FORMATS:
        sys.exit(f"summarize: format must be one of {', '.join(FORMATS)}, got {opts['format']!r}")
    if not root.is_dir():
        sys.exit(f"summarize: {root}: no such folder")
    tag, last = opts["tag"], parse_last(opts["last"])
    rows = summarize(root, tag, last)
    if not rows:
        sys.exit(f"summarize: no run under {root} has a {tag!r} curve")
    for warning in duplicate_seeds(rows):
        print(warning, file=sys.stderr)
    print((markdown_table if opts["format"] == "md" else csv_table)(rows, tag, last), end="")


if __name__ == "__main__":
    main(sys.argv[1:])
