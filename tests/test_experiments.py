"""experiments/summarize.py: the paper-style table from a folder of runs; and the experiment files
(configs/experiment/): dqn_444 in one file, variants one level deep, none turning off what it varies."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch.utils.tensorboard import SummaryWriter

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "summarize.py"


@pytest.fixture(scope="module")
def summarize(experiment_script):
    return experiment_script("summarize")


def fake_run(root: Path, name: str, overrides: list[str], scores: list[float]) -> None:
    run = root / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    with SummaryWriter(str(run / "tb")) as w:
        for step, s in enumerate(scores):
            w.add_scalar("eval/benchmark/score", s, step * 100)


def refused(main, argv: list[str], capsys) -> str:
    """The one line on stderr with which ``main(argv)`` (an experiment's command) refuses its arguments
    with exit code 2."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as err:
        main(argv)
    out, text = capsys.readouterr()
    assert err.value.code == 2 and out == "" and len(text.splitlines()) == 1, (err.value.code, text)
    return text.strip()


def test_groups_seeds_and_computes_peak_and_end(tmp_path, summarize):
    fake_run(tmp_path, "0", ["network=a", "seed=0"], [0.1, 0.5, 0.3, 0.2])
    fake_run(tmp_path, "1", ["network=a", "seed=1"], [0.2, 0.3, 0.4, 0.4])
    fake_run(tmp_path, "2", ["network=b", "seed=0"], [0.6, 0.7])
    rows = {r["group"]: r for r in summarize.summarize(tmp_path, last=2)}
    assert set(rows) == {"network=a", "network=b"}
    a = rows["network=a"]
    assert a["trials"] == 2
    # peaks 50 and 40 -> mean 45, sd 7.07; ends (0.3+0.2)/2=25 and 40 -> mean 32.5
    assert a["peak"][0] == pytest.approx(45.0)
    assert a["peak"][1] == pytest.approx(7.0710678, rel=1e-5)
    assert a["end"] == pytest.approx((32.5, 10.6066017))  # sd of 25 and 40
    assert rows["network=b"]["trials"] == 1 and rows["network=b"]["peak"] == pytest.approx((70.0, 0.0))


def test_missing_tag_gives_no_rows(tmp_path, summarize):
    fake_run(tmp_path, "0", ["seed=0"], [0.1])
    assert summarize.summarize(tmp_path, tag="eval/random/score") == []


@pytest.mark.parametrize("value", ["0", "-1", "abc", "2.5"])
def test_last_must_be_a_whole_number_of_points(tmp_path, summarize, value, capsys):
    # last=0 averaged the whole curve, last=-1 all but the first point, last=abc was a traceback
    fake_run(tmp_path, "0", ["seed=0"], [0.1, 0.5])
    assert refused(summarize.main, [str(tmp_path), f"last={value}"], capsys) == \
        f"error: last={value}: give a whole number of points >= 1"
    with pytest.raises(ValueError, match="last=0"):
        summarize.summarize(tmp_path, last=0)


def test_fewer_points_than_the_window_say_so_instead_of_averaging_fewer(tmp_path, summarize):
    fake_run(tmp_path, "0", ["network=a", "seed=0"], [0.1, 0.5, 0.3])
    fake_run(tmp_path, "1", ["network=a", "seed=1"], [0.2, 0.3, 0.4, 0.4, 0.4])
    (row,) = summarize.summarize(tmp_path, last=4)
    assert row["points"] == 3 and row["end"] is None and row["note"] == "fewer than 4 points (3)"
    assert row["peak"][0] == pytest.approx(45.0)  # the peak needs no window
    assert "n/a: fewer than 4 points (3)" in summarize.markdown_table([row], last=4)
    (full,) = summarize.summarize(tmp_path, last=3)
    assert full["end"][0] == pytest.approx((30.0 + 40.0) / 2) and full["note"] == ""


def test_markdown_and_csv_tables(tmp_path, summarize):
    import csv

    fake_run(tmp_path, "0", ["+experiment=e", "network=a", "seed=0"], [0.5, 0.9])
    fake_run(tmp_path, "1", ["+experiment=e", "network=a", "seed=1"], [0.7, 0.8])
    rows = summarize.summarize(tmp_path, last=2)
    md = summarize.markdown_table(rows, last=2).splitlines()
    assert md[0] == "| setting | n | points | peak eval/benchmark/score % | mean of last 2 % |"
    # peaks 90, 80 -> 85.0 +- 7.1; ends 70, 75 -> 72.5 +- 3.5
    assert md[2] == "| `+experiment=e,network=a` | 2 | 2 | 85.0 ± 7.1 | 72.5 ± 3.5 |"
    (line,) = list(csv.DictReader(summarize.csv_table(rows, last=2).splitlines()))
    assert line["setting"] == "+experiment=e,network=a" and line["n"] == "2" and line["last"] == "2"
    assert (line["peak_mean"], line["end_mean"], line["end_sd"], line["note"]) == ("85.00", "72.50", "3.54", "")


def test_the_block_rate_goes_into_the_tables_the_csv_of_runs_and_the_defence_figure(tmp_path, summarize, capsys):
    import csv

    for seed, scores, rates in ((0, [0.5, 0.9, 0.8], [0.2, 0.4, 0.6]), (1, [0.7, 0.8, 0.8], [0.1, 0.3, 0.3])):
        fake_run(tmp_path, str(seed), ["network=a", f"seed={seed}"], scores)
        with SummaryWriter(str(tmp_path / str(seed) / "tb")) as w:
            for step, (rate, value) in enumerate(zip(rates, [-0.1, -0.2, -0.3], strict=True)):
                w.add_scalar("eval/defence/block_rate", rate, step * 100)
                w.add_scalar("eval/defence/miss_value", value, step * 100)
    fake_run(tmp_path, "b", ["network=b", "seed=0"], [0.4, 0.5])  # logs no defence: an empty cell
    rows = summarize.summarize(tmp_path, last=2)
    md = summarize.markdown_table(rows, last=2).splitlines()
    assert md[0].endswith("| mean of last 2 % | block rate, last 2 % |")
    # block rates over the last 2 points: 50 and 30 -> 40.0 +- 14.1
    assert md[2] == "| `network=a` | 2 | 3 | 85.0 ± 7.1 | 82.5 ± 3.5 | 40.0 ± 14.1 |" and md[3].endswith("| n/a |")
    lines = list(csv.DictReader(summarize.csv_table(rows, last=2).splitlines()))
    block = (lines[0]["block_rate_mean"], lines[0]["block_rate_sd"], lines[1]["block_rate_mean"])
    assert block == ("40.00", "14.14", "")
    summarize.main([str(tmp_path), "last=2", "format=runs"])
    text = capsys.readouterr().out
    table = [(r["dir"], r["tag"], r["end_mean"]) for r in csv.DictReader(text.splitlines())]
    assert table[:3] == [("0", "eval/benchmark/score", "0.8500"), ("0", "eval/defence/block_rate", "0.5000"),
                         ("0", "eval/defence/miss_value", "-0.2500")] and len(table) == 7
    (tmp_path / "runs.csv").write_text(text)
    summarize.main([str(tmp_path), "last=2"])
    from_folder = capsys.readouterr().out
    summarize.main([str(tmp_path / "runs.csv"), "last=2"])
    assert capsys.readouterr().out == from_folder  # the block rates read back from the rows of their runs
    pytest.importorskip("matplotlib")
    from ttt.plot import plot

    out = plot(tmp_path / "runs.csv", figure="defence", output=tmp_path / "defence.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def log_block_rates(run: Path, rates: list[float], every: int) -> None:
    """``eval/defence/block_rate`` at the run's test points (``every`` games apart, from 0 or ``every``)."""
    first = every if (run / ".hydra" / "hydra.yaml").is_file() else 0  # grid_run's points start at ``every``
    with SummaryWriter(str(run / "tb")) as w:
        for k, rate in enumerate(rates):
            w.add_scalar("eval/defence/block_rate", rate, first + k * every)


def test_the_csv_of_runs_gives_each_run_its_last_block_rate_and_reads_back_with_or_without_it(tmp_path, summarize,
                                                                                              capsys):
    import csv

    fake_run(tmp_path, "0", ["network=a", "seed=0"], [0.5, 0.9, 0.8])
    log_block_rates(tmp_path / "0", [0.2, 0.6, 0.4], 100)
    fake_run(tmp_path, "1", ["network=a", "seed=1"], [0.7, 0.8, 0.8])
    log_block_rates(tmp_path / "1", [0.1, 0.3, 0.25], 100)
    fake_run(tmp_path, "b", ["network=b", "seed=0"], [0.4, 0.5])  # logs no defence
    summarize.main([str(tmp_path), "last=2", "format=runs"])
    text = capsys.readouterr().out
    rows = list(csv.DictReader(text.splitlines()))
    # the last point (0.4, not the peak 0.6 or the mean of the last 2), on every row of its run; empty for b
    assert [(r["dir"], r["tag"], r["block_rate"]) for r in rows] == [
        ("0", "eval/benchmark/score", "0.4000"), ("0", "eval/defence/block_rate", "0.4000"),
        ("1", "eval/benchmark/score", "0.2500"), ("1", "eval/defence/block_rate", "0.2500"),
        ("b", "eval/benchmark/score", "")]
    summarize.main([str(tmp_path), "last=2"])
    from_folder = capsys.readouterr().out
    # the summary still means the last 2 points: (60 + 40) / 2 = 50 and (30 + 25) / 2 = 27.5 -> 38.8 +- 15.9
    assert from_folder.splitlines()[2].endswith("| 38.8 ± 15.9 |")
    table = list(csv.reader(text.splitlines()))
    col = table[0].index("block_rate")
    assert table[0][col - 1] == "dir" and table[0][col + 1] == "0"  # between the folder and the test points
    for name, drop in (("runs.csv", None), ("before.csv", col)):  # a table written before the column reads the same
        lines = [",".join(x for i, x in enumerate(row) if i != drop) for row in table]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        summarize.main([str(tmp_path / name), "last=2"])
        assert capsys.readouterr().out == from_folder
    table[1][col] = "high"
    (tmp_path / "bad.csv").write_text("\n".join(",".join(row) for row in table) + "\n")
    assert refused(summarize.main, [str(tmp_path / "bad.csv")], capsys).startswith(
        f"error: {tmp_path / 'bad.csv'}: a malformed row of the table of runs")


def test_a_seed_counted_twice_is_reported(tmp_path, summarize):
    rows = [dict(group="network=a", seeds=[0, 1, 1]), dict(group="network=b", seeds=[0, None])]
    assert summarize.duplicate_seeds(rows) == ["summarize: warning: network=a: seed 1 appears more than once"]


def test_markdown_names_what_settings_share_once(tmp_path, summarize):
    fake_run(tmp_path, "0", ["+experiment=e", "network=a", "seed=0"], [0.5])
    fake_run(tmp_path, "1", ["+experiment=e", "network=b", "seed=0"], [0.7])
    md = summarize.markdown_table(summarize.summarize(tmp_path, last=1), last=1).splitlines()
    assert md[0] == "Every setting also has `+experiment=e`."
    assert [line.split(" | ")[0] for line in md[4:]] == ["| `network=a`", "| `network=b`"]


def _grid_commands(*args: str, **env: str) -> list[list[str]]:
    """The ttt.train commands experiments/paper_grid.sh would run (PYTHON=echo prints them)."""
    import os
    import subprocess

    script = SCRIPT.parent / "paper_grid.sh"
    done = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHON": "echo", **env})
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()]


def test_paper_grid_is_5_networks_by_2_regimes_with_3_seeds_side_by_side_through_joblib():
    (cmd,) = _grid_commands("grid")
    assert cmd[:3] == ["-m", "ttt.train", "-m"]
    assert "hydra/launcher=joblib" in cmd and "hydra.launcher.n_jobs=-1" in cmd
    assert "+experiment=dqn_444_gravity,dqn_444_gravity_vs_benchmark" in cmd
    assert "network=structured_deep,structured_small,mlp_small,mlp_deep,mlp_wide" in cmd
    assert "network.bias=true" in cmd  # the bias study's verdict
    assert {"seed=0", "seeds=3", "episodes=200000", "eval_every=10000", "eval_games=1000",
            "hydra.sweep.dir=runs/paper/grid"} <= set(cmd)
    # extra arguments come last (Hydra takes the last value); slurm takes no joblib settings
    (slurm,) = _grid_commands("grid", "hydra.launcher.partition=cpu", LAUNCHER="slurm", SEEDS="10")
    assert "hydra/launcher=slurm" in slurm and not any("n_jobs" in x for x in slurm)
    assert slurm[-1] == "hydra.launcher.partition=cpu" and "seeds=10" in slurm


def test_the_defence_study_is_one_multirun_over_the_arms_of_configs_defence(compose_train):
    import os
    import subprocess

    done = subprocess.run(["bash", str(SCRIPT.parent / "defence_study.sh")], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "PYTHON": "echo"})
    assert done.returncode == 0, done.stderr
    (cmd,) = [line.split() for line in done.stdout.splitlines()]
    arms = "grid,exact_losses,free_placement,playable,sigmoid_no_bias,rule_labels"
    assert {"-m", "hydra/launcher=joblib", "+experiment=dqn_444_gravity_vs_benchmark", f"+defence={arms}",
            "num_envs=64", "agent.lr=0.04", "seeds=3", "episodes=200000", "eval_every=10000", "eval_games=1000",
            "hydra.sweep.dir=runs/paper/defence"} <= set(cmd)
    assert sorted(p.stem for p in Path("configs/defence").glob("*.yaml")) == sorted(arms.split(","))
    # what each arm changes from the grid's setting (arm a), as composed
    from omegaconf import OmegaConf

    base = compose_train(["+experiment=dqn_444_gravity_vs_benchmark", "+defence=grid"])
    changed = {}
    for arm in arms.split(","):
        cfg = compose_train(["+experiment=dqn_444_gravity_vs_benchmark", f"+defence={arm}"])
        changed[arm] = sorted(differences(*({k: v for k, v in flat(OmegaConf.to_container(c, resolve=True)).items()
                                             if k.split(".")[0] in ("game", "network", "agent")}
                                            for c in (cfg, base))))
        if cfg.eval_opponents != base.eval_opponents:
            changed[arm].append("eval_opponents")
    assert changed == {"grid": [], "exact_losses": ["agent.parts.rules.exact_losses"], "free_placement": ["game.name"],
                       "playable": ["network.playable"], "sigmoid_no_bias": ["network.activation", "network.bias"],
                       "rule_labels": ["agent.parts.labels.rule_labels"]}
    assert base.network.bias and base.agent.opponent == base.agent.opponent_after == "benchmark"


