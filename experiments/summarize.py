"""Summarise a multirun in the shape of the paper's results table, as Markdown or CSV.

    python experiments/summarize.py (SWEEP_FOLDER | RUNS.csv) [tag=eval/benchmark/score] [last=40]
                                    [format=md|csv|runs|paper|fidelity|health] [where=KEY:V|V,...] [after=5000]

For every run under the given folder (a folder with a ``tb/`` TensorBoard log), or every row of a
CSV file that ``format=runs`` wrote, it reads the curve of ``tag``, takes its peak and the mean of
its last ``last`` points, groups the runs by their settings (Hydra overrides without ``seed=...``,
see ``ttt.harness.curves``: the seeds of one setting form one row), and prints mean +- standard deviation
over the runs of each group, in percent, with n (runs) and the number of points per run. A group
with a run of fewer than ``last`` points gets no end value but a note saying so; it is never
averaged over fewer points. A point that is no finite number (``nan``, ``inf``) is left out, with a
note on stderr naming the run, the tag and its training games.

where=KEY:V|V,...  only the runs whose facts match (``ttt.harness.curves.parse_where``): KEY one of network,
              regime, bias, protocol, values separated by ``|``; e.g.
              ``where=bias:true,protocol:online|batched B=64 lr=0.04``. A run matches when it has
              one of the values of every KEY; alternatives separated by ``;`` keep the runs that
              match one.

format=md     one Markdown row per setting (the default); with a column of the block rate (the mean
              of each run's last ``last`` points of ``eval/defence/block_rate``, ``ttt.evaluation.defence``) when
              the runs log it
format=csv    the same as CSV (``block_rate_mean``, ``block_rate_sd``: empty where not logged)
format=runs   one CSV row per run: setting, network, regime, biases, protocol, seed, peak, end mean,
              ``block_rate`` (the run's last point of ``eval/defence/block_rate``, empty where not
              logged) and every test point (``ttt.harness.curves.runs_csv``), and one more row per defence tag
              the run logs (``eval/defence/block_rate``, ``miss_value``; the ``tag`` column says which);
              the file to commit, which this script and ``python -m ttt.plot`` read back as they read
              the folder
format=paper  the paper's table on Score Four: its 10 rows (network x regime) with the paper's
              figures, this project's (rows grouped by network, regime, biases and protocol), and
              whether each lies inside the paper's mean +- 2 sd; a block-rate column as format=md's
              when the runs log it
format=health  one Markdown row per run of a dqn learner: the last point of each of its value head's
              health figures (``train/health/...``, ``ttt.agents.dqn.health``: saturated, logit, spread,
              win, leaves_win) and the largest share of saturated afterstates after=N games (default
              5000, the design's random phase) on; a run that logs none is left out
format=fidelity  the batching-fidelity table: per network, regime and biases, each protocol's score
              (online; batched B=.. lr=..) at the training games of at=50000,100000,200000 (mean +-
              sd over seeds), and each batched protocol's difference from online with its 95% Welch
              interval; verdict "same" when at every point the difference is below 0.05 and its
              interval holds 0 (docs/paper.md's criterion), else "differs"
"""

from __future__ import annotations

import csv
import io
import math
import statistics
import sys
from pathlib import Path

from ttt.cli import exit_on_help, run_cli
from ttt.harness.curves import (
    BLOCK_RATE,  # the share of forced blocks taken (ttt.evaluation.defence), beside the score
    NETWORK_NAMES,
    PAPER,  # the paper's table
    RunLog,
    drop_nonfinite,
    find_runs,
    group_runs,
    match_runs,
    parse_where,
    runs_csv,
    short_labels,
    t975,
)

DEFAULT_TAG, DEFAULT_LAST = "eval/benchmark/score", 40
FORMATS = ("md", "csv", "runs", "paper", "fidelity", "health")
HEALTH = "train/health/"  # the tags of the value head's health figures (ttt.agents.dqn.health.TAGS)
DEFAULT_AFTER = 5000  # format=health: the largest saturation from this many games on (the random phase's end)
DEFAULT_AT = "50000,100000,200000"

