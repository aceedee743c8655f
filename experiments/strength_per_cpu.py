"""Strength per CPU-hour: the score of learners against the CPU time their training cost.

    python experiments/strength_per_cpu.py "plain TD=runs/plain" "dqn_444=runs/a+runs/b" "alphazero_444=runs/az"
        ["dqn_444 alone=runs/a@eval_alone/alphabeta:1/score"] [--tag eval/alphabeta:1/score]
        [--hours 0.25,0.5,1,2,3] [--figure FIG.png] [--csv TABLE.csv]

Each ``LABEL=DIR`` names a learner and the folder of its runs; every run under ``DIR`` (a folder with a
``tb/`` TensorBoard log, ``ttt.harness.curves.find_runs``) is one seed of that learner, and several folders of one
learner are joined with ``+``. From each run it reads the score curve of ``--tag``, or of the tag after
the learner's ``@`` (the evaluations' score, at their training-game counts; ``eval_alone/...``: a dqn run's
network without its rules, ``eval_alone=true``) and ``train/cpu_seconds`` (``ttt.harness.clock``: the process's CPU
seconds of training with every evaluation left out, logged at every checkpoint). A score point's CPU
time is the clock's figure at its training games: the logged figure where the clock was logged at that
step (runs save a checkpoint before every evaluation, so this is the usual case), else the linear
interpolation in training games between the two logged steps around it. Points outside the logged
steps have no known CPU time and are left out; stderr says how many, per run. Runs side by side
(``seeds=K``: ``seed_<s>`` folders of one group) share one process and each logs the group's CPU time;
a run's own share is that figure over K (K: ``seeds`` in the group folder's Hydra record; runs trained
one by one into ``seed_<s>`` folders have records of their own and count alone).

A run without ``train/cpu_seconds`` (trained before the clock existed), without the score tag, or
resumed from a checkpoint made before the clock existed (its clock starts again from 0 past game 0,
so the earlier CPU time is unknown) is refused: one line naming the run's folder, exit status 2.

Output: a Markdown table on stdout, one row per learner: the number of seeds; the CPU hours each run
spent in all (its last ``train/cpu_seconds``), mean ± sd over the seeds; the final score (each run's
last score point with a known CPU time), mean ± sd and the smallest; and for each budget of ``--hours``
the score reached within it: for each seed its last score point at or below the budget, mean ± sd over
the seeds whose training went at least that far (their count beside it when not all did; empty when
none did). sd is the sample standard deviation (n - 1); none for one seed.

``--csv FILE``     the same table as CSV (a mean, sd and seed count column per budget)
``--figure FILE``  score against CPU hours, one colour per learner: each seed's points as a thin line,
                   the mean over its seeds as a thick one (each seed's curve interpolated on a common
                   grid of CPU hours, from the latest first point to the earliest last point of the
                   seeds); needs matplotlib (``pip install -e '.[plot]'``)
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
from omegaconf import OmegaConf

from ttt.cli import ArgumentParser, check_writable_file, plain_help, run_cli, write_with_fallback
from ttt.harness.clock import CPU_TAG
from ttt.harness.curves import Curve, RunLog, find_runs, mean_band

DEFAULT_TAG = "eval/alphabeta:1/score"
DEFAULT_HOURS = "0.25,0.5,1,2,3"
X_LABEL = "CPU hours (training, evaluations left out)"
SEED_FOLDER = re.compile(r"seed_\d+")  # one of runs side by side (seeds=K)


class StrengthError(ValueError):
    """A one-line reason why there is no comparison (exit status 2)."""


# named tuples, not dataclasses: the tests load this script by its path, outside sys.modules, where
# a dataclass cannot resolve its annotations
class CpuCurve(NamedTuple):
    """One run's score against the CPU hours of its training (its share, for runs side by side)."""

    run: RunLog
    hours: np.ndarray  # CPU hours at each kept score point
    scores: np.ndarray
    total_hours: float  # the CPU hours the run spent in all: its last logged train/cpu_seconds
    left_out: int  # score points outside the logged steps of train/cpu_seconds (no known CPU time)


class Stat(NamedTuple):
    """Mean, sample sd (nan for fewer than two values) and count of the values of the seeds that have one."""

    mean: float
    sd: float
    n: int


class Row(NamedTuple):
    """One learner's row of the table: ``budgets`` in the order of the budgets asked for."""

    label: str
    seeds: int
    cpu_hours: Stat
    final: Stat
    final_min: float
    budgets: list[Stat]