def test_paper_bias_runs_compare_the_vs_benchmark_row_without_and_with_biases():
    (cmd,) = _grid_commands("bias")
    assert {"+experiment=dqn_444_gravity_vs_benchmark", "network=structured_deep", "network.bias=false,true",
            "seeds=3", "hydra.sweep.dir=runs/paper/bias"} <= set(cmd)


def test_paper_fidelity_study_runs_two_batch_sizes_at_three_learning_rates_beside_the_grids_online_rows():
    b16, b64 = _grid_commands("fidelity")
    both = "+experiment=dqn_444_gravity,dqn_444_gravity_vs_benchmark"
    (grid,) = _grid_commands("grid")
    shared = {both, "network.bias=true", "eval_every=10000", "eval_games=1000", "seeds=3", "episodes=200000"}
    assert shared <= set(grid)  # the grid's settings but the batch size and rate: its structured_deep rows are online
    for cmd in (b16, b64):
        assert shared | {"network=structured_deep"} <= set(cmd)
    assert {"num_envs=16", "agent.lr=0.005,0.02,0.08", "hydra.sweep.dir=runs/paper/fidelity/part1"} <= set(b16)
    assert {"num_envs=64", "agent.lr=0.005,0.04,0.32", "hydra.sweep.dir=runs/paper/fidelity/part2"} <= set(b64)


