"""Figures of training runs: ``python -m ttt.plot DIR [DIR ...] [tags=[eval/benchmark/score]] [output=FIG.png]``.

Reads every run under each ``DIR`` (a folder with a ``tb/`` TensorBoard log: one run, or a multirun's
sweep folder; or a CSV file of runs that ``experiments/summarize.py format=runs`` wrote) with
TensorBoard's own reader, groups the runs by their settings (Hydra overrides
without ``seed``; ``ttt.harness.curves``) and draws, against training games, the mean over the seeds of each
setting with a shaded 95% confidence band of that mean (Student's t; no band for a single run;
bands of rates, scores and shares are clipped to the range they can take). Legends name what differs
between settings; the title holds what they share. A point that is no finite number (``nan``, ``inf``)
is left out, with a note on stderr.

Arguments (``key=value`` after ``DIR``):

``figure=curves``    (default) one panel per tag of ``tags``, one line per setting
``figure=openings``  the values of the opening moves, one panel per setting: tabular afterstate TD's
                     ``train/opening_value/cell_<c>`` (every log point), or a network's
                     ``eval/values/opening/cell_<c>`` (every evaluation; ``ttt.evaluation.value_quality``);
                     3x3: centre, corner, edge
``figure=outcomes``  win, draw and loss rates (``eval/<opponent>/{win,draw,loss}_rate``), one panel
                     per setting and opponent
``figure=defence``   three panels, one line per setting: the score against the benchmark player (the
                     first tag of ``tags`` that the setting logs: ``tags=[eval/benchmark/score,
                     eval/benchmark:safe=false/score]`` takes the second for runs tested against
                     that), ``eval/defence/block_rate`` (the share of forced blocks taken in the
                     evaluation games) and ``eval/defence/miss_value`` (the network's value of the
                     missed ones; exact -1), ``ttt.evaluation.defence``
``tags=[a,b]``       scalar tags of ``figure=curves`` (default ``[eval/benchmark/score]``)
``opponent=NAME``    the opponent of ``figure=outcomes`` (default: every opponent logged)
``output=FIG.png``   where to write the figure (default ``<the first DIR>/<figure>.png``)
``where=KEY:V|V,...`` only the runs whose facts match: ``network``, ``regime``, ``bias`` or ``protocol``
                     (what ``summarize.py format=runs`` names a run by), each with one or more values
                     separated by ``|``; e.g. ``where=network:structured_deep`` or
                     ``where=bias:true,protocol:online|batched B=64 lr=0.04``; alternatives separated
                     by ``;`` keep the runs that match one (``ttt.harness.curves.parse_where``)
``panels=KEY``       with ``figure=curves`` and one tag: one panel per value of that fact (e.g.
                     ``panels=regime``), each setting's line named by the facts that differ, in one
                     colour in every panel

A panel of ``eval/benchmark/score`` of Score Four runs draws the paper's end figure for each network
and regime drawn (its mean of the last 40 test points) as a dashed line in that setting's colour.

Needs matplotlib (``pip install -e '.[plot]'``); draws with the Agg backend, no display needed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

from ttt.cli import exit_on_help, run_cli, write_with_fallback
from ttt.harness.curves import (
    FACTS,
    Band,
    RunLog,
    drop_nonfinite,
    eval_tag,
    find_runs,
    group_runs,
    match_runs,
    mean_band,
    paper_end,
    parse_where,
    short_labels,
)

FIGURES = ("curves", "openings", "outcomes", "defence")
DEFENCE = ("eval/defence/block_rate", "eval/defence/miss_value")  # ttt.evaluation.defence
DEFAULTS = {"figure": "curves", "tags": "[eval/benchmark/score]", "opponent": "", "output": "", "where": "",
            "panels": ""}
# tabular afterstate TD's table, or a network's mean over the class (ttt.evaluation.value_quality.ValueTags)
OPENING_TAG = re.compile(r"^(?:train/opening_value|eval/values/opening)/cell_(\d+)$")
OUTCOMES = ("win_rate", "draw_rate", "loss_rate")


class PlotError(ValueError):
    """A one-line reason why no figure can be drawn (exit code 2)."""


def parse_list(value: str) -> list[str]:
    """``[a,b]``, ``a,b`` or ``a`` -> ``["a", "b"]`` (quotes and spaces stripped)."""
    return [x.strip().strip("'\"") for x in value.strip().strip("[]").split(",") if x.strip().strip("'\"")]


def parse_args(argv: list[str]) -> tuple[list[Path], dict[str, str]]:
    """``DIR [DIR ...] key=value ...`` -> (the DIRs, options); unknown keys and bad values raise ``PlotError``."""
    roots, opts = [Path(a) for a in argv if "=" not in a], dict(DEFAULTS)
    for arg in (a for a in argv if "=" in a):
        key, sep, value = arg.partition("=")
        if key not in opts:
            raise PlotError(f"unknown argument {arg!r}; use {' '.join(f'{k}=...' for k in DEFAULTS)}")
        opts[key] = value
    if opts["figure"] not in FIGURES:
        raise PlotError(f"figure must be one of {', '.join(FIGURES)}, got {opts['figure']!r}")
    try:
        parse_where(opts["where"])
    except ValueError as e:
        raise PlotError(str(e)) from None
    if opts["panels"]:
        if opts["panels"] not in FACTS:
            raise PlotError(f"panels must be one of {', '.join(FACTS)}, got {opts['panels']!r}")
        if opts["figure"] != "curves" or len(parse_list(opts["tags"])) != 1:
            raise PlotError("panels= draws figure=curves of one tag")
    if not roots:
        raise PlotError("name a folder of runs (or a CSV file of runs) first")
    return roots, opts


def load_groups(roots: Path | list[Path], where: str = "") -> dict[str, list[RunLog]]:
    """The runs under ``roots`` (folders, or CSV files of runs: ``ttt.harness.curves.runs_csv``; one or a list) by
    setting, those whose facts match ``where`` (``parse_where``); ``PlotError`` if there are none."""
    roots = [Path(roots)] if isinstance(roots, str | Path) else [Path(r) for r in roots]
    for root in roots:
        if not (root.is_dir() or (root.is_file() and root.suffix == ".csv")):
            raise PlotError(f"{root}: no such folder (or CSV file of runs)")
    try:
        runs = [run for r in roots for run in find_runs(r)]
        runs = match_runs(runs, parse_where(where))
    except ValueError as e:  # a CSV file that is not a table of runs, or no run matches where=
        raise PlotError(str(e)) from None
    if not runs:
        raise PlotError(f"no runs under {', '.join(map(str, roots))} (a run is a folder with a tb/ TensorBoard log)")
    for note in drop_nonfinite(runs):  # an infinite point would stretch the axis past every other
        print(f"ttt.plot: {note}", file=sys.stderr)
    return group_runs(runs)


def _all_tags(groups: dict[str, list[RunLog]]) -> set[str]:
    return {t for runs in groups.values() for r in runs for t in r.curves}


def _band(runs: list[RunLog], tag: str) -> Band | None:
    curves = [r.curves[tag] for r in runs if len(r.curves.get(tag, ()))]
    return mean_band(curves) if curves else None


def _draw_band(ax, band: Band, label: str, color=None, bounds: tuple[float, float] | None = None) -> str:
    """The mean as a line (with markers when there are few points), the 95% band shaded; ``bounds``
    clips the band to the range the quantity can take (rates and scores: [0, 1])."""
    n = int(band.n.max())
    marker = "o" if len(band.steps) <= 30 else None
    (line,) = ax.plot(band.steps, band.mean, label=f"{label} (n={n})", color=color, lw=1.5, marker=marker, ms=3)
    if n >= 2:
        low, high = band.low, band.high
        if bounds is not None:
            low, high = np.clip(low, *bounds), np.clip(high, *bounds)
        ax.fill_between(band.steps, low, high, color=line.get_color(), alpha=0.15, lw=0)
    return line.get_color()


def _draw_reference(ax, runs: list[RunLog], tag: str, color) -> None:
    """The paper's end figure for these runs' network and regime (``paper_end``), a dashed line in
    their colour, drawn once per panel and figure."""
    end = paper_end(runs[0], tag)
    drawn = {float(line.get_ydata()[0]) for line in ax.get_lines() if line.get_linestyle() == "--"}
    if end is None or end in drawn:
        return
    # one legend entry for all of them: a dashed line is the paper's figure for the line of its colour
    label = "dashed: the paper's end figure for the line of its colour" if not drawn else "_nolegend_"
    ax.axhline(end, ls="--", lw=1, color=color, label=label)


def bounds_of(tag: str) -> tuple[float, float] | None:
    """The range a tag's values can take: [0, 1] for ``eval/`` rates and scores and the share of saturated
    values (``train/health/saturated``); [-1, 1] for the health figures' mean values; else unbounded."""
    if tag == "train/health/saturated" or (tag.startswith("eval/") and tag.endswith(("score", "_rate"))):
        return (0.0, 1.0)
    if tag in ("train/health/win", "train/health/leaves_win"):
        return (-1.0, 1.0)
    return None