# ------------------------------------------------------------------------------------ the computation
def side_by_side(run: RunLog) -> int:
    """How many runs shared the process of ``run``. A ``seed_<s>`` folder is one run of a group when its
    parent holds the group's Hydra record (``.hydra/config.yaml``, ``seeds=K``); one with a record of its
    own is a run alone (``python -m ttt.train ... run_dir=DIR/seed_<s>``); without either record, the
    ``seed_<s>`` folders with a ``tb/`` log beside its own."""
    if not SEED_FOLDER.fullmatch(run.dir.name) or not run.dir.parent.is_dir():
        return 1
    if (run.dir / ".hydra" / "config.yaml").is_file():  # trained alone into this folder
        return 1
    group = run.dir.parent / ".hydra" / "config.yaml"
    if group.is_file():
        return max(1, int(OmegaConf.load(group).get("seeds", 1)))
    return max(1, sum(1 for p in run.dir.parent.iterdir() if SEED_FOLDER.fullmatch(p.name) and (p / "tb").is_dir()))


def check_run(run: RunLog, tag: str) -> None:
    """``StrengthError`` naming the run's folder when it lacks ``train/cpu_seconds`` or ``tag``, or was
    resumed from before the clock existed (its first figure 0 past game 0)."""
    for need in (CPU_TAG, tag):
        if not len(run.curves.get(need, ())):
            hint = " (trained before the training clock existed)" if need == CPU_TAG else ""
            raise StrengthError(f"{run.dir}: no {need} logged{hint}")
    cpu = run.curves[CPU_TAG]
    if cpu.steps[0] > 0 and cpu.values[0] <= 0:
        raise StrengthError(f"{run.dir}: {CPU_TAG} starts from 0 at game {int(cpu.steps[0])}: resumed from a "
                            f"checkpoint made before the training clock existed, so its CPU time is unknown")


def score_against_cpu(run: RunLog, tag: str, share: int | None = None) -> CpuCurve:
    """The score points of ``tag`` at the CPU hours of training (module docstring), each the clock's
    figure at the point's training games: exact where logged, linear between logged steps; points
    outside the logged steps are left out and counted. ``share``: how many runs shared the process
    (default ``side_by_side(run)``); the CPU time is divided by it."""
    check_run(run, tag)
    share = side_by_side(run) if share is None else int(share)
    cpu, score = run.curves[CPU_TAG], run.curves[tag]
    inside = (score.steps >= cpu.steps[0]) & (score.steps <= cpu.steps[-1])
    seconds = np.interp(score.steps[inside].astype(np.float64), cpu.steps.astype(np.float64), cpu.values)
    hours = seconds / (3600.0 * share)
    return CpuCurve(run, hours, score.values[inside].astype(np.float64), float(cpu.values[-1]) / (3600.0 * share),
                    int((~inside).sum()))


def stat(values: Sequence[float]) -> Stat:
    """Mean, sample sd and count of ``values`` (nan mean for none, nan sd for fewer than two)."""
    values = [float(v) for v in values]
    mean = statistics.fmean(values) if values else math.nan
    sd = statistics.stdev(values) if len(values) >= 2 else math.nan
    return Stat(mean, sd, len(values))


def score_within(curve: CpuCurve, budget: float) -> float | None:
    """The run's last score point at or below ``budget`` CPU hours; None when its training stopped
    short of the budget or it has no point within it."""
    if curve.total_hours < budget:
        return None
    within = np.flatnonzero(curve.hours <= budget)
    return float(curve.scores[within[-1]]) if len(within) else None


def budget_scores(curves: Sequence[CpuCurve], budgets: Sequence[float]) -> list[Stat]:
    """For each budget: mean, sd and count over the seeds of ``score_within`` (the seeds that have one)."""
    return [stat([s for s in (score_within(c, b) for c in curves) if s is not None]) for b in budgets]


def table_rows(learners: dict[str, list[CpuCurve]], budgets: Sequence[float]) -> list[Row]:
    """One row per learner, in the order given (``Row``)."""
    rows = []
    for label, curves in learners.items():
        finals = [float(c.scores[-1]) for c in curves]
        rows.append(Row(label, len(curves), stat([c.total_hours for c in curves]), stat(finals), min(finals),
                        budget_scores(curves, budgets)))
    return rows