def grid_run(root: Path, name: str, network: str, opponent: str, seed: int, scores: list[float],
             bias: bool = True, num_envs: int = 1) -> None:
    """A run as the grid leaves it: Hydra's overrides and choices, the logged config, the score curve."""
    run = root / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text(f"- network={network}\n- agent.opponent={opponent}\n"
                                                   f"- seed={seed}\n")
    (run / ".hydra" / "hydra.yaml").write_text(f"hydra:\n  runtime:\n    choices:\n      network: {network}\n")
    config = (f"seed: {seed}\nnum_envs: {num_envs}\ngame:\n  name: 4x4x4_gravity\nnetwork:\n  kind: structured\n"
              f"  bias: {str(bias).lower()}\nagent:\n  opponent: {opponent}\n  lr: 0.005\n")
    with SummaryWriter(str(run / "tb")) as w:
        w.add_text("config", "```\n" + config + "\n```", 0)
        for k, s in enumerate(scores):
            w.add_scalar("eval/benchmark/score", s, (k + 1) * 10000)


def test_runs_csv_holds_every_point_and_reads_back_to_the_same_table(tmp_path, summarize, capsys):
    import csv

    grid_run(tmp_path, "a0", "structured_deep", "benchmark", 0, [0.90, 0.99, 0.97])
    grid_run(tmp_path, "a1", "structured_deep", "benchmark", 1, [0.95, 0.96, 0.98])
    grid_run(tmp_path, "b0", "mlp_small", "self_play", 0, [0.10, 0.30])
    summarize.main([str(tmp_path), "last=2", "format=runs"])
    text = capsys.readouterr().out
    rows = list(csv.DictReader(text.splitlines()))
    assert [(r["network"], r["regime"], r["bias"], r["protocol"], r["seed"]) for r in rows] == [
        ("mlp_small", "self_play", "true", "online", "0"), ("structured_deep", "benchmark", "true", "online", "0"),
        ("structured_deep", "benchmark", "true", "online", "1")]
    assert rows[1]["dir"] == "a0" and rows[1]["peak"] == "0.9900" and rows[1]["end_mean"] == "0.9800"
    assert (rows[1]["10000"], rows[1]["30000"], rows[0]["30000"]) == ("0.9000", "0.9700", "")
    (tmp_path / "runs.csv").write_text(text)
    summarize.main([str(tmp_path), "last=2"])
    from_folder = capsys.readouterr().out
    summarize.main([str(tmp_path / "runs.csv"), "last=2"])
    assert capsys.readouterr().out == from_folder


def test_paper_table_gives_the_papers_rows_and_whether_each_lies_within_two_sd(tmp_path, summarize):
    from ttt.harness.curves import find_runs

    grid_run(tmp_path, "a0", "structured_deep", "benchmark", 0, [0.90, 0.99, 0.97])
    grid_run(tmp_path, "a1", "structured_deep", "benchmark", 1, [0.95, 0.96, 0.98])
    grid_run(tmp_path, "c0", "structured_deep", "benchmark", 0, [0.10, 0.20, 0.30], bias=False)
    lines = summarize.paper_table(find_runs(tmp_path), last=2).splitlines()
    assert len(lines) == 2 + 10 + 1  # header, rule, the paper's 10 rows, a second deep-structured vs benchmark row
    deep = [line for line in lines if "`structured_deep`" in line and "vs benchmark" in line]
    # with biases: peaks 99, 98 -> 98.5 (paper 98.7 +- 0.3: inside); ends 98, 97 -> 97.5 (97.3 +- 0.8: inside)
    assert deep == ["| deep structured (`structured_deep`) | vs benchmark | false | online | 98.7 ± 0.3 | 97.3 ± 0.8 "
                    "| 30.0 ± 0.0 | 25.0 ± 0.0 | 3 | 1 | below / below |",
                    "| deep structured (`structured_deep`) | vs benchmark | true | online | 98.7 ± 0.3 | 97.3 ± 0.8 "
                    "| 98.5 ± 0.7 | 97.5 ± 0.7 | 3 | 2 | yes / yes |"]
    empty = next(line for line in lines if "`mlp_wide`" in line and "self-play" in line)
    assert empty == "| wide unstructured (`mlp_wide`) | self-play |  |  | 54.1 ± 5.5 | 36.1 ± 7.1 |  |  |  |  |  |"


def test_where_keeps_the_runs_whose_facts_match_in_every_format(tmp_path, summarize, capsys):
    import csv

    grid_run(tmp_path, "a0", "structured_deep", "benchmark", 0, [0.90, 0.99, 0.97])
    grid_run(tmp_path, "c0", "structured_deep", "benchmark", 0, [0.10, 0.20, 0.30], bias=False)
    grid_run(tmp_path, "b0", "mlp_small", "self_play", 0, [0.10, 0.30])
    summarize.main([str(tmp_path), "last=2", "format=paper", "where=bias:true"])
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if "`structured_deep`" in line and "benchmark" in line]
    assert [row.split(" | ")[2] for row in rows] == ["true"]  # the bias-free run is left out
    summarize.main([str(tmp_path), "last=2", "format=runs", "where=network:mlp_small|mlp_wide,regime:self_play"])
    assert [r["network"] for r in csv.DictReader(capsys.readouterr().out.splitlines())] == ["mlp_small"]
    for bad, reason in (("where=seed:0", "where= takes KEY:VALUE"), ("where=network:mlp_wide", "no runs match")):
        assert reason in refused(summarize.main, [str(tmp_path), bad], capsys)