REGIME_NAMES = {"self_play": "self-play", "benchmark": "vs benchmark"}


def _sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def summarize(root: Path, tag: str = DEFAULT_TAG, last: int = DEFAULT_LAST,
              groups: dict[str, list[RunLog]] | None = None) -> list[dict]:
    """One row per group of runs that log ``tag``: group (label), trials (n), points (fewest points of
    a run), peak (mean, sd) in percent, end (mean, sd) in percent or None when a run has fewer than
    ``last`` points, note (why end is missing, else ""), seeds (of the runs, None where unknown),
    block_rate (mean, sd) in percent of each run's mean ``BLOCK_RATE`` over its last ``last`` points, or
    None unless every run of the group has that many.
    ``groups`` replaces the grouping by setting (``ttt.harness.curves.group_runs`` of the runs under ``root``)."""
    if last < 1:
        raise ValueError(f"last={last}: the end is the mean of the last N >= 1 points")
    if groups is None:
        groups = group_runs(r for r in find_runs(root) if len(r.curves.get(tag, ())))
    rows = []
    for label, runs in groups.items():
        runs = [r for r in runs if len(r.curves.get(tag, ()))]
        if not runs:
            continue
        curves = [r.curves[tag].values for r in runs]
        points = min(len(c) for c in curves)
        peaks = [100 * float(c.max()) for c in curves]
        end, note = None, ""
        if points >= last:
            ends = [100 * statistics.fmean(c[-last:].tolist()) for c in curves]
            end = (statistics.fmean(ends), _sd(ends))
        else:
            note = f"fewer than {last} points ({points})"
        rates = [r.curves[BLOCK_RATE].values for r in runs if len(r.curves.get(BLOCK_RATE, ())) >= last]
        block = None
        if len(rates) == len(runs):
            ends = [100 * statistics.fmean(c[-last:].tolist()) for c in rates]
            block = (statistics.fmean(ends), _sd(ends))
        rows.append(dict(group=label, trials=len(runs), points=points, peak=(statistics.fmean(peaks), _sd(peaks)),
                         end=end, note=note, seeds=[r.seed for r in runs], block_rate=block))
    return rows


def parse_last(text: str) -> int:
    """``last=N``: a whole number of points >= 1 (0 or a negative N would silently average other points)."""
    try:
        last = int(text)
    except ValueError:
        last = 0
    if last < 1:
        raise ValueError(f"last={text}: give a whole number of points >= 1")
    return last


def _pm(x: tuple[float, float] | None) -> str:
    return "" if x is None else f"{x[0]:.1f} ± {x[1]:.1f}"


def markdown_table(rows: list[dict], tag: str = DEFAULT_TAG, last: int = DEFAULT_LAST) -> str:
    """The rows as a Markdown table (percent, mean ± sd over the runs of each setting); with several
    settings, what they all share is said once above the table and left out of the rows."""
    common, labels = short_labels([r["group"] for r in rows]) if len(rows) > 1 else ("", [r["group"] for r in rows])
    lines = [f"Every setting also has `{common}`.", ""] if common else []
    block = any(r.get("block_rate") for r in rows)  # a column only when runs log the defence tags
    lines += [f"| setting | n | points | peak {tag} % | mean of last {last} % |"
              + (f" block rate, last {last} % |" if block else ""), "|---|---|---|---|---|" + ("---|" if block else "")]
    for r, label in zip(rows, labels, strict=True):
        end = _pm(r["end"]) or f"n/a: {r['note']}"
        lines.append(f"| `{label}` | {r['trials']} | {r['points']} | {_pm(r['peak'])} | {end} |"
                     + (f" {_pm(r.get('block_rate')) or 'n/a'} |" if block else ""))
    return "\n".join(lines) + "\n"


