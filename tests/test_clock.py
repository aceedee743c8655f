"""The training clock (``ttt.harness.clock``): CPU seconds of training with the evaluations left out, logged as
``train/cpu_seconds`` at every checkpoint, and carried over when a run is resumed."""

from __future__ import annotations

import pytest

from ttt.config import ConfigError
from ttt.harness import clock
from ttt.harness.clock import CPU_TAG, TrainingClock, left_out, logged_at
from ttt.harness.curves import read_run
from ttt.train import train


class FakeCPU:
    """``time.process_time`` under the test's control."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cpu(monkeypatch):
    fake = FakeCPU()
    monkeypatch.setattr(clock.time, "process_time", fake)
    monkeypatch.setattr(clock, "_LEFT_OUT", [0.0])
    return fake


def test_the_clock_counts_training_and_leaves_every_evaluation_out(cpu):
    first = TrainingClock()
    cpu.now += 5.0
    second = TrainingClock(before=40.0)  # a resumed run: 40 s in its earlier sessions
    cpu.now += 3.0
    with left_out():  # an evaluation: 7 s that no clock of the process counts
        cpu.now += 7.0
    cpu.now += 2.0
    assert first.seconds() == 5.0 + 3.0 + 2.0
    assert second.seconds() == 40.0 + 3.0 + 2.0
    with pytest.raises(RuntimeError):  # an evaluation that fails is left out all the same
        with left_out():
            cpu.now += 1.0
            raise RuntimeError
    assert first.seconds() == 10.0


TINY = ["+experiment=dqn_33", "episodes=40", "eval_every=20", "eval_games=4", "eval_opponents=[random]",
        "agent.final_eval_games=4", "num_envs=4"]


def test_runs_log_their_cpu_time_at_each_checkpoint_and_a_resumed_run_goes_on_from_it(compose_train, tmp_path,
                                                                                       monkeypatch):
    train(compose_train([*TINY, "episodes=20"]))
    tb = tmp_path / "run" / "tb"
    curve = read_run(tb).curves[CPU_TAG]
    (end,) = curve.steps.tolist()  # the final checkpoint only: 4 games side by side end at 20-23
    spent = float(curve.values[0])
    assert 20 <= end < 24 and spent > 0
    assert logged_at(tb, end) == spent and logged_at(tb, end - 1) == 0.0 and logged_at(tmp_path / "none", 5) == 0.0
    # resumed with a clock that does not move: every later point is the first session's figure exactly
    monkeypatch.setattr(clock.time, "process_time", lambda: 7.0)
    train(compose_train([*TINY, "resume=true", "episodes=60"]))
    curve = read_run(tb).curves[CPU_TAG]
    assert curve.steps.tolist()[0] == end and curve.steps[-1] >= 60 and len(curve) == 3  # 20, 40, 60
    assert curve.values.tolist() == pytest.approx([spent] * len(curve))


def test_each_evaluation_logs_its_score_against_the_cpu_seconds_of_training(compose_train, tmp_path):
    """``eval_cpu/<opponent>/score``: the score of ``eval/<opponent>/score`` at the same evaluation, its
    step the CPU milliseconds of training when it starts, just after the checkpoint saved before it logged
    ``train/cpu_seconds``."""
    train(compose_train([*TINY, "episodes=60"]))
    run = read_run(tmp_path / "run" / "tb")
    by_games, by_cpu, cpu = run.curves["eval/random/score"], run.curves["eval_cpu/random/score"], run.curves[CPU_TAG]
    assert len(by_cpu) == len(by_games) == 3  # 20, 40, 60
    assert by_cpu.values.tolist() == by_games.values.tolist()
    saved = [1000 * cpu.values[cpu.steps.tolist().index(s)] for s in by_games.steps]
    # read a moment after the save logged its figure (as float32): no earlier, and within 0.2 s of CPU
    assert all(-1 <= step - ms <= 200 for step, ms in zip(by_cpu.steps.tolist(), saved, strict=True))


def test_eval_alone_plays_each_evaluation_again_with_the_network_alone(compose_train, tmp_path):
    """``eval_alone=true``: beside ``eval/``, ``eval_alone/<opponent>/score`` is the same match played by the
    network without its rules; at the end it is exactly the match of the checkpoint's player without rules."""
    from ttt.agents import load_player
    from ttt.evaluation.evaluate import play_match
    from ttt.games import make_game
    from ttt.players import make_player

    train(compose_train([*TINY, "episodes=40", "eval_alone=true"]))
    run = read_run(tmp_path / "run" / "tb")
    with_rules, alone = run.curves["eval/random/score"], run.curves["eval_alone/random/score"]
    assert alone.steps.tolist() == with_rules.steps.tolist() and len(alone) == 2  # 20, 40 (the final)
    assert len(run.curves["eval_alone_cpu/random/score"]) == 2
    player = load_player(tmp_path / "run" / "checkpoint.pt")
    assert player.rules.wins  # dqn_33 plays with its rules: the network alone is another player
    game = make_game("3x3")
    again = play_match(game, player.without_rules(), make_player("random", game), 4, seed=7)
    assert alone.values[-1] == pytest.approx(again.both.score)


def test_eval_alone_is_refused_for_a_learner_without_rules(compose_train):
    with pytest.raises(ConfigError, match=r"^eval_alone=true: only dqn players have rules to leave out "
                                          r"\(agent=alphazero\)$"):
        train(compose_train(["+experiment=alphazero_33", "episodes=4", "eval_alone=true"]))