def test_paper_table_gives_no_end_figure_for_runs_that_have_not_reached_their_games(tmp_path, summarize):
    from ttt.harness.curves import find_runs

    for seed in (0, 1):
        grid_run(tmp_path, f"a{seed}", "mlp_small", "self_play", seed, [0.1, 0.3, 0.2])
        overrides = tmp_path / f"a{seed}" / ".hydra" / "overrides.yaml"
        overrides.write_text(overrides.read_text() + "- episodes=200000\n")
    (row,) = [line for line in summarize.paper_table(find_runs(tmp_path), last=2).splitlines() if "`mlp_small`" in
              line and "self-play" in line]
    # peak 30 lies in the paper's 31.2 +- 2 x 6.2; no end figure at 30,000 of 200,000 games
    assert row.endswith("| 30.0 ± 0.0 | n/a: at 30,000 of 200,000 games | 3 | 2 | yes so far / n/a |")


def test_paper_table_gives_a_block_rate_column_where_the_runs_log_it(tmp_path, summarize, capsys):
    from ttt.harness.curves import find_runs

    grid_run(tmp_path, "a0", "structured_deep", "benchmark", 0, [0.90, 0.99, 0.97])
    grid_run(tmp_path, "a1", "structured_deep", "benchmark", 1, [0.95, 0.96, 0.98])
    log_block_rates(tmp_path / "a0", [0.2, 0.5, 0.7], 10000)
    log_block_rates(tmp_path / "a1", [0.1, 0.4, 0.4], 10000)
    grid_run(tmp_path, "b0", "mlp_small", "self_play", 0, [0.10, 0.30])  # logs no defence
    lines = summarize.paper_table(find_runs(tmp_path), last=2).splitlines()
    assert lines[0].endswith("| inside paper ± 2 sd (peak / end) | block rate here (last 2) % |")
    assert lines[1] == "|---" * 12 + "|"
    # the last 2 points: (50 + 70) / 2 = 60 and (40 + 40) / 2 = 40 -> 50.0 +- 14.1
    (deep,) = [line for line in lines if "`structured_deep`" in line and "vs benchmark" in line]
    assert deep.endswith("| 98.5 ± 0.7 | 97.5 ± 0.7 | 3 | 2 | yes / yes | 50.0 ± 14.1 |")
    (small,) = [line for line in lines if "`mlp_small`" in line and "self-play" in line]
    assert small.endswith("| 30.0 ± 0.0 | 20.0 ± 0.0 | 2 | 1 | yes / yes | n/a |")
    empty = next(line for line in lines if "`mlp_wide`" in line and "self-play" in line)
    assert empty.endswith("|  |  |  |  |  |  |") and empty.count("|") == 13
    for run in ("a0", "a1"):  # not at its planned games: no end figure, and no block rate over that window
        overrides = tmp_path / run / ".hydra" / "overrides.yaml"
        overrides.write_text(overrides.read_text() + "- episodes=200000\n")
    (deep,) = [line for line in summarize.paper_table(find_runs(tmp_path), last=2).splitlines()
               if "`structured_deep`" in line and "vs benchmark" in line]
    assert deep.endswith("| n/a: at 30,000 of 200,000 games | 3 | 2 | yes so far / n/a | n/a |")
    summarize.main([str(tmp_path / "b0"), "last=2", "format=paper"])  # no run logs it: no column
    assert "block rate" not in capsys.readouterr().out


def test_a_csv_that_is_not_a_table_of_runs_is_one_line(tmp_path, summarize, capsys):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    assert refused(summarize.main, [str(bad)], capsys).startswith(f"error: {bad}: not a table of runs")


def test_fidelity_table_compares_each_batched_protocol_with_online_by_welch(tmp_path, summarize):
    from ttt.harness.curves import find_runs

    for seed, s in enumerate([0.40, 0.50, 0.60]):
        grid_run(tmp_path, f"on{seed}", "structured_deep", "benchmark", seed, [0.1, s])
        grid_run(tmp_path, f"b{seed}", "structured_deep", "benchmark", seed, [0.1, s + 0.01], num_envs=16)
        grid_run(tmp_path, f"c{seed}", "structured_deep", "benchmark", seed, [0.1, s + 0.30], num_envs=64)
    lines = summarize.fidelity_table(find_runs(tmp_path), [20000]).splitlines()
    assert lines[0] == "| network | regime | biases | protocol | n | 20,000 games | verdict |"
    # online 0.5 +- 0.1; B=16 0.51: difference 0.01, Welch se sqrt(2 * 0.01 / 3) = 0.0816, df 4, t 2.776
    assert lines[2] == "| structured_deep | vs benchmark | true | online | 3 | 0.500 ± 0.100 | reference |"
    assert lines[3] == ("| structured_deep | vs benchmark | true | batched B=16 lr=0.005 | 3 | 0.510 ± 0.100 "
                        "(Δ +0.010, 95% [-0.217, +0.237]) | same |")
    assert lines[4].endswith("0.800 ± 0.100 (Δ +0.300, 95% [+0.073, +0.527]) | differs |")
    assert summarize.score_at(find_runs(tmp_path / "on0")[0].curves["eval/benchmark/score"], 30000) is None
    # no point at 30,000 games: "same" so far is no verdict, a difference already seen stands
    later = summarize.fidelity_table(find_runs(tmp_path), [20000, 30000]).splitlines()
    assert later[3].endswith("| incomplete |") and later[4].endswith("| differs |")


# ---------------------------------------------------------------------------- the experiment files
CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
EXPERIMENTS = sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*.yaml"))
GROUPS = ("game", "network", "agent")


def own_defaults(name: str) -> tuple[list[str], dict[str, str]]:
    """An experiment file's defaults list, read as written: (the experiments it extends, {group: option}
    of its ``override /group: option`` entries)."""
    import yaml

    entries = yaml.safe_load((CONFIG_DIR / "experiment" / f"{name}.yaml").read_text()).get("defaults") or []
    extends, groups = [], {}
    for entry in entries:
        if isinstance(entry, str):
            if entry != "_self_":
                extends.append(entry.removeprefix("/experiment/").removeprefix("experiment/"))
            continue
        ((key, option),) = entry.items()
        group = key.removeprefix("override ").removeprefix("optional ").strip().lstrip("/")
        if group.startswith("experiment"):
            extends.append(option)
        else:
            groups[group] = option
    return extends, groups


def own_values(name: str) -> dict[str, object]:
    """The settings an experiment file names itself (not its defaults list), by dotted key."""
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "experiment" / f"{name}.yaml"))
    node.pop("defaults", None)
    return flat(node)