def mean_curve(curves: Sequence[CpuCurve], points: int = 200) -> Curve | None:
    """The mean score over the seeds on a common grid of CPU hours, each seed's curve interpolated
    linearly, from the latest first point to the earliest last point of the seeds (``ttt.harness.curves.mean_band``);
    when every seed has one point, the mean point (its hours and score each averaged); None when the
    seeds' spans do not overlap."""
    if all(len(c.hours) == 1 for c in curves):  # mean_band averages the steps of aligned points too
        band = mean_band([Curve(c.hours, c.scores) for c in curves])
        return Curve(band.steps, band.mean)
    low, high = max(float(c.hours[0]) for c in curves), min(float(c.hours[-1]) for c in curves)
    if high < low:
        return None
    grid = np.linspace(low, high, points if high > low else 1)
    band = mean_band([Curve(grid, np.interp(grid, c.hours, c.scores)) for c in curves])
    return Curve(band.steps, band.mean)


# ------------------------------------------------------------------------------------ reading the runs
def parse_learner(text: str) -> tuple[str, list[Path], str | None]:
    """``LABEL=DIR[+DIR...][@TAG]`` -> (label, folders, tag or None); ``argparse.ArgumentTypeError`` when
    malformed."""
    label, sep, rest = text.partition("=")
    dirs, at, tag = rest.partition("@")
    folders = [Path(d.strip()) for d in dirs.split("+") if d.strip()]
    if not sep or not label.strip() or not folders or (at and not tag.strip()):
        raise argparse.ArgumentTypeError(f"expected LABEL=DIR[+DIR...][@TAG], got {text!r}")
    return label.strip(), folders, tag.strip() or None


def parse_hours(text: str) -> list[float]:
    """``0.25,0.5,1`` -> [0.25, 0.5, 1.0]: CPU-hour budgets, each a positive number."""
    try:
        hours = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        hours = []
    if not hours or not all(math.isfinite(h) and h > 0 for h in hours):
        raise argparse.ArgumentTypeError(f"expected positive numbers separated by commas, got {text!r}")
    return hours


def load_learners(learners: Sequence[tuple[str, list[Path], str | None]], default_tag: str
                  ) -> dict[str, list[CpuCurve]]:
    """Every run of every learner as a ``CpuCurve`` of its tag (``default_tag`` unless the learner names
    one after ``@``); notes on stderr for points left out and
    for runs side by side. ``StrengthError`` for a missing folder, a folder without runs, a learner
    named twice, a run ``check_run`` refuses, or one with no score point of known CPU time."""
    out: dict[str, list[CpuCurve]] = {}
    groups: set[Path] = set()  # the folders of runs side by side, each noted once
    for label, folders, own_tag in learners:
        tag = own_tag or default_tag
        if label in out:
            raise StrengthError(f"learner {label!r} is named twice; join its folders with + (LABEL=DIR+DIR)")
        curves = []
        for folder in folders:
            if not folder.is_dir():
                raise StrengthError(f"{label}: {folder}: no such folder")
            runs = find_runs(folder)
            if not runs:
                raise StrengthError(f"{label}: no runs under {folder} (a run is a folder with a tb/ TensorBoard log)")
            for run in runs:
                share = side_by_side(run)
                curve = score_against_cpu(run, tag, share)
                if curve.left_out:
                    cpu = run.curves[CPU_TAG]
                    print(f"strength_per_cpu: {run.dir}: {curve.left_out} of {len(run.curves[tag])} {tag} points left "
                          f"out (outside games {int(cpu.steps[0])}..{int(cpu.steps[-1])}, where {CPU_TAG} is logged)",
                          file=sys.stderr)
                if not len(curve.hours):
                    raise StrengthError(f"{run.dir}: no {tag} point within the games where {CPU_TAG} is logged")
                if share > 1 and run.dir.parent not in groups:
                    groups.add(run.dir.parent)
                    print(f"strength_per_cpu: {run.dir.parent}: {share} runs side by side; each run's CPU time is "
                          f"the group's over {share}", file=sys.stderr)
                curves.append(curve)
        out[label] = curves
    return out


# ------------------------------------------------------------------------------------ the outputs
def _hours_text(h: float) -> str:
    return f"{h:g}"


def _stat_text(s: Stat, of: int, digits: str = ".3f") -> str:
    if s.n == 0:
        return ""
    text = f"{s.mean:{digits}}" + ("" if math.isnan(s.sd) else f" ± {s.sd:{digits}}")
    return text + (f" ({s.n} of {of})" if s.n < of else "")