def csv_table(rows: list[dict], tag: str = DEFAULT_TAG, last: int = DEFAULT_LAST) -> str:
    """The rows as CSV: one line per setting; end columns empty (and a note) when a run is too short."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["setting", "n", "points", "tag", "last", "peak_mean", "peak_sd", "end_mean", "end_sd", "note",
                "block_rate_mean", "block_rate_sd"])
    for r in rows:
        end = [f"{r['end'][0]:.2f}", f"{r['end'][1]:.2f}"] if r["end"] else ["", ""]
        block = [f"{x:.2f}" for x in r["block_rate"]] if r.get("block_rate") else ["", ""]
        w.writerow([r["group"], r["trials"], r["points"], tag, last, f"{r['peak'][0]:.2f}", f"{r['peak'][1]:.2f}",
                    *end, r["note"], *block])
    return out.getvalue()


def paper_key(run: RunLog) -> tuple[str, str, str, str]:
    """(network, regime, biases, protocol) of a run: the rows of the paper-shaped table."""
    f = run.facts
    return f.get("network", "?"), f.get("regime", "?"), f.get("bias", "?"), f.get("protocol", "?")


def by_paper_key(runs: list[RunLog], tag: str) -> dict[tuple[str, str, str, str], list[RunLog]]:
    """The runs that log ``tag``, grouped by ``paper_key`` (the rows of the paper and fidelity tables)."""
    groups: dict[tuple[str, str, str, str], list[RunLog]] = {}
    for r in runs:
        if len(r.curves.get(tag, ())):
            groups.setdefault(paper_key(r), []).append(r)
    return groups


def _inside(here: tuple[float, float] | None, paper: tuple[float, float]) -> str:
    if here is None:
        return "n/a"
    low, high = paper[0] - 2 * paper[1], paper[0] + 2 * paper[1]
    return "yes" if low <= here[0] <= high else ("below" if here[0] < low else "above")


def unfinished(runs: list[RunLog], tag: str) -> tuple[int, int]:
    """(games of the shortest run's last test point, the games its setting plans: ``episodes=N``) when
    a run has not reached its plan, else (that point, 0)."""
    reached = min(int(r.curves[tag].steps[-1]) for r in runs)
    plans = [int(x.split("=", 1)[1]) for r in runs for x in r.setting if x.startswith("episodes=")]
    planned = max(plans, default=0)
    return reached, planned if reached < planned else 0


def paper_table(runs: list[RunLog], tag: str = DEFAULT_TAG, last: int = DEFAULT_LAST) -> str:
    """The paper's 10 rows with this project's figures beside them (Markdown, percent): one row per
    (network, regime, biases, protocol) the runs hold, and an empty row for a paper row none holds;
    the verdict says whether the mean here lies inside the paper's mean +- 2 sd (peak / end). When runs
    log ``BLOCK_RATE``, a last column gives each row's block rate over the same last points (``summarize``;
    n/a where its runs do not log it). Runs that have not reached their ``episodes=N`` get no end figure
    and no block rate, and their peak verdict says "so far"."""
    groups = by_paper_key(runs, tag)
    summary = dict(zip(groups, summarize(Path(), tag, last, {str(k): v for k, v in groups.items()}), strict=True))
    block = any(row["block_rate"] for row in summary.values())  # a column only when runs log the defence tags
    lines = [f"| network | regime | biases | protocol | paper peak | paper end (last 40) | peak here | "
             f"end here (last {last}) | points | n | inside paper ± 2 sd (peak / end) |"
             + (f" block rate here (last {last}) % |" if block else ""),
             "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if block else "")]
    order = list(PAPER) + sorted({k[:2] for k in groups} - set(PAPER))
    for net, regime in order:
        paper = PAPER.get((net, regime))
        keys = sorted(k for k in groups if k[:2] == (net, regime)) or [(net, regime, "", "")]
        for key in keys:
            row = summary.get(key)
            cells = [f"{NETWORK_NAMES.get(net, net)} (`{net}`)", REGIME_NAMES.get(regime, regime), key[2], key[3],
                     *([f"{p[0]:.1f} ± {p[1]:.1f}" for p in paper] if paper else ["", ""])]
            if row is None:
                cells += ["", "", "", "", ""] + ([""] if block else [])
            else:
                reached, planned = unfinished(groups[key], tag)
                end = _pm(row["end"]) or f"n/a: {row['note']}"
                peak_verdict = _inside(row["peak"], paper[0]) if paper else ""
                if planned:  # the end window of a run that has not ended is no end figure
                    end, row = f"n/a: at {reached:,} of {planned:,} games", {**row, "end": None, "block_rate": None}
                    peak_verdict += " so far" if paper else ""
                verdict = f"{peak_verdict} / {_inside(row['end'], paper[1])}" if paper else ""
                cells += [_pm(row["peak"]), end, str(row["points"]), str(row["trials"]), verdict]
                cells += [_pm(row["block_rate"]) or "n/a"] if block else []
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def score_at(curve, games: int) -> float | None:
    """The test point of ``curve`` at ``games`` training games: the first at or past it and before the
    next ``games``-spaced schedule point could fall (a batched run evaluates a few games late); None
    when the curve has none there."""
    steps = curve.steps.tolist()
    spacing = min((b - a for a, b in zip(steps, steps[1:], strict=False)), default=games) or games
    for step, value in zip(steps, curve.values.tolist(), strict=True):
        if games <= step < games + spacing:
            return float(value)
    return None


def welch(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """mean(a) - mean(b) and its 95% Welch interval (Welch-Satterthwaite degrees of freedom, rounded
    down: the interval is a little wide rather than narrow); needs 2 or more values in each."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(a) - statistics.fmean(b)
    if va + vb == 0:
        return diff, diff, diff
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t975(max(1, int(df + 1e-9))) * math.sqrt(va + vb)  # 3.9999... from rounding is 4
    return diff, diff - half, diff + half