def flat(node: dict, prefix: str = "") -> dict[str, object]:
    """``node`` by dotted key; a part of the learner named without settings (``agent.parts.symmetry: {}``) is a
    key of its own, ``{}``: naming it is its setting."""
    out = {}
    for key, value in node.items():
        if isinstance(value, dict) and not (value == {} and prefix.endswith(".parts.")):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def part_default(key: str) -> object:
    """The default of a part's setting, ``agent.parts.<part>.<key>`` (its ``Settings``); None for a part's own key
    (``agent.parts.<part>``: a part without settings, not named)."""
    from ttt.agents.dqn.parts import table

    names = key.split(".")
    return getattr(table()[names[2]].Settings(), names[3]) if len(names) == 4 else None


def differences(a: dict[str, object], b: dict[str, object]) -> dict[str, tuple]:
    """{key: (a's value, b's value)} of the dotted keys where two configs differ. A part's setting that a config
    does not name is the part's default there (as a flat agent key it did not name was the key's default);
    which parts each names: ``parts_named``."""
    def value(config, key):
        return config[key] if key in config or not key.startswith("agent.parts.") else part_default(key)

    return {k: (value(a, k), value(b, k)) for k in {*a, *b} if value(a, k) != value(b, k)}


def parts_named(config: dict[str, object]) -> set[str]:
    """The learner's parts a config (by dotted key) names."""
    return {k.split(".")[2] for k in config if k.startswith("agent.parts.")}


def with_part_defaults(config: dict[str, object]) -> dict[str, object]:
    """``config`` (by dotted key) with every setting of every part of the learner that it does not name at its
    default (as the flat agent keys were all there)."""
    from dataclasses import fields

    from ttt.agents.dqn.parts import table

    return {**{f"agent.parts.{name}.{f.name}": f.default for name, part in table().items()
               for f in fields(part.Settings)}, **config}


def network_differences(network: dict, experiment: str) -> list[str]:
    """The keys of the ``network`` a checkpoint saved that differ from ``+experiment=<experiment>``'s (a key
    saved before its option existed counts as the option's default)."""
    recipe = compose_config([f"+experiment={experiment}"])
    keys = [k.removeprefix("network.") for k in recipe if k.startswith("network.")]
    defaults = {"tie_lines": False, "playable": False}  # options added after some checkpoints were saved
    return [k for k in keys if network.get(k, defaults.get(k)) != recipe[f"network.{k}"]]


