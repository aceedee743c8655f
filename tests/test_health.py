"""The value head's health figures (ttt.agents.dqn.health): they tell a saturated head from a healthy one,
by hand-computed values on a position whose moves one move decides; the ring of recent positions; the
tags of a training run; summarize.py format=health."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from ttt.agents.dqn.health import POSITIONS, TAGS, Recent, health
from ttt.games import make_game
from ttt.games.arrays import NUMPY
from ttt.games.threats import move_tactics
from ttt.nets.structured import build_value_net

# 3x3, from the mover's view: the mover holds 0 and 1 (2 wins), the opponent 3 and 4 (5 would win for it)
#   X X .
#   O O .
#   . . .
POSITION = np.array([[1, 1, 0, -1, -1, 0, 0, 0, 0]], dtype=np.float32)
LEGAL = POSITION == 0
WIN, BLOCK, LEAVE = [2], [5], [6, 7, 8]  # 6, 7 and 8 let the opponent complete 3-4-5


class Scripted(nn.Module):
    """A healthy head by construction: logit +2 for a completed line, -2 for a move that leaves the
    opponent a win, 0 otherwise (the exact values' signs)."""

    def __init__(self, game):
        super().__init__()
        self.game = game
        self.dummy = nn.Parameter(torch.zeros(1))

    def afterstate_logits(self, boards, legal):
        b = boards.numpy().astype(np.int8)
        t = move_tactics(b, np.ones(len(b), dtype=np.int8), legal.numpy(), self.game)
        logits = np.where(t.win, 2.0, np.where(t.loss, -2.0, 0.0))
        return torch.as_tensor(logits).masked_fill(~legal, float("-inf"))


def test_the_position_has_the_moves_the_test_says():
    game = make_game("3x3")
    t = move_tactics(POSITION.astype(np.int8), np.ones(1, dtype=np.int8), LEGAL, game)
    assert np.flatnonzero(t.win[0]).tolist() == WIN
    assert np.flatnonzero(t.loss[0]).tolist() == LEAVE


def test_a_saturated_head_is_all_saturated_with_no_spread_and_wins_valued_as_losses():
    game = make_game("3x3")
    torch.manual_seed(0)
    net = build_value_net({"kind": "structured", "detectors": 4, "hidden": [8], "bias": True}, game)
    with torch.no_grad():
        net.rest[-2].weight.zero_()
        net.rest[-2].bias.fill_(20.0)  # every logit 20: V = tanh(20), 1 in float32
    h = health(net, game, POSITION)
    assert set(h) == set(TAGS)
    assert h["saturated"] == 1.0
    assert h["logit"] == pytest.approx(20.0)
    assert h["spread"] == pytest.approx(0.0, abs=1e-9)
    assert h["win"] == pytest.approx(1.0) and h["leaves_win"] == pytest.approx(1.0)


def test_a_healthy_head_values_wins_and_moves_that_leave_one_apart_with_the_hand_computed_spread():
    game = make_game("3x3")
    h = health(Scripted(game), game, POSITION)
    v = np.tanh(2.0)
    assert h["saturated"] == 0.0
    assert h["logit"] == pytest.approx((2 + 0 + 3 * 2) / 5)  # |+2| for the win, 0 the block, |-2| three times
    assert h["win"] == pytest.approx(v) and h["leaves_win"] == pytest.approx(-v)
    values = np.array([v, 0.0, -v, -v, -v])
    assert h["spread"] == pytest.approx(values.std())


def test_figures_without_afterstates_to_measure_are_nan():
    game = make_game("3x3")
    empty = np.zeros((1, 9), dtype=np.float32)  # no move wins or leaves a win on an empty board
    h = health(Scripted(game), game, empty)
    assert math.isnan(h["win"]) and math.isnan(h["leaves_win"]) and h["spread"] == 0.0
    nothing = health(Scripted(game), game, np.zeros((0, 9)))
    assert all(math.isnan(x) for x in nothing.values())


def test_recent_keeps_the_newest_positions_each_marked_with_its_run():
    recent = Recent(2, 9, NUMPY, size=4)  # one ring of 8 entries
    boards = (np.arange(12 * 9).reshape(12, 9) % 3 - 1).astype(np.int8)
    rows = lambda x: sorted(map(tuple, np.asarray(x).tolist()))  # noqa: E731
    recent.add(np.zeros(6, dtype=np.int64), boards[:6])
    assert rows(recent.of(0)) == rows(boards[:6])
    assert recent.of(1).shape == (0, 9)  # run 1 met nothing yet
    runs = np.array([1, 0, 1, 1, 0, 1])
    recent.add(runs, boards[6:])  # 12 written: the newest 8 are kept, rows 4 to 11
    assert rows(recent.of(0)) == rows(boards[[4, 5, 7, 10]])
    assert rows(recent.of(1)) == rows(boards[[6, 8, 9, 11]])
    recent.add(np.ones(20, dtype=np.int64), np.tile(boards[:1], (20, 1)))
    assert len(recent.of(1)) == 8 and len(recent.of(0)) == 0  # more than the ring holds: the newest 8
    assert recent.count == 20 and POSITIONS >= 256  # 6 + 6 + the 8 of the 20 it could hold


def test_the_learners_scalars_hold_the_health_figures_of_its_recent_positions(compose_train):
    from ttt.agents.dqn.curriculum import log_scalars
    from ttt.agents.dqn.trainer import Trainer

    cfg = compose_train(["+experiment=dqn_33", "num_envs=4"])
    trainer = Trainer(make_game("3x3"), cfg.network, cfg.agent, 4, NUMPY.generator(0))
    for _ in range(12):
        trainer.step()
    logged = {}

    class Run:
        def log(self, tag, value, step):
            logged[tag] = value

    line = log_scalars(Run(), trainer, 0, trainer.episodes, 0.1)
    figures = {tag.removeprefix("train/health/"): v for tag, v in logged.items() if tag.startswith("train/health/")}
    assert set(figures) == set(TAGS)
    views = trainer.recent.of(0)
    assert 12 <= len(views) <= 12 * 4  # the learners' positions of 12 plies, up to 4 a ply
    assert figures["saturated"] == health(trainer.net, trainer.game, views)["saturated"]
    assert "saturated" in line and "spread" in line


def test_summarize_tabulates_each_runs_health(tmp_path, experiment_script, capsys):
    from torch.utils.tensorboard import SummaryWriter

    summarize = experiment_script("summarize")
    for seed, sat in ((0, [0.2, 0.9, 0.05]), (1, [0.0, 0.0, 0.0])):
        run = tmp_path / f"s{seed}"
        (run / ".hydra").mkdir(parents=True)
        (run / ".hydra" / "overrides.yaml").write_text(f"- seed={seed}\n- agent.gamma=0.9\n")
        with SummaryWriter(str(run / "tb")) as w:
            for i, s in enumerate(sat):
                step = 3000 * (i + 1)
                w.add_scalar("train/health/saturated", s, step)
                w.add_scalar("train/health/win", 0.5 + seed, step)
    summarize.main([str(tmp_path), "format=health"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| setting | seed | games | saturated | logit |")
    rows = sorted([c.strip(" |") for c in line.split(" | ")] for line in out[2:])
    assert len(rows) == 2
    # columns: setting, seed, games, saturated, logit, spread, win, leaves_win, saturated_max
    first, second = sorted(rows, key=lambda r: r[6])
    assert first[2:4] == ["9,000", "0.050"] and first[6] == "0.500"
    assert first[8] == "0.900"  # the largest from 5,000 games on: 0.9 at 6,000 (0.2 at 3,000 is before)
    assert second[3] == "0.000" and second[6] == "1.500" and second[8] == "0.000"
    assert first[4] == "" and first[7] == ""  # not logged: empty
    with pytest.raises(SystemExit) as err:
        summarize.main([str(tmp_path), "format=health", "after=soon"])
    assert err.value.code == 2 and "after=soon" in capsys.readouterr().err