def fidelity_table(runs: list[RunLog], at: list[int], tag: str = DEFAULT_TAG, tolerance: float = 0.05) -> str:
    """The batching-fidelity table (Markdown): per (network, regime, biases), one row per protocol with
    its score at each of ``at`` training games (mean +- sd over seeds, fractions), and for a batched
    protocol the difference from online with its 95% Welch interval; the verdict is "same" when at
    every point the difference is below ``tolerance`` and its interval holds 0, "differs" when at a
    point it is not, else "incomplete" (a point with fewer than 2 seeds on either side). A mean over
    fewer seeds than the setting has says ``(n=..)``."""
    groups = by_paper_key(runs, tag)
    lines = ["| network | regime | biases | protocol | n | " + " | ".join(f"{g:,} games" for g in at) + " | verdict |",
             "|---|---|---|---|---|" + "---|" * len(at) + "---|"]
    for net, regime, bias in sorted({k[:3] for k in groups}):
        protocols = sorted((k for k in groups if k[:3] == (net, regime, bias)), key=lambda k: (k[3] != "online", k[3]))
        online = groups.get((net, regime, bias, "online"))
        for key in protocols:
            cells, same, complete = [], True, online is not None
            for games in at:
                xs = [x for x in (score_at(r.curves[tag], games) for r in groups[key]) if x is not None]
                ref = [x for x in (score_at(r.curves[tag], games) for r in online or []) if x is not None]
                if len(xs) < 2 or len(ref) < 2:
                    complete = False
                if not xs:
                    cells.append("")
                    continue
                text = f"{statistics.fmean(xs):.3f} ± {_sd(xs):.3f}"
                if len(xs) < len(groups[key]):
                    text += f" (n={len(xs)})"
                if key[3] != "online" and len(xs) > 1 and len(ref) > 1:
                    diff, low, high = welch(xs, ref)
                    text += f" (Δ {diff:+.3f}, 95% [{low:+.3f}, {high:+.3f}])"
                    same = same and abs(diff) < tolerance and low <= 0 <= high
                cells.append(text)
            # a verdict needs 2 or more seeds of both at every point; a difference already seen stands
            verdict = ("reference" if key[3] == "online" else "differs" if not same
                       else "same" if complete else "incomplete")
            lines.append(f"| {net} | {REGIME_NAMES.get(regime, regime)} | {bias} | {key[3]} | {len(groups[key])} | "
                         + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines) + "\n"


