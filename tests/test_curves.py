"""ttt.harness.curves (runs, seeds, 95% bands) and the figures of ttt.plot."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from torch.utils.tensorboard import SummaryWriter

from ttt.games import make_game, opening_name
from ttt.harness.curves import Curve, find_runs, group_runs, mean_band, short_labels, t975

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def fake_run(root: Path, name: str, scalars: dict[str, list[tuple[int, float]]], overrides: list[str] | None = None,
             config: str | None = None) -> Path:
    """A run folder as ttt.train leaves it: tb/ scalars, optionally .hydra/overrides.yaml and a config text."""
    run = root / name
    if overrides is not None:
        (run / ".hydra").mkdir(parents=True)
        (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    with SummaryWriter(str(run / "tb")) as w:
        if config is not None:
            w.add_text("config", "```\n" + config + "\n```", 0)
        for tag, points in scalars.items():
            for step, value in points:
                w.add_scalar(tag, value, step)
    return run


def test_a_resumed_runs_log_reads_whole_and_without_tensorboards_own_log_lines(tmp_path, caplog):
    # TensorBoard's reader logged the restart ("Detected out of order event.step ... Removing 2 scalars")
    # and the next file ("No path found after ..."): under Hydra's logging, alarming lines on stderr at resume
    import logging

    from ttt.harness.curves import read_run
    from ttt.harness.event_file import EventFile

    first = EventFile(tmp_path / "tb")
    for step in (10, 20, 30, 40):
        first.add_scalar("eval/random/score", step / 100, step)
    first.close()
    resumed = EventFile(tmp_path / "tb", purge_step=30)  # resumed from the checkpoint at step 20
    for step in (30, 40, 50):
        resumed.add_scalar("eval/random/score", step / 100 + 0.001, step)
    resumed.close()
    with caplog.at_level(logging.INFO):
        curve = read_run(tmp_path / "tb").curves["eval/random/score"]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("tensorboard")] == []
    assert curve.steps.tolist() == [10, 20, 30, 40, 50]
    assert curve.values == pytest.approx([0.1, 0.2, 0.301, 0.401, 0.501])  # the resumed run's points count
    assert logging.getLogger("tensorboard").level == logging.NOTSET  # left as it was


def test_t975_matches_students_t():
    assert t975(1) == pytest.approx(12.706, abs=1e-3)
    assert t975(2) == pytest.approx(4.303, abs=1e-3)
    assert t975(30) == pytest.approx(2.042, abs=1e-3)
    # beyond the table: the expansion, against published quantiles
    assert t975(40) == pytest.approx(2.021, abs=1e-3)
    assert t975(120) == pytest.approx(1.980, abs=1e-3)
    assert t975(10**6) == pytest.approx(1.960, abs=1e-3)
    with pytest.raises(ValueError):
        t975(0)


def test_mean_band_aligns_points_and_gives_the_t_interval():
    a = Curve(np.array([10, 20, 30]), np.array([1.0, 2.0, 3.0]))
    b = Curve(np.array([12, 22]), np.array([3.0, 4.0]))  # a shorter run: drops out at its end
    band = mean_band([a, b])
    assert band.steps.tolist() == [11, 21, 30]
    assert band.mean.tolist() == [2.0, 3.0, 3.0]
    assert band.n.tolist() == [2, 2, 1]
    # two values 1 and 3: sd sqrt(2), half-width t(1) * sqrt(2) / sqrt(2) = 12.706
    assert band.sd[0] == pytest.approx(math.sqrt(2))
    assert band.high[0] - band.mean[0] == pytest.approx(12.706, abs=1e-3)
    assert band.low[1] == pytest.approx(3.0 - 12.706, abs=1e-3)
    assert math.isnan(band.low[2]) and math.isnan(band.sd[2])  # one run: no interval


def test_groups_by_overrides_without_seed(tmp_path):
    score = "eval/benchmark/score"
    fake_run(tmp_path, "0", {score: [(1, 0.1)]}, ["+experiment=x", "network=a", "seed=0", "progress=false"])
    fake_run(tmp_path, "1", {score: [(1, 0.2)]}, ["+experiment=x", "network=a", "seed=1"])
    fake_run(tmp_path, "2", {score: [(1, 0.3)]}, ["+experiment=x", "network=b", "seed=0", "threads=2"])
    groups = group_runs(find_runs(tmp_path))
    assert {k: len(v) for k, v in groups.items()} == {"+experiment=x,network=a": 2, "+experiment=x,network=b": 1}
    assert short_labels(list(groups)) == ("+experiment=x", ["network=a", "network=b"])
    assert short_labels(["network=a"]) == ("network=a", ["all runs"])


def test_groups_by_the_logged_config_without_hydra_record(tmp_path):
    # runs started by train(cfg): no .hydra/, the resolved config is in the tb text
    for i, (hidden, seed) in enumerate([(32, 0), (32, 1), (64, 0)]):
        fake_run(tmp_path, str(i), {"eval/random/score": [(5, 0.5)]},
                 config=f"game:\n  name: 3x3\nnetwork:\n  hidden: {hidden}\nseed: {seed}\nrun_dir: /x/{i}\n")
    runs = find_runs(tmp_path)
    assert sorted(r.seed for r in runs) == [0, 0, 1] and {r.game for r in runs} == {"3x3"}
    groups = group_runs(runs)
    # game.name is shared and left out; seed and run_dir do not split the seeds of a setting
    assert {k: len(v) for k, v in groups.items()} == {"network.hidden=32": 2, "network.hidden=64": 1}


def test_a_resumed_run_keeps_the_later_value_of_a_repeated_step(tmp_path):
    run = fake_run(tmp_path, "r", {"eval/benchmark/score": [(100, 0.1), (200, 0.2)]}, ["seed=0"])
    with SummaryWriter(str(run / "tb")) as w:  # the continuation after a resume, in a second event file
        w.add_scalar("eval/benchmark/score", 0.25, 200)
        w.add_scalar("eval/benchmark/score", 0.3, 300)
    (curve,) = [r.curves["eval/benchmark/score"] for r in find_runs(tmp_path)]
    assert curve.steps.tolist() == [100, 200, 300]
    assert curve.values.tolist() == pytest.approx([0.1, 0.25, 0.3])


def test_opening_names_by_position():
    g3, g333 = make_game("3x3"), make_game("3x3x3")
    assert [opening_name(g3, c) for c in (0, 1, 4)] == ["corner", "edge", "centre"]
    assert [opening_name(g333, c) for c in (0, 1, 4, 13)] == ["corner", "edge", "face centre", "centre"]


# ------------------------------------------------------------------------------------------ ttt.plot
def test_plot_cli_help_and_one_line_errors(tmp_path, capsys):
    from ttt.plot import main

    for argv in (["--help"], [str(tmp_path), "--help"]):  # after a folder too (it was a folder named --help)
        with pytest.raises(SystemExit) as e:
            main(argv)
        text = capsys.readouterr().out
        assert e.value.code == 0 and "figure=openings" in text and "``" not in text  # plain text, no RST quotes

    def error_line(argv: list[str]) -> str:
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2  # a user's mistake
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ")
        return err.strip()

    assert error_line([str(tmp_path)]) == (f"error: no runs under {tmp_path} "
                                           f"(a run is a folder with a tb/ TensorBoard log)")
    assert error_line([str(tmp_path / "nowhere")]) == (f"error: {tmp_path / 'nowhere'}: no such folder "
                                                       f"(or CSV file of runs)")
    fake_run(tmp_path, "0", {"eval/random/score": [(1, 0.5)]}, ["seed=0"])
    line = error_line([str(tmp_path), "tags=[eval/benchmark/score]"])
    assert "no run logs 'eval/benchmark/score'" in line and "eval/random/score" in line
    assert "figure must be one of" in error_line([str(tmp_path), "figure=pie"])


def test_plot_leaves_out_infinite_and_nan_points_with_a_note(tmp_path, capsys):
    # an inf point stretched the axis past every other point; now it is left out, and stderr says so
    from ttt.plot import load_groups

    fake_run(tmp_path, "0", {"eval/random/score": [(1, 0.5), (2, math.inf), (3, math.nan), (4, 0.75)]}, ["seed=0"])
    ((_, (run,)),) = load_groups(tmp_path).items()
    curve = run.curves["eval/random/score"]
    assert curve.steps.tolist() == [1, 4] and curve.values.tolist() == [0.5, 0.75]
    assert capsys.readouterr().err == (f"ttt.plot: {tmp_path / '0'}: eval/random/score: left out 2 point(s) that "
                                       "are no finite number (at 2, 3 games)\n")


def test_plot_draws_curves_and_outcomes(tmp_path):
    pytest.importorskip("matplotlib")
    from ttt.plot import main, parse_list

    assert parse_list("[eval/a/score, 'eval/b/score']") == ["eval/a/score", "eval/b/score"]
    assert parse_list("eval/a/score") == ["eval/a/score"]
    for seed in (0, 1):
        for net in ("a", "b"):
            fake_run(tmp_path, f"{net}{seed}", {
                f"eval/benchmark/{k}": [(s, v + 0.01 * seed) for s, v in ((500, 0.2), (1000, 0.4))]
                for k in ("score", "win_rate", "draw_rate", "loss_rate")}, [f"network={net}", f"seed={seed}"])
    main([str(tmp_path), "tags=[eval/benchmark/score,eval/benchmark/win_rate]", f"output={tmp_path / 'c.png'}"])
    main([str(tmp_path), "figure=outcomes", "opponent=benchmark"])
    for png in (tmp_path / "c.png", tmp_path / "outcomes.png"):
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000


def test_td_afterstate_logs_the_opening_values_ttt_plot_draws(compose_train, tmp_path):
    from ttt.train import train

    cfg = compose_train(["+experiment=td_33_boltzmann", "episodes=200", "eval_every=0", "eval_games=2",
                         "log_every=50"])
    train(cfg)
    (run,) = find_runs(tmp_path)
    assert run.game == "3x3"
    for cell in (0, 1, 4):
        assert run.curves[f"train/opening_value/cell_{cell}"].steps.tolist() == [50, 100, 150, 200]
    assert run.curves["eval/random/win_rate"].steps.tolist() == [200]
    pytest.importorskip("matplotlib")
    from ttt.plot import plot

    out = plot(tmp_path, figure="openings")
    assert out == tmp_path / "openings.png" and out.read_bytes()[:8] == PNG_MAGIC


def test_long_settings_wrap_at_commas():
    from ttt.plot import wrap_items

    assert wrap_items("a=1,bb=2,c=3", 8) == "a=1,bb=2\nc=3"
    assert wrap_items("a_very_long_item=1", 5) == "a_very_long_item=1"  # an item is never cut


def test_plot_where_picks_runs_by_their_facts_and_panels_split_them(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from ttt.harness.curves import RunLog, match_runs, parse_where, runs_csv
    from ttt.plot import PlotError, fact_labels, games_label, load_groups, main, parse_args

    assert [games_label(x) for x in (0, 500, 25_000, 1_000_000, 1_500_000)] == ["0", "500", "25k", "1M", "1.5M"]

    settings = [("a", "self_play", "online"), ("b", "self_play", "online"), ("a", "benchmark", "batched B=64 lr=0.04")]
    curve = {"eval/benchmark/score": Curve(np.array([10, 20]), np.array([0.1, 0.2]))}
    runs = [RunLog(tmp_path / f"{net}{regime}{seed}", (f"network={net}", f"regime={regime}", f"p={protocol}"), True,
                   seed, "4x4x4_gravity", curve,
                   {"network": net, "regime": regime, "bias": "true", "protocol": protocol})
            for net, regime, protocol in settings for seed in (0, 1)]
    table = tmp_path / "runs.csv"
    table.write_text(runs_csv(runs, "eval/benchmark/score", 1))
    groups = group_runs(find_runs(table))
    assert parse_where("network:a|c, protocol:online") == [{"network": {"a", "c"}, "protocol": {"online"}}]
    assert parse_where("network:a;protocol:online,bias:true") == [{"network": {"a"}},
                                                                   {"protocol": {"online"}, "bias": {"true"}}]
    assert parse_where("") == [] and len(match_runs(find_runs(table), [])) == 6
    kept = match_runs(find_runs(table), parse_where("network:a"))
    assert sorted(r.facts["regime"] for r in kept) == ["benchmark"] * 2 + ["self_play"] * 2
    kept = load_groups(table, "regime:self_play,protocol:online|batched B=64 lr=0.04")
    assert sorted({r.facts["network"] for runs in kept.values() for r in runs}) == ["a", "b"]
    assert len(kept) == 2 and all(len(runs) == 2 for runs in kept.values())
    kept = match_runs(find_runs(table), parse_where("network:b;regime:benchmark,protocol:batched B=64 lr=0.04"))
    assert sorted((r.facts["network"], r.facts["regime"]) for r in kept) == [("a", "benchmark")] * 2 + [
        ("b", "self_play")] * 2
    with pytest.raises(ValueError, match="no runs match where=network:z"):
        match_runs(find_runs(table), parse_where("network:z"))
    with pytest.raises(PlotError, match="no runs match where=network:z"):
        load_groups(table, "network:z")
    for bad in ("where=seed:1", "where=network", "panels=seed", "panels=regime figure=outcomes",
                "panels=regime tags=[x,y]"):
        with pytest.raises(PlotError):
            parse_args([str(table), *bad.split(" ")])
    facts = [runs[0].facts for runs in groups.values()]
    shared, labels = fact_labels(facts, "regime")
    assert shared == ["bias true"]
    assert sorted(labels) == ["a, batched B=64 lr=0.04", "a, online", "b, online"]
    assert fact_labels([facts[0], facts[0]]) == (
        ["network a", "regime benchmark", "bias true", "protocol batched B=64 lr=0.04"], [])
    out = tmp_path / "panels.png"
    main([str(table), "panels=regime", "where=bias:true", f"output={out}"])
    assert "6 runs in 3 settings" in capsys.readouterr().out
    # several sources: their runs together, where= over all of them
    other = tmp_path / "other.csv"
    other.write_text(runs_csv([replace(r, setting=("network=c", *r.setting[1:]), facts={**r.facts, "network": "c"})
                               for r in runs[:2]], "eval/benchmark/score", 1))
    both = load_groups([table, other], "regime:self_play")
    assert sorted({r.facts["network"] for runs in both.values() for r in runs}) == ["a", "b", "c"]
    main([str(table), str(other), "where=network:a|c", f"output={out}"])
    assert "6 runs in 3 settings" in capsys.readouterr().out
    with pytest.raises(PlotError, match="no such folder"):
        load_groups([table, tmp_path / "missing.csv"])
    with pytest.raises(PlotError, match="name a folder"):
        parse_args(["figure=defence"])
    assert out.read_bytes()[:8] == PNG_MAGIC and out.stat().st_size > 10_000


def test_score_panels_of_score_four_runs_draw_the_papers_end_figures_as_dashed_lines(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from ttt import plot as plot_module
    from ttt.harness.curves import PAPER, RunLog, paper_end

    curve = {"eval/benchmark/score": Curve(np.array([10, 20]), np.array([0.1, 0.2]))}
    unsafe = {"eval/benchmark:safe=false/score": Curve(np.array([10, 20]), np.array([0.3, 0.4]))}

    def run(net, regime, seed, game="4x4x4_gravity", curves=curve, extra=()):
        return RunLog(tmp_path / f"{net}{regime}{seed}{extra}", (f"network={net}", f"regime={regime}", *extra), True,
                      seed, game, curves, {"network": net, "regime": regime, "bias": "true", "protocol": "online"})

    deep, small = run("structured_deep", "benchmark", 0), run("structured_small", "self_play", 0)
    assert paper_end(deep, "eval/benchmark/score") == pytest.approx(0.973) == PAPER[("structured_deep",
                                                                                       "benchmark")][1][0] / 100
    assert paper_end(small, "eval/benchmark/score") == pytest.approx(0.294)
    assert paper_end(deep, "eval/random/score") is None
    assert paper_end(run("structured_deep", "benchmark", 0, game="4x4x4"), "eval/benchmark/score") is None
    assert paper_end(run("mine", "benchmark", 0), "eval/benchmark/score") is None
    drawn = []
    real = plot_module._draw_reference

    def spy(ax, runs, tag, color):
        real(ax, runs, tag, color)
        drawn.append(sorted(round(line.get_ydata()[0], 3) for line in ax.get_lines() if line.get_linestyle() == "--"))

    monkeypatch.setattr(plot_module, "_draw_reference", spy)
    groups = {"a": [deep], "b": [small], "c": [run("structured_deep", "benchmark", 0, curves=unsafe, extra=("u",))]}
    plot_module.plot_curves(groups, [("eval/benchmark/score", "eval/benchmark:safe=false/score")],
                            tmp_path / "f.png")
    # one dashed line per network and regime in the panel: the third setting shares the first's
    assert drawn[-1] == [0.294, 0.973] and len(drawn) == 3
    with pytest.raises(plot_module.PlotError, match="no run logs"):
        plot_module.plot_curves(groups, [("eval/x/score",)], tmp_path / "g.png")


def test_bands_are_clipped_to_the_range_each_quantity_can_take():
    from ttt.plot import bounds_of

    assert bounds_of("eval/benchmark/score") == bounds_of("eval/random/win_rate") == (0.0, 1.0)
    assert bounds_of("train/health/saturated") == (0.0, 1.0)  # a share of afterstates
    assert bounds_of("train/health/leaves_win") == bounds_of("train/health/win") == (-1.0, 1.0)  # mean values
    assert bounds_of("train/health/logit") is None and bounds_of("train/td_loss") is None
