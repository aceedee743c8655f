"""experiments/strength_per_cpu.py: score points placed at the CPU time of training, the budgets' scores
over seeds, the refusal of runs without the clock, and the command's table, CSV and figure."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from ttt.harness.clock import CPU_TAG
from ttt.harness.curves import Curve, RunLog

TAG = "eval/alphabeta:1/score"


@pytest.fixture(scope="module")
def spc(experiment_script):
    return experiment_script("strength_per_cpu")


def run_log(cpu: dict[int, float] | None, scores: dict[int, float], folder: str = "nowhere/run") -> RunLog:
    """A run with ``train/cpu_seconds`` at ``cpu`` ({game: seconds}; none when None) and ``TAG`` at ``scores``."""
    curves = {TAG: Curve(np.array(list(scores), dtype=np.int64), np.array(list(scores.values()), dtype=np.float64))}
    if cpu is not None:
        curves[CPU_TAG] = Curve(np.array(list(cpu), dtype=np.int64), np.array(list(cpu.values()), dtype=np.float64))
    return RunLog(Path(folder), (), False, curves=curves)


def cpu_curve(spc, hours: list[float], scores: list[float], total: float):
    return spc.CpuCurve(run_log({0: 0.0}, {0: 0.0}), np.array(hours), np.array(scores), total, 0)


def write_run(folder: Path, cpu: dict[int, float] | None, scores: dict[int, float],
              tag: str = TAG, also: dict[int, float] | None = None) -> None:
    """A run folder with a TensorBoard log written as training runs write theirs (``ttt.harness.event_file``):
    ``scores`` under ``TAG``, ``also`` under ``tag``."""
    from ttt.harness.event_file import EventFile

    log = EventFile(folder / "tb")
    for step, seconds in (cpu or {}).items():
        log.add_scalar(CPU_TAG, seconds, step)
    for step, score in scores.items():
        log.add_scalar(TAG, score, step)
    for step, score in (also or {}).items():
        log.add_scalar(tag, score, step)
    log.close()


def test_a_score_point_takes_the_clock_at_its_training_games(spc):
    run = run_log({0: 0.0, 100: 360.0, 200: 1080.0}, {100: 0.25, 150: 0.5, 200: 0.75})
    curve = spc.score_against_cpu(run, TAG, share=1)
    # exact at games 100 and 200; at 150 halfway between 360 and 1080 s: 720 s
    assert curve.hours.tolist() == [0.1, 0.2, 0.3]
    assert curve.scores.tolist() == [0.25, 0.5, 0.75]
    assert curve.total_hours == 0.3 and curve.left_out == 0


def test_points_outside_the_logged_clock_are_left_out_and_counted(spc):
    run = run_log({100: 360.0, 200: 720.0}, {50: 0.0, 100: 0.25, 200: 0.5, 250: 0.75, 300: 1.0})
    curve = spc.score_against_cpu(run, TAG, share=1)
    assert curve.hours.tolist() == [0.1, 0.2] and curve.scores.tolist() == [0.25, 0.5]
    assert curve.left_out == 3


def test_runs_side_by_side_take_their_share_of_the_groups_cpu_time(spc, tmp_path):
    for s in range(3):
        (tmp_path / f"seed_{s}" / "tb").mkdir(parents=True)
    (tmp_path / "seed_9").mkdir()  # no tb/ log: not a run
    run = run_log({100: 1080.0}, {100: 0.5}, str(tmp_path / "seed_1"))
    assert spc.side_by_side(run) == 3
    assert spc.side_by_side(run_log({100: 1.0}, {100: 0.5}, str(tmp_path / "other"))) == 1
    curve = spc.score_against_cpu(run, TAG)
    assert curve.hours.tolist() == [0.1] and curve.total_hours == 0.1  # 1080 s / 3 runs


def test_a_budget_takes_each_seeds_last_point_within_it(spc):
    a = cpu_curve(spc, [0.1, 0.2, 0.3], [0.2, 0.5, 0.6], total=0.3)
    b = cpu_curve(spc, [0.15, 0.25, 0.4], [0.1, 0.3, 0.7], total=0.4)
    assert spc.score_within(a, 0.25) == 0.5 and spc.score_within(b, 0.25) == 0.3
    assert spc.score_within(b, 0.1) is None  # trained past 0.1 h, but its first point came later
    assert spc.score_within(a, 0.35) is None  # its training stopped at 0.3 h
    at_01, at_025, at_035, at_1 = spc.budget_scores([a, b], [0.1, 0.25, 0.35, 1.0])
    assert (at_01.mean, at_01.n) == (0.2, 1) and math.isnan(at_01.sd)
    assert at_025.n == 2 and at_025.mean == pytest.approx(0.4) and at_025.sd == pytest.approx(math.sqrt(0.02))
    assert (at_035.mean, at_035.n) == (0.3, 1)
    assert at_1.n == 0 and math.isnan(at_1.mean)


def test_table_rows_hold_the_cpu_hours_final_scores_and_budgets(spc):
    a = cpu_curve(spc, [0.1, 0.2, 0.3], [0.2, 0.5, 0.6], total=0.3)
    b = cpu_curve(spc, [0.15, 0.25, 0.4], [0.1, 0.3, 0.7], total=0.5)
    (row,) = spc.table_rows({"td": [a, b]}, [0.25])
    assert (row.label, row.seeds, row.final_min) == ("td", 2, 0.6)
    assert row.cpu_hours.mean == pytest.approx(0.4) and row.cpu_hours.sd == pytest.approx(math.sqrt(0.02))
    assert row.final.mean == pytest.approx(0.65) and row.final.sd == pytest.approx(math.sqrt(0.005))
    assert row.budgets[0].mean == pytest.approx(0.4)
    lines = spc.markdown([row], [0.25], TAG).splitlines()
    assert lines[2] == "| learner | seeds | CPU hours | final score | final min | at 0.25 h |"
    assert lines[4] == "| td | 2 | 0.4 ± 0.141 | 0.650 ± 0.071 | 0.600 | 0.400 ± 0.141 |"


def test_the_mean_curve_spans_only_the_hours_every_seed_covers(spc):
    a = cpu_curve(spc, [0.1, 0.3], [0.0, 1.0], total=0.3)
    b = cpu_curve(spc, [0.0, 0.2, 0.4], [0.5, 0.5, 0.5], total=0.4)
    mean = spc.mean_curve([a, b], points=5)
    assert mean.steps.tolist() == pytest.approx([0.1, 0.15, 0.2, 0.25, 0.3])
    assert mean.values.tolist() == pytest.approx([0.25, 0.375, 0.5, 0.625, 0.75])
    apart = cpu_curve(spc, [0.5, 0.6], [0.5, 0.5], total=0.6)
    assert spc.mean_curve([a, apart]) is None
    one, other = cpu_curve(spc, [0.1], [0.25], total=0.1), cpu_curve(spc, [0.2], [0.75], total=0.2)
    point = spc.mean_curve([one, other])  # one point per seed: the mean point
    assert point.steps.tolist() == pytest.approx([0.15]) and point.values.tolist() == [0.5]


def test_a_run_without_the_clock_or_the_score_is_refused_naming_it(spc):
    with pytest.raises(spc.StrengthError, match=f"nowhere/run: no {CPU_TAG} logged"):
        spc.score_against_cpu(run_log(None, {100: 0.5}), TAG)
    with pytest.raises(spc.StrengthError, match="nowhere/run: no eval/random/score logged"):
        spc.score_against_cpu(run_log({100: 1.0}, {100: 0.5}), "eval/random/score")
    # resumed at game 200 from a checkpoint made before the clock: the clock starts again from 0
    with pytest.raises(spc.StrengthError, match="resumed from a checkpoint made before"):
        spc.score_against_cpu(run_log({200: 0.0, 300: 50.0}, {200: 0.5, 300: 0.6}), TAG)


def test_the_command_refuses_a_run_without_the_clock_in_one_line(spc, tmp_path, capsys):
    write_run(tmp_path / "old" / "r0", None, {100: 0.5})
    with pytest.raises(SystemExit) as err:
        spc.main([f"old={tmp_path / 'old'}"])
    assert err.value.code == 2
    out, text = capsys.readouterr()
    assert out == ""
    assert text.splitlines() == [f"error: {tmp_path / 'old' / 'r0'}: no {CPU_TAG} logged "
                                 f"(trained before the training clock existed)"]


def test_the_command_takes_learners_as_label_and_folders(spc, tmp_path, capsys):
    assert spc.parse_learner("dqn 444=runs/a+runs/b") == ("dqn 444", [Path("runs/a"), Path("runs/b")], None)
    assert spc.parse_learner("alone=runs/a@eval_alone/alphabeta:1/score") == (
        "alone", [Path("runs/a")], "eval_alone/alphabeta:1/score")
    for bad in (["no_label_here"], ["x=a", "--hours", "1,-2"], ["x=a@"]):
        with pytest.raises(SystemExit) as err:
            spc.main(bad)
        assert err.value.code == 2
    capsys.readouterr()
    with pytest.raises(SystemExit) as err:
        spc.main([f"x={tmp_path / 'missing'}"])
    assert err.value.code == 2 and "missing: no such folder" in capsys.readouterr().err


def test_the_command_writes_the_table_and_the_csv_from_tensorboard_logs(spc, tmp_path, capsys):
    # td: two runs of their own; r0's point at game 300 lies past its last clock figure
    write_run(tmp_path / "td" / "r0", {100: 360.0, 200: 720.0}, {100: 0.5, 200: 0.75, 300: 0.875})
    write_run(tmp_path / "td" / "r1", {100: 720.0, 200: 1440.0}, {100: 0.25, 200: 0.5})
    # side: two runs side by side, each logging the group's 720 s at game 100, so 0.1 h each
    write_run(tmp_path / "side" / "seed_0", {100: 720.0}, {100: 1.0})
    write_run(tmp_path / "side" / "seed_1", {100: 720.0}, {100: 0.5})
    table = tmp_path / "out" / "table.csv"
    spc.main([f"td={tmp_path / 'td' / 'r0'}+{tmp_path / 'td' / 'r1'}", f"side={tmp_path / 'side'}",
              "--hours", "0.1,0.2", "--csv", str(table)])
    out, err = capsys.readouterr()
    assert f"{tmp_path / 'td' / 'r0'}: 1 of 3 {TAG} points left out" in err
    assert f"{tmp_path / 'side'}: 2 runs side by side" in err
    assert "| td | 2 | 0.3 ± 0.141 | 0.625 ± 0.177 | 0.500 | 0.500 (1 of 2) | 0.500 ± 0.354 |" in out.splitlines()
    rows = {r["learner"]: r for r in csv.DictReader(table.read_text().splitlines())}
    td, side = rows["td"], rows["side"]
    # td: totals 0.2 and 0.4 h; finals 0.75 and 0.5; at 0.1 h only r0 has a point (0.5), at 0.2 h 0.75 and 0.25
    assert td["seeds"] == "2" and float(td["cpu_hours_mean"]) == pytest.approx(0.3)
    assert float(td["cpu_hours_sd"]) == pytest.approx(math.sqrt(0.02), rel=1e-5)
    assert (float(td["final_mean"]), float(td["final_min"])) == (0.625, 0.5)
    assert float(td["final_sd"]) == pytest.approx(math.sqrt(0.03125), rel=1e-5)
    assert (td["at_0.1h_mean"], td["at_0.1h_sd"], td["at_0.1h_n"]) == ("0.5", "", "1")
    assert (float(td["at_0.2h_mean"]), td["at_0.2h_n"]) == (0.5, "2")
    assert float(td["at_0.2h_sd"]) == pytest.approx(math.sqrt(0.125), rel=1e-5)
    # side: 0.1 h each (720 s over 2 runs); neither trained to 0.2 h
    assert (float(side["cpu_hours_mean"]), float(side["cpu_hours_sd"])) == (0.1, 0.0)
    assert (float(side["at_0.1h_mean"]), side["at_0.1h_n"]) == (0.75, "2")
    assert (side["at_0.2h_mean"], side["at_0.2h_n"]) == ("", "0")


def test_the_figure_is_written(spc, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    write_run(tmp_path / "a" / "r0", {100: 360.0, 200: 720.0}, {100: 0.5, 200: 0.75})
    write_run(tmp_path / "a" / "r1", {100: 400.0, 200: 800.0}, {100: 0.25, 200: 0.5})
    write_run(tmp_path / "b" / "r0", {100: 100.0}, {100: 0.5})
    figure = tmp_path / "fig.png"
    spc.main([f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}", "--figure", str(figure)])
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {figure}" in capsys.readouterr().err


def test_a_learner_may_name_its_own_tag_after_an_at_sign(spc, tmp_path, capsys):
    """The same runs read twice: with their rules (the default tag) and by the network alone (``eval_alone/``)."""
    alone = "eval_alone/alphabeta:1/score"
    write_run(tmp_path / "dqn" / "r0", {100: 360.0}, {100: 0.75}, alone, {100: 0.25})
    spc.main([f"rules={tmp_path / 'dqn'}", f"alone={tmp_path / 'dqn'}@{alone}", "--hours", "0.1"])
    out = capsys.readouterr().out.splitlines()
    assert "| rules | 1 | 0.1 | 0.750 | 0.750 | 0.750 |" in out
    assert "| alone | 1 | 0.1 | 0.250 | 0.250 | 0.250 |" in out


def test_seed_folders_of_runs_alone_are_told_from_runs_side_by_side_by_their_hydra_records(spc, tmp_path):
    for s in range(3):  # three runs trained one by one into alone/seed_<s>, each with its own record
        write_run(tmp_path / "alone" / f"seed_{s}", {100: 720.0}, {100: 0.5})
        (tmp_path / "alone" / f"seed_{s}" / ".hydra").mkdir()
        (tmp_path / "alone" / f"seed_{s}" / ".hydra" / "config.yaml").write_text(f"seeds: 1\nseed: {s}\n")
    for s in range(2):  # a group of seeds=3 (the group's record in its folder), two of whose runs have logs yet
        write_run(tmp_path / "group" / f"seed_{s}", {100: 720.0}, {100: 0.5})
    (tmp_path / "group" / ".hydra").mkdir()
    (tmp_path / "group" / ".hydra" / "config.yaml").write_text("seeds: 3\n")
    curves = spc.load_learners([("alone", [tmp_path / "alone"], None), ("group", [tmp_path / "group"], None)], TAG)
    assert [c.total_hours for c in curves["alone"]] == [0.2, 0.2, 0.2]  # 720 s each
    assert [c.total_hours for c in curves["group"]] == pytest.approx([0.2 / 3, 0.2 / 3])
