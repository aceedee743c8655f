"""Training curves of finished runs, for tables and figures: find the runs under a folder, read their
TensorBoard scalars with TensorBoard's own reader, group the seeds of one setting, and average.

A run is a folder with a ``tb/`` TensorBoard log (what ``ttt.train`` writes). Its *setting* is what
tells it apart from runs of other settings:

* Hydra's record of the command line (``.hydra/overrides.yaml``: every ``python -m ttt.train`` run,
  single or multirun), without the keys that do not change what is learned (``seed``, ``progress``,
  ``threads``, ``resume``, ``run_dir``);
* else the resolved config the run logged as TensorBoard text under ``config`` (a run started by
  calling ``ttt.train.train(cfg)``), flattened to ``key=value`` items without those keys; items that
  every such run shares are left out of its label.

Runs with the same setting are the seeds of one group. Their curves are aligned point by point
(the k-th logged value of each run; the runs of one setting log on the same schedule, while the exact
step of a point can differ by a few games when games run side by side), and each point gets the mean
over the runs, their standard deviation and a 95% confidence interval of the mean (Student's t with
n - 1 degrees of freedom; none for a single run).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml


def eval_tag(opponent: str, key: str, seat: str = "both", group: str = "eval") -> str:
    """The TensorBoard tag of an evaluation figure (``ttt.harness.training.Run.evaluate``). The figures people
    look at first, the score and the win rate over both seats, are ``<group>/<opponent>/<key>``, so they
    open TensorBoard's ``eval`` section; draw and loss rates and the per-seat figures go to
    ``<group>_detail/<opponent>/[<seat>/]<key>``."""
    if seat == "both" and key in ("score", "win_rate"):
        return f"{group}/{opponent}/{key}"
    return f"{group}_detail/{opponent}/{key}" if seat == "both" else f"{group}_detail/{opponent}/{seat}/{key}"


#: override keys that do not change what a run learns; runs that differ only in these are seeds of one setting
NOT_SETTING = ("seed", "seeds", "progress", "threads", "resume", "run_dir")

# two-sided 95% quantiles of Student's t, t_{0.975}(df) for df = 1..30
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """Student's t quantile t_{0.975}(df): the 95% interval of a mean of df + 1 values is mean +- t * sd / sqrt(n).

    A table up to 30 degrees of freedom, then the Cornish-Fisher expansion around the normal quantile
    (error below 1e-4 from df = 31 on).
    """
    if df < 1:
        raise ValueError(f"t975: degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


@dataclass
class Curve:
    """One scalar tag of one run: steps (training games) and values, in step order."""

    steps: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.steps)


@dataclass
class RunLog:
    """One run folder: its setting (the label of its group), seed, board and scalar curves."""

    dir: Path
    setting: tuple[str, ...]
    from_overrides: bool  # setting read from Hydra's overrides.yaml (else from the logged config)
    seed: int | None = None
    game: str | None = None
    curves: dict[str, Curve] = field(default_factory=dict)
    facts: dict[str, str] = field(default_factory=dict)  # network, regime, bias, protocol (``run_facts``)

    def tags(self) -> list[str]:
        return sorted(self.curves)


#: the paper's results (van de Steeg, Drugan and Wiering 2015, Score Four; ``paper_end`` reads them): score
#: against the benchmark player in %, (peak, mean of the last 40 of 100 test points), each (mean, sd) over 10 trials
PAPER = {
    ("structured_small", "self_play"): ((50.6, 4.9), (29.4, 8.8)),
    ("structured_deep", "self_play"): ((65.9, 5.0), (52.7, 6.8)),
    ("mlp_small", "self_play"): ((31.2, 6.2), (20.2, 4.3)),
    ("mlp_deep", "self_play"): ((38.2, 5.4), (24.8, 4.9)),
    ("mlp_wide", "self_play"): ((54.1, 5.5), (36.1, 7.1)),
    ("structured_small", "benchmark"): ((94.3, 3.1), (90.7, 2.4)),
    ("structured_deep", "benchmark"): ((98.7, 0.3), (97.3, 0.8)),
    ("mlp_small", "benchmark"): ((93.3, 1.8), (90.4, 1.5)),
    ("mlp_deep", "benchmark"): ((98.1, 0.5), (96.2, 1.0)),
    ("mlp_wide", "benchmark"): ((96.8, 0.8), (94.4, 1.5)),
}
NETWORK_NAMES = {"structured_small": "small structured", "structured_deep": "deep structured",
                 "mlp_small": "small unstructured", "mlp_deep": "deep unstructured", "mlp_wide": "wide unstructured"}


def paper_end(run: RunLog, tag: str) -> float | None:
    """The paper's end figure (a score in [0, 1]) for a run's curve of ``tag``: its network and regime
    on Score Four, against the benchmark player; None where the paper has none."""
    if tag != "eval/benchmark/score" or run.game not in (None, "4x4x4_gravity"):
        return None
    row = PAPER.get((run.facts.get("network"), run.facts.get("regime")))
    return None if row is None else row[1][0] / 100


#: what a run is named by (``run_facts``), in the order the CSV of runs and the tables write them
FACTS = ("network", "regime", "bias", "protocol")


def run_facts(config: dict, choices: dict | None = None) -> dict[str, str]:
    """What a results table names a run by, from its resolved config and Hydra's config-group choices:
    the network (the ``network`` config's name, else its kind), the regime (the training opponent:
    ``self_play``, ``benchmark``, ...), the biases (``true``/``false``) and the protocol (``online``: one
    game at a time, an update after every ply; else ``batched B=<num_envs> lr=<lr>``). Keys a config
    lacks are left out."""
    facts: dict[str, str] = {}
    net, agent = config.get("network") or {}, config.get("agent") or {}
    name = (choices or {}).get("network") or (net.get("kind") if isinstance(net, dict) else None)
    if name:
        facts["network"] = str(name)
    if isinstance(net, dict) and "bias" in net:
        facts["bias"] = str(bool(net["bias"])).lower()
    if isinstance(agent, dict) and agent.get("opponent"):
        facts["regime"] = str(agent["opponent"])
    if "num_envs" in config:
        b = int(config["num_envs"])
        facts["protocol"] = "online" if b == 1 else f"batched B={b} lr={agent.get('lr')}"
    return facts


def parse_where(text: str) -> list[dict[str, set[str]]]:
    """``network:a|b,bias:true;protocol:online`` -> ``[{"network": {"a", "b"}, "bias": {"true"}},
    {"protocol": {"online"}}]``: the runs to keep, by their facts (``FACTS``). A run is kept when it
    matches one of the ``;``-separated alternatives: each of its ``KEY:V|V`` items, one of the values;
    ``ValueError`` names a bad item. An empty text keeps every run."""
    alternatives = []
    for part in text.split(";"):
        where: dict[str, set[str]] = {}
        for item in (x.strip() for x in part.split(",") if x.strip()):
            key, sep, values = item.partition(":")
            if not sep or key.strip() not in FACTS or not values.strip():
                raise ValueError(f"where= takes KEY:VALUE[|VALUE...] items, separated by ',' (and) and ';' (or), "
                                 f"with KEY one of {', '.join(FACTS)}, got {item!r}")
            where.setdefault(key.strip(), set()).update(v.strip() for v in values.split("|"))
        if where:
            alternatives.append(where)
    return alternatives


def match_runs(runs: Iterable[RunLog], where: list[dict[str, set[str]]]) -> list[RunLog]:
    """The runs whose facts match one of the alternatives of ``where`` (``parse_where``; all runs when
    it has none); ``ValueError`` if there are runs and none matches."""
    runs = list(runs)
    if not where:
        return runs
    kept = [r for r in runs if any(all(r.facts.get(k) in values for k, values in alt.items()) for alt in where)]
    if runs and not kept:
        shown = ";".join(",".join(f"{k}:{'|'.join(sorted(v))}" for k, v in alt.items()) for alt in where)
        raise ValueError(f"no runs match where={shown}")
    return kept


def _flatten(node, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        return [item for k, v in node.items() for item in _flatten(v, f"{prefix}{k}.")]
    return [f"{prefix[:-1]}={node}"]


def _key(item: str) -> str:
    return item.split("=", 1)[0].lstrip("+~")


def _logged_config(acc) -> dict:
    """The resolved config a run logged as TensorBoard text under ``config`` ({} if none)."""
    tag = next((t for t in acc.Tags().get("tensors", []) if t.startswith("config")), None)
    if tag is None:
        return {}
    events = acc.Tensors(tag)
    text = events[-1].tensor_proto.string_val[0].decode()
    try:
        config = yaml.safe_load(text.strip().strip("`"))
    except yaml.YAMLError:
        return {}
    return config if isinstance(config, dict) else {}


@contextlib.contextmanager
def _quiet_tensorboard() -> Iterator[None]:
    """TensorBoard's reader logs what it passes over: a resumed run's restart ("Detected out of order
    event.step ... Removing N scalars": the points after the resumed checkpoint that the run logs again,
    as ``EventFile``'s purge step asks), the next event file ("No path found after ..."). Under Hydra's
    logging these reached stderr as alarms; the curves read are whole. Its errors still show."""
    logger = logging.getLogger("tensorboard")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def read_run(tb_dir: Path) -> RunLog:
    """Read one run: every scalar curve of ``tb_dir`` and the run's setting, seed and board."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0, "tensors": 0})
    with _quiet_tensorboard():
        acc.Reload()
    curves = {}
    for tag in acc.Tags().get("scalars", []):
        by_step = {}
        for e in sorted(acc.Scalars(tag), key=lambda e: e.wall_time):
            by_step[e.step] = e.value  # a resumed run logs some steps twice: the later value counts
        steps = np.array(sorted(by_step), dtype=np.int64)
        curves[tag] = Curve(steps, np.array([by_step[s] for s in steps.tolist()], dtype=np.float64))
    config = _logged_config(acc)
    run_dir = tb_dir.parent
    overrides = run_dir / ".hydra" / "overrides.yaml"
    if not overrides.is_file() and run_dir.name.startswith("seed_"):  # one of runs side by side (seeds=K)
        overrides = run_dir.parent / ".hydra" / "overrides.yaml"
    if overrides.is_file():
        items = [str(x) for x in (yaml.safe_load(overrides.read_text()) or [])]
        from_overrides = True
    else:
        items, from_overrides = _flatten(config), False
    setting = tuple(x for x in items if _key(x) not in NOT_SETTING)
    seed = config.get("seed")
    game = (config.get("game") or {}).get("name") if isinstance(config.get("game"), dict) else None
    hydra = overrides.with_name("hydra.yaml")
    choices = (yaml.safe_load(hydra.read_text()) or {}).get("hydra", {}).get("runtime", {}).get("choices") \
        if hydra.is_file() else None
    return RunLog(run_dir, setting, from_overrides, None if seed is None else int(seed), game, curves,
                  run_facts(config, choices))


def find_runs(root: str | Path) -> list[RunLog]:
    """Every run under ``root`` (folders holding a ``tb/`` log, ``root`` itself included), by path; or
    the runs of a CSV file that ``runs_csv`` wrote."""
    root = Path(root)
    if root.is_file() and root.suffix == ".csv":
        return read_runs_csv(root)
    tbs = sorted({p for p in [root / "tb", *root.rglob("tb")] if p.is_dir()})
    return [read_run(tb) for tb in tbs]


# ------------------------------------------------------------------------------------ runs as CSV
#: the share of forced blocks a learner took in its evaluation games (``ttt.evaluation.defence``)
BLOCK_RATE = "eval/defence/block_rate"
#: the columns of ``runs_csv`` before the test points (one column per training-game count); a table
#: written before its last column, ``block_rate`` (docs/paper_grid.csv), is read all the same
RUN_COLUMNS = ("setting", *FACTS, "game", "seed", "tag", "points", "peak", "end_last", "end_mean", "dir",
               "block_rate")
#: the tags ``runs_csv`` writes beside the table's own, for the runs that log them: defence (``ttt.evaluation.defence``)
BESIDE = (BLOCK_RATE, "eval/defence/miss_value")


def runs_csv(runs: Sequence[RunLog], tag: str, last: int, root: str | Path | None = None,
             beside: Sequence[str] = BESIDE) -> str:
    """One CSV row per run that logs ``tag``, and one more per tag of ``beside`` it logs too (the
    ``tag`` column says which): its setting, ``run_facts``, seed, the number of test points, the peak,
    the mean of the last ``last`` points (empty when it has fewer), its folder, the run's block rate at
    its last evaluation (``BLOCK_RATE``; on every row of the run, empty when it does not log it), and
    every test point in a column named by its training games (empty where a run has no point there).
    Folders are written relative to ``root`` when they lie under it. Values are as logged (scores and
    rates are fractions). ``read_runs_csv`` reads it back, so tables and figures can be built from a
    committed file as from the run folders."""
    import csv
    import io

    runs = [r for r in runs if len(r.curves.get(tag, ()))]
    tags = [tag, *(t for t in beside if t != tag)]
    rows = [(r, t) for r in sorted(runs, key=lambda r: (",".join(r.setting), -1 if r.seed is None else r.seed))
            for t in tags if len(r.curves.get(t, ()))]
    steps = sorted({int(s) for r, t in rows for s in r.curves[t].steps.tolist()})
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([*RUN_COLUMNS, *map(str, steps)])
    for r, t in rows:
        c = r.curves[t]
        at = dict(zip(c.steps.tolist(), c.values.tolist(), strict=True))
        end = f"{float(np.mean(c.values[-last:])):.4f}" if len(c) >= last else ""
        block = r.curves.get(BLOCK_RATE)
        w.writerow([",".join(r.setting), *(r.facts.get(k, "") for k in FACTS),
                    r.game or "", "" if r.seed is None else r.seed, t, len(c), f"{float(c.values.max()):.4f}",
                    last, end, _relative(r.dir, root), f"{float(block.values[-1]):.4f}" if block else "",
                    *("" if s not in at else f"{at[s]:.4f}" for s in steps)])
    return out.getvalue()


def _relative(path: Path, root: str | Path | None) -> str:
    if root is not None:
        try:
            return str(Path(path).resolve().relative_to(Path(root).resolve()))
        except ValueError:
            pass
    return str(path)


def read_runs_csv(path: str | Path) -> list[RunLog]:
    """The runs of a CSV file ``runs_csv`` wrote, each with the curves its rows hold (the rows of one
    run: the same folder, seed and setting; the ``block_rate`` column repeats the last point of its
    ``BLOCK_RATE`` row); ``ValueError`` naming the file when it is not such a file."""
    import csv

    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (it holds the byte {e.object[e.start]:#04x}); a table of "
                         "runs is the CSV file summarize.py format=runs writes") from None
    head = rows[0] if rows else []
    fixed = next((len(c) for c in (RUN_COLUMNS, RUN_COLUMNS[:-1]) if tuple(head[: len(c)]) == c), None)
    if fixed is None:
        raise ValueError(f"{path}: not a table of runs (its header must start with {','.join(RUN_COLUMNS)})")
    try:
        steps = [int(s) for s in head[fixed:]]
        runs: dict[tuple[str, str, str], RunLog] = {}
        for row in rows[1:]:
            cell = dict(zip(head, row, strict=True))
            if cell.get("block_rate"):
                float(cell["block_rate"])  # a number, or the row is malformed
            points = [(s, float(v)) for s, v in zip(steps, row[fixed:], strict=True) if v != ""]
            curve = Curve(np.array([s for s, _ in points], dtype=np.int64), np.array([v for _, v in points]))
            key = (cell["dir"], cell["seed"], cell["setting"])
            if key not in runs:
                facts = {k: cell[k] for k in FACTS if cell[k]}
                runs[key] = RunLog(Path(cell["dir"]), tuple(x for x in cell["setting"].split(",") if x), True,
                                   int(cell["seed"]) if cell["seed"] else None, cell["game"] or None, {}, facts)
            runs[key].curves[cell["tag"]] = curve
    except ValueError as e:  # a short row, a step or a value that is no number
        raise ValueError(f"{path}: a malformed row of the table of runs ({e})") from None
    return list(runs.values())


def drop_nonfinite(runs: Iterable[RunLog]) -> list[str]:
    """Take the NaN and infinite points out of every curve of ``runs`` (in place: a mean or a standard
    deviation over them is no figure). Returns a note for each curve that had any, naming the run, the
    tag and the training games of the points left out."""
    notes = []
    for run in runs:
        for tag, curve in run.curves.items():
            bad = ~np.isfinite(curve.values)
            if bad.any():
                steps = curve.steps[bad].tolist()
                run.curves[tag] = Curve(curve.steps[~bad], curve.values[~bad])
                at = ", ".join(map(str, steps[:5])) + (", ..." if len(steps) > 5 else "")
                notes.append(f"{run.dir}: {tag}: left out {len(steps)} point(s) that are no finite number "
                             f"(at {at} games)")
    return notes


def group_runs(runs: Iterable[RunLog]) -> dict[str, list[RunLog]]:
    """The runs by setting: {label: runs}, labels sorted. A label is the setting's items joined by
    commas; for settings read from logged configs, the items all such runs share are left out."""
    runs = list(runs)
    logged = [r for r in runs if not r.from_overrides]
    shared = set.intersection(*(set(r.setting) for r in logged)) if logged else set()
    groups: dict[str, list[RunLog]] = {}
    for r in runs:
        items = r.setting if r.from_overrides else tuple(x for x in r.setting if x not in shared)
        groups.setdefault(",".join(items) or "(defaults)", []).append(r)
    return dict(sorted(groups.items()))


def short_labels(labels: Sequence[str]) -> tuple[str, list[str]]:
    """(what every label shares, each label without it): legends name only what differs
    (a single label is all shared: ``(label, ["all runs"])``; a label with nothing beside what all
    share is ``"the shared settings only"``)."""
    if len(labels) == 1:
        return labels[0], ["all runs"]
    items = [label.split(",") for label in labels]
    common = [x for x in items[0] if all(x in other for other in items[1:])] if len(items) > 1 else []
    return ",".join(common), [",".join(x for x in its if x not in common) or "the shared settings only"
                              for its in items]


@dataclass
class Band:
    """Mean over runs of a group at each point, with the 95% interval of the mean (nan where n < 2)."""

    steps: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: np.ndarray


def mean_band(curves: Sequence[Curve]) -> Band:
    """Align ``curves`` point by point (the k-th value of each; shorter runs drop out at their end) and
    return the mean, sd and 95% confidence interval of the mean at each point; the step of a point is
    the mean of the runs' steps there."""
    if not curves:
        raise ValueError("mean_band: no curves")
    length = max(len(c) for c in curves)
    values = np.full((len(curves), length), np.nan)
    steps = np.full((len(curves), length), np.nan)
    for i, c in enumerate(curves):
        values[i, : len(c)], steps[i, : len(c)] = c.values, c.steps
    n = (~np.isnan(values)).sum(axis=0)
    mean = np.nanmean(values, axis=0)
    sd = np.full(length, np.nan)
    half = np.full(length, np.nan)
    for k in np.flatnonzero(n >= 2):
        col = values[~np.isnan(values[:, k]), k]
        sd[k] = col.std(ddof=1)
        half[k] = t975(int(n[k]) - 1) * sd[k] / math.sqrt(n[k])
    return Band(np.nanmean(steps, axis=0), mean, sd, mean - half, mean + half, n)