def markdown(rows: Sequence[Row], budgets: Sequence[float], tag: str) -> str:
    """The table as Markdown, with a line saying what it shows."""
    head = ["learner", "seeds", "CPU hours", "final score", "final min", *(f"at {_hours_text(b)} h" for b in budgets)]
    lines = [f"{tag} against the CPU hours of training (evaluations left out); mean ± sd over the seeds", "",
             "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        cells = [r.label, str(r.seeds), _stat_text(r.cpu_hours, r.seeds, ".3g"), _stat_text(r.final, r.seeds),
                 f"{r.final_min:.3f}", *(_stat_text(s, r.seeds) for s in r.budgets)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _number(x: float) -> str:
    return "" if math.isnan(x) else f"{x:.6g}"


def table_csv(rows: Sequence[Row], budgets: Sequence[float]) -> str:
    """The table as CSV: numbers with 6 significant digits, empty where there is none."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    at = [f"at_{_hours_text(b)}h" for b in budgets]
    w.writerow(["learner", "seeds", "cpu_hours_mean", "cpu_hours_sd", "final_mean", "final_sd", "final_min",
                *(f"{a}_{k}" for a in at for k in ("mean", "sd", "n"))])
    for r in rows:
        w.writerow([r.label, r.seeds, _number(r.cpu_hours.mean), _number(r.cpu_hours.sd), _number(r.final.mean),
                    _number(r.final.sd), _number(r.final_min),
                    *(x for s in r.budgets for x in (_number(s.mean), _number(s.sd), s.n))])
    return out.getvalue()


def draw(learners: dict[str, list[CpuCurve]], tag: str, output: Path) -> Path:
    """Score against CPU hours (module docstring) into ``output``; returns where it went."""
    try:
        import matplotlib
    except ImportError as e:
        raise StrengthError("--figure needs matplotlib: pip install -e '.[plot]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cmap = matplotlib.colormaps["tab10" if len(learners) <= 10 else "tab20"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    try:
        for i, (label, curves) in enumerate(learners.items()):
            color = cmap(i % cmap.N)
            for c in curves:
                ax.plot(c.hours, c.scores, color=color, lw=0.8, alpha=0.45, marker="o" if len(c.hours) == 1 else None)
            mean = mean_curve(curves)
            if mean is None:  # the seeds' spans do not overlap: no mean, the seeds' lines only
                ax.plot([], [], color=color, lw=2.5, label=f"{label} (n={len(curves)}; spans do not overlap)")
            else:
                ax.plot(mean.steps, mean.values, color=color, lw=2.5, label=f"{label} (n={len(curves)})",
                        marker="o" if len(mean) == 1 else None)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlim(left=0)
        ax.set_xlabel(X_LABEL)
        ax.set_ylabel(tag)
        ax.set_title(f"{tag} against training CPU time (thin: seeds; thick: mean over seeds)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        fmt = output.suffix.lstrip(".") or "png"
        return write_with_fallback(output, lambda tmp: fig.savefig(tmp, dpi=100, format=fmt), "figure")
    finally:
        plt.close(fig)


# ------------------------------------------------------------------------------------ the command
def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="strength_per_cpu.py", description=plain_help(__doc__),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("learners", nargs="+", type=parse_learner, metavar="LABEL=DIR[+DIR...][@TAG]",
                   help="a learner's label, the folder(s) of its runs (each run one seed), and its own score tag")
    p.add_argument("--tag", default=DEFAULT_TAG, help=f"the score tag (default {DEFAULT_TAG})")
    p.add_argument("--hours", type=parse_hours, default=parse_hours(DEFAULT_HOURS),
                   help=f"CPU-hour budgets, separated by commas (default {DEFAULT_HOURS})")
    p.add_argument("--figure", type=Path, help="write the figure of score against CPU hours here (a .png)")
    p.add_argument("--csv", type=Path, help="write the table as CSV here")
    return p


def compare(args: argparse.Namespace) -> None:
    for path, what in ((args.figure, "--figure"), (args.csv, "--csv")):
        if path is not None:
            check_writable_file(path, what)
    learners = load_learners(args.learners, args.tag)
    rows = table_rows(learners, args.hours)
    print(markdown(rows, args.hours, args.tag), end="")
    if args.csv is not None:
        text = table_csv(rows, args.hours)
        print(f"strength_per_cpu: wrote {write_with_fallback(args.csv, lambda p: p.write_text(text), 'table')}",
              file=sys.stderr)
    if args.figure is not None:
        print(f"strength_per_cpu: wrote {draw(learners, args.tag, args.figure)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    run_cli(compare, args)


if __name__ == "__main__":
    main()