def _figure(panels: int, height: float = 3.6):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(panels, 3)
    rows = -(-panels // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, height * rows), squeeze=False)
    for ax in axes.ravel()[panels:]:
        ax.set_visible(False)
    return fig, axes.ravel()[:panels]


def wrap_items(text: str, width: int) -> str:
    """Break a comma-separated setting into lines of at most ``width`` characters, at the commas."""
    lines: list[str] = []
    for item in text.split(","):
        if lines and len(lines[-1]) + 1 + len(item) <= width:
            lines[-1] += "," + item
        else:
            lines.append(item)
    return "\n".join(lines)


def games_label(x: float, _pos=None) -> str:
    """A tick of training games: 25k, 1.5M."""
    return f"{x / 1e6:g}M" if abs(x) >= 1e6 else f"{x / 1e3:g}k" if abs(x) >= 1e3 else f"{x:g}"


def _finish(fig, axes, title: str, output: Path, one_legend: bool = False) -> Path:
    """Label the panels and write the figure; ``one_legend``: the lines keep their colours in every
    panel, so only the first panel carries the legend."""
    from matplotlib.transforms import ScaledTranslation

    for i, ax in enumerate(axes):
        ax.set_xlabel("training games")
        ax.xaxis.set_major_formatter(games_label)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0] and not (one_legend and i):  # below the panel: long settings
            # would cover the curves
            # half an inch below the axes, under the tick labels and the axis label, whatever the panel's height
            below = ax.transAxes + ScaledTranslation(0, -0.5, fig.dpi_scale_trans)
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=below, frameon=False)
    if title:
        cols = sum(ax.get_subplotspec().is_first_row() for ax in axes)
        fig.suptitle(wrap_items(title, 60 * cols), fontsize=9)
    fig.tight_layout()
    # written atomically; a folder that cannot take it: the figure goes to a fallback file, named
    fmt = output.suffix.lstrip(".") or "png"
    try:
        return write_with_fallback(output, lambda tmp: fig.savefig(tmp, dpi=90, format=fmt, bbox_inches="tight"),
                                   "figure")
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def plot_curves(groups: dict[str, list[RunLog]], tags: list, output: Path) -> Path:
    """One panel per tag, one line per setting: the mean over seeds and its 95% band. A panel's tag may
    be a tuple of alternatives: each setting draws the first of them that its runs log."""
    found = _all_tags(groups)
    missing = [t for t in tags if not ({t} if isinstance(t, str) else set(t)) & found]
    if missing:
        eval_tags = sorted(t for t in found if t.startswith("eval/") and t.count("/") == 2)
        raise PlotError(f"no run logs {', '.join(map(repr, missing))}; tags found include: {', '.join(eval_tags)}")
    import matplotlib

    common, labels = short_labels(list(groups))
    cmap = matplotlib.colormaps["tab10" if len(labels) <= 10 else "tab20"]
    fig, axes = _figure(len(tags), height=3.6 + (0.2 * len(labels) if len(tags) > 1 else 0))  # room for the legend
    for ax, tag in zip(axes, tags, strict=True):
        for i, (label, runs) in enumerate(zip(labels, groups.values(), strict=True)):
            mine = tag if isinstance(tag, str) else next((t for t in tag if any(t in r.curves for r in runs)), tag[0])
            band = _band(runs, mine)
            if band is not None:
                color = cmap(i % cmap.N)  # a setting keeps its colour in every panel
                _draw_reference(ax, runs, mine, _draw_band(ax, band, label, color, bounds_of(mine)))
        ax.set_ylabel(tag if isinstance(tag, str) else " or\n".join(tag))
    return _finish(fig, axes, common, output, one_legend=len(tags) > 1)