def health_table(runs: list[RunLog], after: int = DEFAULT_AFTER) -> str:
    """format=health: a Markdown row per run that logs the health figures (``HEALTH``): its last point of
    each, and the largest ``saturated`` from ``after`` games on (empty when it has no point there)."""
    from ttt.agents.dqn.health import TAGS

    runs = [r for r in runs if len(r.curves.get(HEALTH + "saturated", ()))]
    _, labels = short_labels([",".join(r.setting) for r in runs])
    head = ["setting", "seed", "games", *TAGS, f"saturated_max (from {after:,})"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run, label in sorted(zip(runs, labels, strict=True), key=lambda x: (x[1], x[0].seed or 0)):
        sat = run.curves[HEALTH + "saturated"]
        later = sat.values[sat.steps >= after]
        cells = [label, "" if run.seed is None else str(run.seed), f"{int(sat.steps[-1]):,}"]
        for tag in TAGS:
            curve = run.curves.get(HEALTH + tag)
            cells.append(f"{curve.values[-1]:.3f}" if curve is not None and len(curve) else "")
        cells.append(f"{later.max():.3f}" if len(later) else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
    exit_on_help(argv, __doc__)
    run_cli(command, argv)


def command(argv: list[str]) -> None:
    """The tables the arguments ``argv`` ask for, printed; a one-line ValueError for a bad argument."""
    root, opts = Path(argv[0]), {"tag": DEFAULT_TAG, "last": str(DEFAULT_LAST), "format": "md", "at": DEFAULT_AT,
                        "where": "", "after": str(DEFAULT_AFTER)}
    for arg in argv[1:]:
        key, sep, value = arg.partition("=")
        if not sep or key not in opts:
            raise ValueError(f"unknown argument {arg!r}; use tag=... last=N format={'|'.join(FORMATS)} at=N,N,... "
                             "where=KEY:V|V,... after=N")
        opts[key] = value
    if opts["format"] not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {opts['format']!r}")
    if not (root.is_dir() or (root.is_file() and root.suffix == ".csv")):
        raise ValueError(f"{root}: no such folder (or CSV file of runs)")
    tag, last = opts["tag"], parse_last(opts["last"])
    runs = match_runs(find_runs(root), parse_where(opts["where"]))
    for note in drop_nonfinite(runs):
        print(f"summarize: {note}", file=sys.stderr)
    if opts["format"] == "health":
        if not opts["after"].isdigit():
            raise ValueError(f"after={opts['after']}: give a whole number of training games")
        if not any(len(r.curves.get(HEALTH + "saturated", ())) for r in runs):
            raise ValueError(f"no run under {root} logs the health figures ({HEALTH}...; dqn runs log them)")
        print(health_table(runs, int(opts["after"])), end="")
        return
    groups = group_runs(r for r in runs if len(r.curves.get(tag, ())))
    rows = summarize(root, tag, last, groups)
    if not rows:
        raise ValueError(f"no run under {root} has a {tag!r} curve")
    for warning in duplicate_seeds(rows):
        print(warning, file=sys.stderr)
    if opts["format"] == "runs":
        print(runs_csv(runs, tag, last, root if root.is_dir() else None), end="")
    elif opts["format"] == "fidelity":
        try:
            at = [int(x) for x in opts["at"].split(",")]
        except ValueError:
            raise ValueError(f"at={opts['at']}: give training-game counts separated by commas") from None
        print(fidelity_table(runs, at, tag), end="")
    elif opts["format"] == "paper":
        print(paper_table(runs, tag, last), end="")
    else:
        print((markdown_table if opts["format"] == "md" else csv_table)(rows, tag, last), end="")


if __name__ == "__main__":
    main(sys.argv[1:])