def compose_config(overrides: list[str]) -> dict[str, object]:
    """The composed training config of ``overrides`` (no other), by dotted key."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from ttt.harness.learners import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            return flat(OmegaConf.to_container(compose("train", overrides=overrides), resolve=True))
    finally:
        GlobalHydra.instance().clear()


def train_choices() -> dict[str, str]:
    """The group options configs/train.yaml picks: {game: 4x4x4, network: ..., agent: dqn}."""
    import yaml

    entries = yaml.safe_load((CONFIG_DIR / "train.yaml").read_text())["defaults"]
    return {k: v for e in entries if isinstance(e, dict) for k, v in e.items() if k in GROUPS}


def base_config(groups: dict[str, str]) -> dict[str, object]:
    """The defaults an experiment starts from: train.yaml with the groups it picks, and nothing else."""
    return compose_config([f"{g}={option}" for g, option in groups.items()])


def turned_off(own: dict[str, object], own_groups: dict[str, str], parent: dict[str, object],
               parent_groups: dict[str, str], base: dict[str, object], defaults: dict[str, str]) -> list[str]:
    """The settings a variant sets back to the default that its parent changed: keys it names whose parent
    value differs from ``base`` (the defaults under the parent's groups) and whose own value is the
    default; and groups the parent picks away from train.yaml's ``defaults`` that the variant picks back."""
    keys = [k for k, v in own.items() if k in base and parent.get(k) != base[k] and v == base[k]]
    groups = [f"/{g}" for g, option in own_groups.items()
              if parent_groups.get(g, defaults.get(g)) != defaults.get(g) and option == defaults.get(g)]
    return keys + groups


@pytest.mark.parametrize("name", ["dqn_444", "dqn_444_plain", "dqn_444_value_player"])
def test_dqn_444_and_the_plain_learner_extend_no_experiment_and_name_every_setting_they_change(name):
    extends, groups = own_defaults(name)
    assert extends == []
    # one file is enough to read it: the defaults under its groups with its own values on top
    assert compose_config([f"+experiment={name}"]) == {**base_config(groups), **own_values(name)}


#: what dqn_444 adds to the plain learner (dqn_444_plain), key by key: (dqn_444's value, the plain learner's)
INGREDIENTS = {
    # the rules in move selection
    "agent.parts.rules.exact_losses": (True, False), "agent.parts.rules.play_forks": (True, False),
    "agent.parts.rules.play_threats": (3, 0),
    # the rank pairs of the rules, on a rank head (fork_defence_labels is read only with rule_labels)
    "agent.parts.labels.rank_labels": (512, 0), "agent.parts.labels.rank_forced": (True, False),
    "agent.parts.labels.rank_moves": (8, 0), "agent.parts.labels.rank_moves_wins": (False, True),
    "agent.parts.labels.rank_weight": (0.5, 1.0), "agent.parts.labels.rank_head": (True, False),
    "agent.parts.labels.fork_defence_labels": (16, 0),
    # the outcome as the value head's target instead of TD(0)'s
    "agent.td_lambda": (1.0, 0.0),
    # the plain learner's discount: at 0.97 its value head saturates (docs/notes/plain_learner.md)
    "agent.gamma": (0.97, 0.9),
}


def test_dqn_444_plain_is_the_plain_learner_and_differs_from_dqn_444_in_those_ingredients_alone():
    plain, main = compose_config(["+experiment=dqn_444_plain"]), compose_config(["+experiment=dqn_444"])
    a = {k.removeprefix("agent."): v for k, v in with_part_defaults(plain).items() if k.startswith("agent.")}
    # no rules in move selection, neither in training moves nor in the trained player: the network alone; a
    # terminal afterstate is valued by its reward (exact_wins), as TD on afterstates values it
    assert [k for k in ("exact_losses", "exact_forks", "play_forks", "play_threats") if a[f"parts.rules.{k}"]] == []
    assert a["exact_wins"] is True
    # no labels, no rank pairs, no second head
    labels = ("rule_labels", "random_labels", "search_labels", "rank_labels", "rank_head")
    assert [k for k in labels if a[f"parts.labels.{k}"]] == []
    # online TD(0) with the Huber loss, the learning network valuing its own choice (no target network)
    assert (a["td_lambda"], a["loss"]) == (0.0, "huber") and "target" not in parts_named(plain)
    # random for 5,000 games, then frozen copies of itself re-taken every 500 games: no other player trains it
    assert (a["opponent"], a["switch_episode"], a["opponent_after"], a["refresh_every"], a["frozen_pool"],
            a["benchmark_fraction"]) == ("random", 5000, "frozen", 500, 1, 0.0)
    assert differences(main, plain) == INGREDIENTS
    assert parts_named(plain) == {"symmetry"} and parts_named(main) == {"rules", "labels", "symmetry"}
    # the core's settings alone, and one of them names the parts: what a reader of the plain learner sees
    assert len({k.split(".")[1] for k in plain if k.startswith("agent.")}) == 22


def test_dqn_444_value_player_differs_from_dqn_444_in_its_head_labels_and_shared_detectors_alone():
    value, main = compose_config(["+experiment=dqn_444_value_player"]), compose_config(["+experiment=dqn_444"])
    assert differences(value, main) == {
        "agent.parts.labels.rank_head": (False, True), "agent.parts.labels.rule_labels": (True, False),
        "agent.parts.labels.random_labels": (512, 0), "agent.parts.labels.label_weight": (1.0, 0.0),
        "network.tie_orbits": (True, False)}


def test_dqn_444_value_player_trains_a_player_whose_value_orders_its_moves(compose_train, tmp_path):
    import torch

    from ttt.train import train

    cfg = compose_train(["+experiment=dqn_444_value_player", "episodes=8", "num_envs=4", "eval_every=0",
                         "eval_opponents=[random]", "eval_games=2", "agent.final_eval_games=2", "eval_tactics=false",
                         "agent.switch_episode=4", "agent.refresh_every=2", "++agent.parts.labels.random_labels=16",
                         "++agent.parts.labels.rank_labels=16"])
    train(cfg)
    payload = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert "rank_head" not in payload  # no second head: the value head orders the moves
    assert payload["network"]["tie_orbits"] is True
    assert not any(k.startswith("rank.") for k in payload["weights"])


def test_dqn_444_plain_trains_a_player_that_is_its_network_with_terminal_values(compose_train, tmp_path):
    from dataclasses import replace

    import torch

    from ttt.agents.dqn import Config, training_rules
    from ttt.games.exact import NO_RULES, Rules
    from ttt.train import train

    cfg = compose_train(["+experiment=dqn_444_plain", "episodes=8", "num_envs=4", "eval_every=0",
                         "eval_opponents=[random]", "eval_games=2", "agent.final_eval_games=2", "eval_tactics=false",
                         "agent.switch_episode=4", "agent.refresh_every=2"])
    train(cfg)
    payload = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    rules = Rules(**payload["rules"])
    # the trained player's: no rule but the terminal afterstates' values (a completed line scores its reward)
    assert rules == replace(NO_RULES, wins=True) and "rank_head" not in payload
    assert training_rules(Config(**cfg.agent)) == rules  # and the training moves'


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_extends_at_most_one_experiment_that_extends_none(name):
    extends, _ = own_defaults(name)
    assert len(extends) <= 1, f"{name} extends {extends}"
    for parent in extends:
        assert parent in EXPERIMENTS, f"{name} extends {parent}, which is not an experiment file"
        assert own_defaults(parent)[0] == [], (f"{name} extends {parent}, which extends {own_defaults(parent)[0]}: "
                                               f"variants are one level deep")


@pytest.mark.parametrize("name", [n for n in EXPERIMENTS if own_defaults(n)[0]])
def test_no_variant_turns_off_what_its_parent_turned_on(name):
    (parent,) = own_defaults(name)[0]
    parent_groups = own_defaults(parent)[1]
    base = with_part_defaults(base_config({**train_choices(), **parent_groups}))
    composed = with_part_defaults(compose_config([f"+experiment={parent}"]))
    off = turned_off(own_values(name), own_defaults(name)[1], composed, parent_groups, base, train_choices())
    assert off == [], f"{name} sets back to the default what {parent} changed: {off}"


def test_turned_off_finds_a_setting_or_group_set_back_to_its_default():
    base, defaults = {"agent.parts.labels.rule_labels": False, "agent.lr": 0.001}, {"game": "4x4x4"}
    parent = {"agent.parts.labels.rule_labels": True, "agent.lr": 0.001}
    assert turned_off({"agent.parts.labels.rule_labels": False}, {}, parent, {}, base,
                      defaults) == ["agent.parts.labels.rule_labels"]
    assert turned_off({"agent.lr": 0.001}, {}, parent, {}, base, defaults) == []  # the parent left it alone
    assert turned_off({}, {"game": "4x4x4"}, parent, {"game": "3x3"}, base, defaults) == ["/game"]
    assert turned_off({}, {"game": "4x4"}, parent, {"game": "3x3"}, base, defaults) == []


# ---------------------------------------------------------------------------- one home per default
@pytest.mark.parametrize("agent", sorted(p.stem for p in (CONFIG_DIR / "agent").glob("*.yaml")))
def test_an_agent_yaml_leaves_every_default_to_its_learners_config(agent):
    import yaml

    node = yaml.safe_load((CONFIG_DIR / "agent" / f"{agent}.yaml").read_text())
    assert node == {"defaults": [f"{agent}_schema", "_self_"], "name": agent}


def test_train_yaml_leaves_every_top_level_default_to_train_config():
    import yaml

    assert set(yaml.safe_load((CONFIG_DIR / "train.yaml").read_text())) == {"defaults", "hydra"}


def test_the_discount_has_one_home_the_learners_config():
    from dataclasses import fields

    from ttt.agents.dqn import Config, DQNPlayer
    from ttt.games import make_game
    from ttt.games.exact import GAMMA, Rules

    assert "gamma" not in {f.name for f in fields(Rules)}  # the rules' values take it where they are computed
    assert Config().gamma == GAMMA == DQNPlayer(make_game("3x3"), None).gamma


def test_value_columns_of_the_shipped_checkpoint(experiment_script, tmp_path, capsys):
    """experiments/value_columns.py: one CSV row with the network alone's tactics (the shipped ``dqn_444``
    takes 99.5% of the ``win`` suite's wins and makes 93.7% of the blocks alone: docs/dqn.md), its
    calibration and one-move figures, and the final evaluation beside the checkpoint."""
    import csv

    columns = experiment_script("value_columns")
    out = tmp_path / "rows.csv"
    assert columns.main(["checkpoints/dqn_444", "--games", "6", "--one-move", "20", "--ceiling", "2",
                         "--out", str(out)]) == 0
    (row,) = list(csv.DictReader(out.open()))
    assert float(row["win"]) >= 0.98 and 0.9 <= float(row["block"]) < 0.98
    # its value head does not see a loss one move ahead: -0.018 over 500 afterstates (docs/calibration.md),
    # where a value that sees it gives about -1
    assert abs(float(row["forced_loss"])) < 0.25
    assert {"auc_11+_alphabeta:1", "auc_11+_benchmark", "double_threat", "opening_median", "ece",
            "ceiling_11+_alphabeta:1", "ceiling_11+_benchmark", "auc_11+_95_alphabeta:1"} <= set(row)
    assert capsys.readouterr().out.startswith("run,win,block,fork,block_fork")
    assert "no such checkpoint" in refused(columns.main, [str(tmp_path / "nothing")], capsys)


def test_fit_one_move_labels_pools_the_three_kinds_of_label_and_fits_them(experiment_script):
    """experiments/fit_one_move_labels.py: the pool holds exactly the three one-move kinds, each board what
    its label says (a completed own line for +1; an open opponent three and no own line for -1; for a fork
    two open own threes and no open opponent three), and training lowers the loss."""
    import io

    import numpy as np

    from ttt.games import make_game

    fit = experiment_script("fit_one_move_labels")
    game = make_game("4x4x4")
    boards, targets = fit.label_pool(game, 8, 12, 0.97, np.random.default_rng(0))
    assert sorted(set(targets.tolist())) == pytest.approx([-1.0, 0.97, 1.0])
    cells = boards.numpy()[:, np.array(game.lines)]  # (N, lines, 4)
    own4 = (cells == 1).all(2).any(1)
    opp3 = ((cells == -1).sum(2) == 3) & ((cells == 0).sum(2) == 1)
    own3 = ((cells == 1).sum(2) == 3) & ((cells == 0).sum(2) == 1)
    t = targets.numpy()
    assert own4[t == 1.0].all() and not own4[t != 1.0].any()
    assert opp3[t == -1.0].any(1).all()
    assert not opp3[t == 0.97].any(1).any() and (own3[t == 0.97].sum(1) >= 2).all()
    rows = fit.fit("structured_deep", [8], 60, 0.01, "huber", 6, 8, 32, 60, 0, out=io.StringIO())
    assert [r["step"] for r in rows] == [0, 60]
    assert rows[1]["loss"] < rows[0]["loss"]
    with pytest.raises(SystemExit):
        fit.main(["--network", "nothing"])


def test_dqn_444_value_selfplay_differs_from_the_value_player_in_its_budget_games_a_ply_and_opponents_alone():
    selfplay = compose_config(["+experiment=dqn_444_value_selfplay"])
    value = compose_config(["+experiment=dqn_444_value_player"])
    assert differences(selfplay, value) == {
        "episodes": (75000, 150000), "eval_every": (25000, 50000), "num_envs": (32, 128),
        "agent.opponent_after": ("self_play", "frozen")}


def test_dqn_444_value_selfplay_decay_is_the_self_play_value_player_for_75000_games_with_falling_rates():
    decay = compose_config(["+experiment=dqn_444_value_selfplay_decay"])
    value = compose_config(["+experiment=dqn_444_value_player"])
    assert differences(decay, value) == {
        "episodes": (75000, 150000), "num_envs": (32, 128), "agent.opponent_after": ("self_play", "frozen"),
        "agent.lr_final": (0.0001, 0.0), "agent.lr_decay_episodes": (75000, 0)}


def test_blocks_by_line_splits_the_block_suite_by_the_threatened_lines_orbit(experiment_script, tmp_path, capsys):
    """experiments/blocks_by_line.py: every position of Qubic's ``block`` suite threatens lines of one orbit
    (4 orbits: 24 + 24 straight lines, 24 face diagonals, 4 space diagonals, 76 in all); the rows' positions
    add up to the suite's 600 and their rates to the suite's rate, which is ``ttt.tactics``'s."""
    import csv

    from ttt.evaluation.suites import suite_results, without_rules
    from ttt.harness.specs import load_agents

    script = experiment_script("blocks_by_line")
    out = tmp_path / "rows.csv"
    assert script.main(["checkpoints/dqn_444", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    *orbits, total = rows
    assert [(r["orbit"], r["kind"], r["lines"]) for r in orbits] == [
        ("0", "straight", "24"), ("1", "face diagonal", "24"), ("2", "space diagonal", "4"), ("3", "straight", "24")]
    assert sum(int(r["positions"]) for r in orbits) == int(total["positions"]) == 600
    solved = sum(round(float(r["rate"]) * int(r["positions"])) for r in orbits)
    game, [(_, player)] = load_agents([{"checkpoint": "checkpoints/dqn_444"}], None)
    assert solved == suite_results(without_rules(player), game)["block"]["solved"]
    assert float(total["rate"]) == pytest.approx(solved / 600, abs=1e-3)
    assert capsys.readouterr().out.startswith("run,orbit,kind,lines,positions,rate")
    assert "no such checkpoint" in refused(script.main, [str(tmp_path / "nothing")], capsys)


def test_dqn_444_value_lines_is_the_falling_rate_value_player_at_30000_games_with_8_detectors_for_every_line():
    lines = compose_config(["+experiment=dqn_444_value_lines"])
    value = compose_config(["+experiment=dqn_444_value_player"])
    assert differences(lines, value) == {
        "episodes": (30000, 150000), "num_envs": (32, 128), "agent.opponent_after": ("self_play", "frozen"),
        "agent.lr_final": (0.0001, 0.0), "agent.lr_decay_episodes": (30000, 0), "network.detectors": (8, 4),
        "network.tie_lines": (True, False)}


def test_dqn_444_value_d16_is_the_falling_rate_value_player_at_30000_games_with_16_detectors_a_line():
    d16 = compose_config(["+experiment=dqn_444_value_d16"])
    value = compose_config(["+experiment=dqn_444_value_player"])
    assert differences(d16, value) == {
        "episodes": (30000, 150000), "num_envs": (32, 128), "agent.opponent_after": ("self_play", "frozen"),
        "agent.lr_final": (0.0001, 0.0), "agent.lr_decay_episodes": (30000, 0), "network.detectors": (16, 4)}


def test_move_errors_counts_what_a_player_misses(experiment_script, capsys):
    """experiments/move_errors.py: a depth-1 search never misses a win or a block; the random player misses
    some of each; every count is within its positions; gravity boards are refused."""
    script = experiment_script("move_errors")
    search = script.move_errors("alphabeta:1", "random", 40)
    assert search["win_chances"] > 0 and search["wins_missed"] == 0 and search["blocks_missed"] == 0
    rand = script.move_errors("random", "random", 40)
    assert rand["wins_missed"] > 0 and rand["blocks_missed"] > 0
    for row in (search, rand):
        assert row["wins_missed"] <= row["win_chances"] and row["blocks_missed"] <= row["under_threat"]
        assert row["allowed"] <= row["avoidable"] and row["lost_already"] <= row["moves"]
    assert script.main(["random", "--opponent", "random", "--games", "4"]) == 0
    assert capsys.readouterr().out.startswith("spec,opponent,games,score,moves,wins_missed")
    with pytest.raises(ValueError, match="boards without gravity"):
        script.move_errors("random", "random", 2, board="4x4x4_gravity")


# ---------------------------------------------------------------------------- the scripts' command lines
SCRIPTS = sorted(p.stem for p in SCRIPT.parent.glob("*.py"))


def exit_code(main, argv: list[str]) -> int:
    """The exit code of a script's ``main(argv)``, as ``sys.exit(main(...))`` would end the process (a string
    for ``sys.exit`` is exit code 1)."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    return 0 if code is None else code if isinstance(code, int) else 1


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_answers_help_with_exit_code_0_after_an_argument_too(name, experiment_script, capsys):
    script = experiment_script(name)
    first = script.__doc__.strip().splitlines()[0][:30]
    for argv in (["--help"], ["somewhere", "-h"]):
        assert exit_code(script.main, argv) == 0, argv
        out, err = capsys.readouterr()
        assert first in " ".join(out.split()) and err == "", argv


# bad input for each script, a missing path first where the script takes one
BAD_INPUT = {
    "alphazero_selfplay_cost": [["shares=MISSING"], ["games=-1"], ["experiment=MISSING"], ["repeats"]],
    "blocks_by_line": [["MISSING"]],
    "compile_update": [["runs=1"], ["rows=x"], ["compile=all"], ["board=MISSING"], ["runs"]],
    "defence_counterfactual": [["MISSING"], ["checkpoints/dqn_444", "games=0"], ["EMPTY"]],
    "fit_one_move_labels": [["--network", "MISSING"], ["--steps", "0"]],
    "move_errors": [["MISSING/checkpoint.pt", "--games", "2"], ["random", "--games", "0"], ["random", "--games", "x"]],
    "same_weights": [["games=0"], ["commits=29c68a5"], ["runs=3"], ["commit=nothing"]],
    "serve_latency": [["games=0"], ["port"]],
    "strength_per_cpu": [["x=MISSING"], ["no_label_here"]],
    "summarize": [["MISSING"], ["EMPTY", "format=none"], ["EMPTY"]],
    "value_columns": [["MISSING"], ["checkpoints/dqn_444", "--games", "x"]],
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_refuses_bad_input_and_a_missing_path_in_one_line_with_exit_code_2(
        name, experiment_script, tmp_path, capsys):
    """``python experiments/<name>.py ARGS`` with bad ARGS: one line on stderr, exit code 2, nothing on
    stdout (defence_counterfactual.py wrote an empty CSV for a missing folder and exited 0; summarize.py
    exited 1; the others ended in tracebacks)."""
    (tmp_path / "EMPTY").mkdir()
    script = experiment_script(name)
    assert name in BAD_INPUT, f"give {name} a case of bad input"
    for argv in BAD_INPUT[name]:
        argv = [str(tmp_path / a) if a.split("/")[0] in ("MISSING", "EMPTY") else a.replace("MISSING", "nothing")
                for a in argv]
        capsys.readouterr()
        assert exit_code(script.main, argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("error: "), (argv, err)


@pytest.mark.parametrize("name", ["blocks_by_line", "value_columns"])
def test_a_checkpoint_of_a_board_without_tactics_suites_is_refused_before_any_is_measured(
        name, experiment_script, dqn_checkpoint, capsys):
    small = dqn_checkpoint("3x3")
    line = refused(experiment_script(name).main, ["checkpoints/dqn_444", str(small)], capsys)
    assert line == f"error: {small}: a 3x3 checkpoint; the tactics suites ship for 4x4x4 and 4x4x4_gravity"


def test_defence_counterfactual_refuses_a_learner_without_rules_before_the_first_game(experiment_script, capsys):
    # an alphazero checkpoint ended in a traceback (no with_rules), after the header of the CSV
    script = experiment_script("defence_counterfactual")
    line = refused(script.main, ["checkpoints/alphazero_444"], capsys)
    assert line.startswith("error: checkpoints/alphazero_444/checkpoint.pt: AlphaZeroPlayer has no move-selection")


def test_summarize_leaves_out_nan_and_inf_points_with_a_note(tmp_path, summarize, capsys):
    """A CSV of runs with a ``nan`` or ``inf`` point ended in statistics.stdev's traceback; now those points
    are left out, each curve's on one line of stderr, and the figures are those of the other points."""
    import csv

    grid_run(tmp_path, "a0", "structured_deep", "benchmark", 0, [0.90, 0.99, 0.97])
    grid_run(tmp_path, "a1", "structured_deep", "benchmark", 1, [0.95, 0.96, 0.98])
    summarize.main([str(tmp_path), "format=runs"])
    table = list(csv.reader(capsys.readouterr().out.splitlines()))
    at = {step: table[0].index(step) for step in ("20000", "30000")}
    assert [row[table[0].index("dir")] for row in table[1:]] == ["a0", "a1"]
    table[1][at["20000"]], table[2][at["30000"]] = "nan", "inf"
    runs = tmp_path / "runs.csv"
    runs.write_text("\n".join(",".join(f'"{c}"' for c in row) for row in table) + "\n")
    summarize.main([str(runs), "last=1", "format=csv"])
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "summarize: a0: eval/benchmark/score: left out 1 point(s) that are no finite number (at 20000 games)",
        "summarize: a1: eval/benchmark/score: left out 1 point(s) that are no finite number (at 30000 games)"]
    (row,) = list(csv.DictReader(out.splitlines()))
    # a0 0.90, 0.97 and a1 0.95, 0.96: peaks 97 and 96, last points 97 and 96
    assert float(row["peak_mean"]) == pytest.approx(96.5) and float(row["end_mean"]) == pytest.approx(96.5)
    assert float(row["peak_sd"]) == pytest.approx(0.71, abs=0.01) and row["points"] == "2"


def test_a_csv_that_is_not_utf8_is_refused_in_one_line_naming_the_file(tmp_path, summarize, capsys):
    from ttt.plot import PlotError, load_groups

    bad = tmp_path / "latin1.csv"
    bad.write_bytes("setting,réseau\n".encode("latin-1"))
    line = refused(summarize.main, [str(bad)], capsys)
    assert line.startswith(f"error: {bad}: not UTF-8 text (it holds the byte 0xe9)")
    with pytest.raises(PlotError, match=f"^{bad}: not UTF-8 text"):
        load_groups(bad)


@pytest.mark.cli
def test_the_scripts_answer_help_and_refuse_bad_input_as_commands(tmp_path):
    """The real command lines: ``--help`` after an argument is exit code 0 (it was 1 for these three), and a
    missing folder is one line and exit code 2, no traceback."""
    import subprocess
    import sys

    for name, help_args, bad in (("summarize", ["runs", "--help"], ["MISSING"]),
                                 ("defence_counterfactual", ["runs", "--help"], ["MISSING"]),
                                 ("alphazero_selfplay_cost", ["games=2", "--help"], ["games=-1"])):
        script = str(SCRIPT.parent / f"{name}.py")
        done = subprocess.run([sys.executable, script, *help_args], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.strip() and done.stderr == "", (name, done.stderr)
        bad = [str(tmp_path / a) if a == "MISSING" else a for a in bad]
        done = subprocess.run([sys.executable, script, *bad], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (name, done.stderr)
        assert done.stderr.startswith("error: ") and done.stdout == "", (name, done.stderr)


def test_compile_update_times_the_eager_update_of_runs_side_by_side(experiment_script, capsys):
    script = experiment_script("compile_update")
    assert script.main(["runs=2", "rows=1", "plies=3", "board=3x3", "compile="]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("2 runs side by side, 1 examples each, 3x3") and out[1].startswith("eager ")
    assert out[2].startswith("eager, no host layout ") and len(out) == 3
    assert float(out[1].split()[-1]) > 0 and float(out[2].split()[-1]) > 0


@pytest.mark.slow
def test_compile_update_compiles_a_loss_with_the_eager_gradients(experiment_script, capsys):
    script = experiment_script("compile_update")
    assert script.main(["runs=2", "rows=2", "plies=3", "board=3x3", "compile=loss"]) == 0
    out = capsys.readouterr().out
    assert "the same gradients as eager: True" in out and "compiled loss " in out
    assert "step" not in out.split("\n", 1)[1]  # compile=loss: the optimiser's step stays eager