def plot_panels(groups: dict[str, list[RunLog]], tag: str, key: str, output: Path) -> Path:
    """One panel per value of the fact ``key``, one line per setting: the mean over seeds and its 95%
    band. Lines are named by the facts that differ between the settings (else by their settings), and
    a setting keeps its colour in every panel."""
    import matplotlib

    if tag not in _all_tags(groups):
        raise PlotError(f"no run logs {tag!r}")
    facts = [runs[0].facts for runs in groups.values()]
    shared, labels = fact_labels(facts, key)
    common, settings = short_labels(list(groups))
    title = ", ".join(shared) if labels else common
    labels = labels or settings
    values = sorted({f.get(key, "?") for f in facts})
    names = list(dict.fromkeys(labels))
    cmap = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    colors = {label: cmap(i % cmap.N) for i, label in enumerate(names)}
    fig, axes = _figure(len(values), height=4.4)
    for ax, value in zip(axes, values, strict=True):
        for label, runs, f in zip(labels, groups.values(), facts, strict=True):
            band = _band(runs, tag) if f.get(key, "?") == value else None
            if band is not None:
                _draw_reference(ax, runs, tag, _draw_band(ax, band, label, colors[label], bounds_of(tag)))
        ax.set_ylabel(tag)
        ax.set_title(f"{key}: {value}", fontsize=9)
        if bounds_of(tag):
            ax.set_ylim(-0.02, 1.02)
    return _finish(fig, axes, title, output)


def fact_labels(facts: list[dict[str, str]], skip: str = "") -> tuple[list[str], list[str]]:
    """(the facts all settings share, as ``key value``; each setting named by the facts that differ,
    joined by commas, or no names when none differ), leaving out the fact ``skip``."""
    differ = [k for k in FACTS if k != skip and len({f.get(k, "") for f in facts}) > 1]
    shared = [f"{k} {facts[0][k]}" for k in FACTS if k != skip and k not in differ and k in facts[0]]
    return shared, [", ".join(f.get(k, "?") for k in differ) for f in facts] if differ else []


def plot_openings(groups: dict[str, list[RunLog]], output: Path) -> Path:
    """One panel per setting: the first seat's value of each distinct opening move over training."""
    from ttt.games import make_game, opening_name

    groups = {k: v for k, v in groups.items() if any(OPENING_TAG.match(t) for r in v for t in r.curves)}
    if not groups:
        raise PlotError("no run logs train/opening_value/cell_<c> (logged by tabular afterstate TD, "
                        "e.g. +experiment=td_33_boltzmann) or eval/values/opening/cell_<c> (the dqn learner)")
    common, labels = short_labels(list(groups))
    fig, axes = _figure(len(groups))
    for ax, label, runs in zip(axes, labels, groups.values(), strict=True):
        game = make_game(runs[0].game) if runs[0].game else None
        tags = sorted({t for r in runs for t in r.curves if OPENING_TAG.match(t)},
                      key=lambda t: int(OPENING_TAG.match(t).group(1)))
        for tag in tags:
            cell = int(OPENING_TAG.match(tag).group(1))
            name = f"{opening_name(game, cell)} (cell {cell})" if game else f"cell {cell}"
            _draw_band(ax, _band(runs, tag), name)
        ax.set_ylabel("opening value (first seat)")
        ax.set_title(wrap_items(f"{label} [{runs[0].game or '?'}]", 60), fontsize=8)
    return _finish(fig, axes, common, output)


def plot_outcomes(groups: dict[str, list[RunLog]], opponent: str, output: Path) -> Path:
    """One panel per setting and opponent: win, draw and loss rates of the evaluations."""
    found = _all_tags(groups)
    opponents = sorted({t.split("/")[1] for t in found if t.startswith("eval/") and t.endswith("/win_rate")
                        and t.count("/") == 2})
    if opponent:
        if opponent not in opponents:
            raise PlotError(f"no run logs eval/{opponent}/win_rate; opponents logged: {', '.join(opponents) or 'none'}")
        opponents = [opponent]
    if not opponents:
        raise PlotError("no run logs eval/<opponent>/win_rate")
    common, labels = short_labels(list(groups))
    panels = [(label, runs, opp) for label, runs in zip(labels, groups.values(), strict=True) for opp in opponents]
    fig, axes = _figure(len(panels))
    colors = {"win_rate": "tab:green", "draw_rate": "tab:gray", "loss_rate": "tab:red"}
    for ax, (label, runs, opp) in zip(axes, panels, strict=True):
        for key in OUTCOMES:
            band = _band(runs, eval_tag(opp, key))
            if band is None:  # runs logged before the detail tags had their own section
                band = _band(runs, f"eval/{opp}/{key}")
            if band is not None:
                _draw_band(ax, band, key.removesuffix("_rate"), colors[key], (0.0, 1.0))
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(f"fraction of games vs {opp}")
        ax.set_title(wrap_items(label, 60), fontsize=8)
    return _finish(fig, axes, common, output)


def draw(groups: dict[str, list[RunLog]], figure: str, output: Path, tags: list[str] | None = None,
         opponent: str = "", panels: str = "") -> Path:
    """Draw ``figure`` for grouped runs into ``output``."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise PlotError("needs matplotlib: pip install -e '.[plot]'") from e
    if panels:
        return plot_panels(groups, (tags or ["eval/benchmark/score"])[0], panels, output)
    if figure == "curves":
        return plot_curves(groups, tags or ["eval/benchmark/score"], output)
    if figure == "openings":
        return plot_openings(groups, output)
    if figure == "outcomes":
        return plot_outcomes(groups, opponent, output)
    if figure == "defence":
        return plot_curves(groups, [tuple(tags or ["eval/benchmark/score"]), *DEFENCE], output)
    raise PlotError(f"figure must be one of {', '.join(FIGURES)}, got {figure!r}")


def plot(root: str | Path, figure: str = "curves", tags: list[str] | None = None, opponent: str = "",
         output: str | Path | None = None, where: str = "", panels: str = "") -> Path:
    """Draw ``figure`` for the runs under ``root`` into ``output`` (default ``root/<figure>.png``)."""
    root = Path(root)
    return draw(load_groups(root, where), figure, Path(output) if output else root / f"{figure}.png", tags,
                opponent, panels)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    exit_on_help(argv, __doc__)
    run_cli(_draw_command, argv)


def _draw_command(argv: list[str]) -> None:
    roots, opts = parse_args(argv)
    groups = load_groups(roots, opts["where"])
    out = draw(groups, opts["figure"], Path(opts["output"] or roots[0] / f"{opts['figure']}.png"),
               parse_list(opts["tags"]), opts["opponent"], panels=opts["panels"])
    print(f"ttt.plot: wrote {out} ({sum(len(v) for v in groups.values())} runs in {len(groups)} settings)")


if __name__ == "__main__":
    main()
