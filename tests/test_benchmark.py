"""ttt.benchmark and ttt.evaluation.elo: JSON fields, agreement with play_match, specs, errors, Elo recovery."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

import ttt.benchmark as bm
import ttt.harness.specs as specs
from ttt.agents import AGENTS
from ttt.agents.dqn import NO_RULES
from ttt.checkpoint import CheckpointError, save_checkpoint
from ttt.cli import run_cli
from ttt.evaluation.elo import PairResult, expected_score, fit_elo
from ttt.evaluation.evaluate import play_match
from ttt.games import make_game
from ttt.players import PLAYERS, Player, make_player

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
FIELDS = {"opponent", "seat", "games", "wins", "draws", "losses", "win_rate", "win_rate_ci", "score",
          "games_per_sec", "agent_ms_per_move", "opponent_ms_per_move"}


def compose_benchmark(*overrides: str):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose("benchmark", overrides=list(overrides))


# ------------------------------------------------------------------ a tiny saved learner
class TableLearner(Player):
    """A deterministic afterstate table: plays the best-valued move (ties: the lowest cell),
    learns the final reward for every afterstate of a game, and saves as .npz."""

    name = "table"

    def __init__(self, game, values=None) -> None:
        super().__init__(game)
        self.values: dict[int, float] = dict(values or {})

    def _after(self, state, action) -> int:
        return int(self.game.ternary_hash(np.array(state.apply(action).board) * state.to_play()))

    def action_values(self, state):
        return {a: self.values.get(self._after(state, a), 0.0) for a in state.legal_actions()}

    def act(self, state, rng):
        values = self.action_values(state)
        return max(values, key=lambda a: (values[a], -a))

    def learn_from_game(self, states) -> bool:
        winner = states[-1].winner()
        for before, after in zip(states[:-1], states[1:], strict=True):
            key = int(self.game.ternary_hash(np.array(after.board) * before.to_play()))
            self.values[key] = self.values.get(key, 0.0) + 0.5 * (winner * before.to_play() - self.values.get(key, 0.0))
        return True

    def save(self, path) -> None:
        keys = np.array(sorted(self.values), dtype=np.int64)
        save_checkpoint(path, {"kind": "table_test", "game": self.game.name, "keys": keys,
                               "values": np.array([self.values[int(k)] for k in keys])})


def player_from_checkpoint(payload: dict) -> TableLearner:
    """The loader ttt.agents.load_player calls for the test kind."""
    return TableLearner(make_game(payload["game"]), zip(payload["keys"].tolist(), payload["values"].tolist(),
                                                        strict=True))


@pytest.fixture
def table_checkpoint(tmp_path, monkeypatch):
    """A saved TableLearner on 3x3 (trained on one game), loadable through ttt.agents.load_player."""
    monkeypatch.setitem(AGENTS, "table_test", __name__)
    game = make_game("3x3")
    learner = TableLearner(game)
    s = game.initial_state()
    states = [s]
    for a in (4, 0, 2, 1, 6):  # the first player wins on the 2-4-6 diagonal
        s = s.apply(a)
        states.append(s)
    learner.learn_from_game(states)
    path = tmp_path / "table_333" / "checkpoint.npz"
    learner.save(path)
    return path


# ------------------------------------------------------------------ benchmark
def test_json_fields_and_agreement_with_play_match(tmp_path):
    out = tmp_path / "res.json"
    cfg = compose_benchmark("player=benchmark", "game=3x3", "opponents=[random,alphabeta:1]", "games=30",
                            "seed=5", f"output={out}")
    result = bm.benchmark(cfg)
    written = json.loads(out.read_text())
    assert written["game"] == "3x3" and written["agent"] == "benchmark" and written["games"] == 30
    assert [(r["opponent"], r["seat"]) for r in written["results"]] == [
        (o, s) for o in ("random", "alphabeta:1") for s in ("first", "second", "both")]
    game = make_game("3x3")
    for k, (name, opts) in enumerate((("random", {}), ("alphabeta", {"depth": 1}))):
        ref = play_match(game, make_player("benchmark", game), make_player(name, game, **opts), 30, seed=5 + k)
        rows = written["results"][3 * k: 3 * k + 3]
        for row, seat in zip(rows, (ref.first, ref.second, ref.both), strict=True):
            assert FIELDS <= set(row)
            assert (row["games"], row["wins"], row["draws"], row["losses"]) == (
                seat.games, seat.wins, seat.draws, seat.losses)
            assert row["win_rate"] == pytest.approx(seat.wins / seat.games)
            assert row["win_rate_ci"] == pytest.approx(list(seat.win_rate_ci))
            assert row["score"] == pytest.approx((seat.wins + seat.draws / 2) / seat.games)
        assert rows[0]["games"] == rows[1]["games"] == 15 and rows[2]["games"] == 30
    assert result["results"] == written["results"]


def test_same_seed_same_results():
    cfg = compose_benchmark("player=random", "game=4x4", "opponents=[benchmark]", "games=40", "seed=3")
    a, b = bm.benchmark(cfg), bm.benchmark(cfg)
    timed = ("games_per_sec", "agent_ms_per_move", "opponent_ms_per_move")
    strip = [{k: v for k, v in r.items() if k not in timed} for r in a["results"]]
    assert strip == [{k: v for k, v in r.items() if k not in timed} for r in b["results"]]


def test_checkpoint_agent_takes_its_board(table_checkpoint, capsys):
    cfg = compose_benchmark(f"checkpoint={table_checkpoint}", "opponents=[random]", "games=20")
    result = bm.benchmark(cfg)
    assert result["game"] == "3x3" and result["agent"] == "table_333"
    assert "table_333 on 3x3" in capsys.readouterr().out
    game = make_game("3x3")
    from ttt.agents import load_player

    ref = play_match(game, load_player(table_checkpoint), make_player("random", game), 20, seed=0)
    assert result["results"][-1]["wins"] == ref.both.wins and result["results"][-1]["losses"] == ref.both.losses


def test_checkpoint_as_opponent(table_checkpoint):
    cfg = compose_benchmark("player=benchmark", "game=3x3", f"opponents=[{table_checkpoint}]", "games=10")
    assert bm.benchmark(cfg)["results"][0]["opponent"] == "table_333"
    # a run directory stands for the checkpoint in it
    cfg = compose_benchmark("player=benchmark", f"opponents=[{table_checkpoint.parent}]", "games=10")
    result = bm.benchmark(cfg)
    assert result["game"] == "3x3" and result["results"][0]["opponent"] == "table_333"


def test_a_run_folder_with_checkpoints_of_two_runs_is_refused(table_checkpoint, capsys):
    # it took checkpoint.pt silently, whichever run the user meant
    run = table_checkpoint.parent
    assert specs.checkpoint_file(str(run)) == table_checkpoint
    (run / "checkpoint.pt").write_bytes(b"another run's checkpoint")
    line = (f"error: {run} holds both checkpoint.pt and checkpoint.npz, checkpoints of two runs: give the file "
            f"itself ({run}/checkpoint.pt or {run}/checkpoint.npz)\n")
    for overrides in ([f"checkpoint={run}"], ["player=random", "game=3x3", f"opponents=[{run}]"]):
        with pytest.raises(SystemExit) as exit_info:
            run_cli(bm.benchmark, compose_benchmark(*overrides, "games=2"))
        assert exit_info.value.code == 2 and capsys.readouterr().err == line
    result = bm.benchmark(compose_benchmark(f"checkpoint={table_checkpoint}", "opponents=[random]", "games=2"))
    assert result["agent"] == "table_333"


def test_board_mismatch_is_a_checkpoint_error(table_checkpoint):
    with pytest.raises(CheckpointError, match="trained on board '3x3', not '4x4'"):
        bm.benchmark(compose_benchmark(f"checkpoint={table_checkpoint}", "game=4x4", "games=2"))
    with pytest.raises(CheckpointError, match="3x3"):
        bm.benchmark(compose_benchmark("player=random", "game=4x4", f"opponents=[{table_checkpoint}]", "games=2"))


@pytest.mark.parametrize("overrides, message", [
    (["player=random", "opponents=[nosuch]"], "unknown player 'nosuch'"),
    (["player=random", "opponents=[random:3]"], "random takes the options"),
    (["player=random", "opponents=[{name:alphabeta,deep:2}]"], "options are"),
    (["player=random", "checkpoint=x.pt"], "not both"),
    (["player=random", "games=0"], "games must be >= 1"),
    (["checkpoint=/nonexistent/c.pt"], "no such checkpoint file"),
])
def test_expected_errors_are_one_line(overrides, message):
    with pytest.raises((ValueError, CheckpointError), match=message) as info:
        bm.benchmark(compose_benchmark("game=3x3", *overrides))
    assert "\n" not in str(info.value)


def test_missing_shipped_checkpoint_is_clear(monkeypatch, tmp_path):
    monkeypatch.setattr(specs, "SHIPPED_CHECKPOINT", tmp_path / "dqn_444" / "checkpoint.pt")
    with pytest.raises(CheckpointError, match="shipped dqn_444 checkpoint is missing"):
        bm.benchmark(compose_benchmark())


def test_parse_spec():
    assert specs.parse_spec("random") == ("player", "random", {})
    assert specs.parse_spec("alphabeta:2") == ("player", "alphabeta", {"depth": 2})
    assert specs.parse_spec("alphabeta:depth=3") == ("player", "alphabeta", {"depth": 3})
    assert specs.parse_spec({"name": "alphabeta", "depth": 1}) == ("player", "alphabeta", {"depth": 1})
    assert specs.parse_spec("runs/x/checkpoint.pt") == ("checkpoint", "runs/x/checkpoint.pt", {})
    assert specs.parse_spec({"checkpoint": "a.npz"}) == ("checkpoint", "a.npz", {})
    assert specs.spec_label("runs/dqn_444/checkpoint.pt") == "dqn_444"
    assert specs.parse_spec({"checkpoint": "a.pt", "simulations": 9}) == ("checkpoint", "a.pt", {"simulations": 9})
    assert specs.spec_label({"checkpoint": "runs/az/checkpoint.pt", "simulations": 9}) == "az:simulations=9"
    with pytest.raises(ValueError,
                       match=r"takes only the options \(simulations, play_threats, symmetries, rules\), not depth"):
        specs.parse_spec({"checkpoint": "a.pt", "depth": 2})
    assert specs.spec_label({"name": "alphabeta", "depth": 1}) == "alphabeta:depth=1"
    assert specs.spec_label({"name": "mcts", "decisive": False}) == "mcts:decisive=false"  # as a spec string


def test_an_option_given_by_position_and_by_name_is_refused_either_way_round():
    # alphabeta:depth=1:depth=3 played depth 3, where mcts:200:simulations=5 was refused
    for spec, key in (("alphabeta:depth=1:depth=3", "depth"), ("mcts:200:simulations=5", "simulations"),
                      ("mcts:c=1:c=2", "c")):
        with pytest.raises(ValueError, match=f"option '{key}' given twice"):
            specs.parse_spec(spec)


def test_a_value_learners_spec_plays_its_network_alone_with_rules_false(table_checkpoint):
    shipped = "checkpoints/dqn_444"
    _, [(label, alone), (_, ruled), (_, kept)] = specs.load_agents(
        [{"checkpoint": shipped, "rules": False}, shipped, {"checkpoint": shipped, "rules": True}], None)
    assert label == "dqn_444:rules=false"
    assert alone.rules == NO_RULES  # no rule in move selection, and the same network
    mine, theirs = alone.net.state_dict(), ruled.net.state_dict()
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    assert ruled.rules != NO_RULES and ruled.rules.forks and kept.rules == ruled.rules  # true: the checkpoint's own
    with pytest.raises(ValueError, match="rules is an option of a learner with move-selection rules"):
        specs.load_agents([{"checkpoint": str(table_checkpoint), "rules": False}], None)
    with pytest.raises(ValueError, match="rules must be true or false, got 0"):
        specs.load_agents([{"checkpoint": shipped, "rules": 0}], None)


def test_round_robin_fits_sorted_ratings(tmp_path):
    out = tmp_path / "rr.json"
    cfg = compose_benchmark("game=3x3", "round_robin=[random,benchmark,alphabeta:2]", "games=40", f"output={out}")
    bm.benchmark(cfg)
    result = json.loads(out.read_text())
    assert result["anchor"] == "random" and len(result["results"]) == 3
    elos = [r["elo"] for r in result["ratings"]]
    assert elos == sorted(elos, reverse=True)
    by_name = {r["player"]: r for r in result["ratings"]}
    assert by_name["random"]["elo"] == 0.0 and by_name["random"]["elo_se"] == 0.0
    assert by_name["benchmark"]["elo"] > 100 and by_name["alphabeta:2"]["elo"] > 100  # random loses most games
    assert all(r["games"] == 80 for r in result["ratings"])


def test_round_robin_rejects_duplicates():
    with pytest.raises(ValueError, match="twice"):
        bm.benchmark(compose_benchmark("game=3x3", "round_robin=[random,random]", "games=2"))


# ------------------------------------------------------------------ Elo
def test_elo_recovers_ratings_from_exact_scores():
    true = [0.0, 150.0, 400.0, -200.0]
    # each pair: 10,000 games whose wins are exactly the expected score
    pairs = []
    for a in range(4):
        for b in range(a + 1, 4):
            wins = int(round(expected_score(true[a], true[b]) * 10000))
            pairs.append(PairResult(a, b, wins, 0, 10000 - wins))
    ratings = fit_elo(list("abcd"), pairs, anchor="a", prior_draws=0)
    assert [r.elo for r in ratings] == pytest.approx(true, abs=0.5)
    centred = fit_elo(list("abcd"), pairs, anchor=None, prior_draws=0)
    assert sum(r.elo for r in centred) == pytest.approx(0.0, abs=1e-6)
    assert [r.elo - centred[0].elo for r in centred] == pytest.approx(true, abs=0.5)


def test_elo_draws_count_half():
    # 100 draws between two players: equal ratings
    r = fit_elo(["a", "b"], [PairResult(0, 1, 0, 100, 0)], anchor="a", prior_draws=0)
    assert r[1].elo == pytest.approx(0.0, abs=1e-9)
    # 75% score (50 wins, 50 draws, 0 losses of 100): 400*log10(3) = 190.8 Elo
    r = fit_elo(["a", "b"], [PairResult(0, 1, 50, 50, 0)], anchor="b", prior_draws=0)
    assert r[0].elo == pytest.approx(400 * np.log10(3), abs=1e-6)


def test_elo_standard_errors_cover_sampled_results():
    rng = np.random.default_rng(1)
    true = [0.0, 100.0, 300.0]
    pairs = [PairResult(a, b, int(w), 0, 4000 - int(w))
             for a in range(3) for b in range(a + 1, 3)
             for w in [rng.binomial(4000, expected_score(true[a], true[b]))]]
    ratings = fit_elo(["a", "b", "c"], pairs, anchor="a")
    for r, t in zip(ratings[1:], true[1:], strict=True):
        assert 3 < r.se < 20
        assert abs(r.elo - t) < 3 * r.se


def test_elo_perfect_score_is_finite_with_prior_and_errors():
    r = fit_elo(["a", "b"], [PairResult(0, 1, 100, 0, 0)], anchor="b", prior_draws=1.0)
    # the fit sees 100.5 points of 101: 400*log10(100.5/0.5)
    assert r[0].elo == pytest.approx(400 * np.log10(201), abs=1e-6)
    with pytest.raises(ValueError, match="do not all meet"):
        fit_elo(["a", "b", "c", "d"], [PairResult(0, 1, 1, 0, 1), PairResult(2, 3, 1, 0, 1)])


# ------------------------------------------------------------------ the command line
def test_run_cli_turns_expected_errors_into_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_cli(bm.benchmark, compose_benchmark("player=random", "opponents=[nosuch]"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown player 'nosuch'; choose one of ") and err.count("\n") == 1


@pytest.mark.cli
def test_cli_corrupt_checkpoint_is_one_line_without_traceback(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    p = subprocess.run([sys.executable, "-m", "ttt.benchmark", f"checkpoint={bad}"], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert [f.name for f in tmp_path.iterdir()] == ["bad.pt"]  # no Hydra output folder or log file
    assert p.stderr.startswith(f"error: {bad}: cannot read checkpoint") and p.stderr.count("\n") == 1


# ------------------------------------------------------------------ outputs that survive, progress
def test_an_unwritable_output_is_refused_before_any_game(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(bm, "play_match", lambda *a, **k: pytest.fail("a game was played"))
    for output, message in ((blocker / "res.json", "is not writable"), (tmp_path, "is a folder")):
        with pytest.raises(ValueError, match=f"output {output} {message}"):
            bm.benchmark(compose_benchmark("player=random", "game=3x3", "games=2", f"output={output}"))
    assert [p.name for p in tmp_path.iterdir()] == ["a_file"]  # the check leaves no folder behind


class FolderBreaker(Player):
    """Plays the lowest cell; on its first move replaces the folder ``target`` with a file, so that
    writing the results there fails after all the games."""

    name = "breaker"
    target: Path

    def act(self, state, rng):
        if FolderBreaker.target.is_dir():
            FolderBreaker.target.rmdir()
            FolderBreaker.target.write_text("")
        return min(state.legal_actions())


def test_results_that_cannot_be_written_at_the_end_go_to_a_fallback_file(tmp_path, monkeypatch, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    monkeypatch.setattr(FolderBreaker, "target", out_dir, raising=False)
    monkeypatch.setitem(PLAYERS, "breaker", FolderBreaker)
    cfg = compose_benchmark("player=random", "game=3x3", "opponents=[breaker]", "games=4",
                            f"output={out_dir / 'res.json'}")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(bm.benchmark, cfg)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: could not write the results to {out_dir / 'res.json'}") and "\n" not in err
    fallback = Path(err.rsplit("it was written to ", 1)[1])
    try:
        written = json.loads(fallback.read_text())
        assert written["results"][-1]["opponent"] == "breaker" and written["results"][-1]["games"] == 4
    finally:
        fallback.unlink()


def test_long_matches_and_round_robins_report_progress(monkeypatch, capsys):
    monkeypatch.setattr(bm, "PROGRESS_SECONDS", 0.0)  # every ply; the default is every 10 s
    bm.benchmark(compose_benchmark("player=random", "game=3x3", "opponents=[benchmark]", "games=4"))
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("  vs benchmark: ") and "/4 games over" in line for line in err)
    assert err[-1].startswith("  vs benchmark: 4/4 games over")
    bm.benchmark(compose_benchmark("game=3x3", "round_robin=[random,benchmark]", "games=2"))
    assert "  random vs benchmark: 2/2 games over" in capsys.readouterr().err


def test_a_searching_checkpoint_plays_with_the_simulations_its_spec_gives(tmp_path, table_checkpoint):
    from ttt.agents.alphazero import AlphaZeroPlayer, build_policy_value_net

    game = make_game("3x3")
    network = {"kind": "mlp", "hidden": [8]}
    path = tmp_path / "az" / "checkpoint.pt"
    path.parent.mkdir()
    AlphaZeroPlayer(game, build_policy_value_net(game, network), simulations=12, network=network).save(path)
    _, [(label, saved), (label_9, nine)] = specs.load_agents([str(path), {"checkpoint": str(path), "simulations": 9}],
                                                              None)
    assert (label, saved.simulations) == ("az", 12) and (label_9, nine.simulations) == ("az:simulations=9", 9)
    visits = nine.search([game.initial_state()]).N[0, 0].sum()  # the root's children: one visit per simulation
    assert visits == 9
    with pytest.raises(ValueError, match="simulations must be an integer >= 1, got 0"):
        specs.load_agents([{"checkpoint": str(path), "simulations": 0}], None)
    with pytest.raises(ValueError, match="simulations is an option of a searching learner"):
        specs.load_agents([{"checkpoint": str(table_checkpoint), "simulations": 9}], None)


# ------------------------------------------------------------------ stopped midway, refused before any game
def interrupt_match(monkeypatch, call: int) -> None:
    """Ctrl-C during the ``call``-th match (1-based) of the benchmark or round robin."""
    real, calls = bm.play_match, []

    def play(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bm, "play_match", play)


def test_ctrl_c_keeps_the_finished_matches_marked_partial(tmp_path, monkeypatch, capsys):
    out = tmp_path / "res.json"
    interrupt_match(monkeypatch, 2)
    cfg = compose_benchmark("player=benchmark", "game=3x3", "opponents=[random,alphabeta:1,alphabeta:2]",
                            "games=6", f"output={out}")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(bm.benchmark, cfg)
    assert exit_info.value.code == 130
    captured = capsys.readouterr()
    assert captured.err == "interrupted\n"
    table = captured.out.splitlines()
    assert [line.split()[0] for line in table[3:6]] == ["random"] * 3 and "alphabeta:1" not in captured.out
    assert table[6] == "partial: interrupted after 1 of 3 matches; these are the finished ones"
    written = json.loads(out.read_text())
    assert written["partial"] is True and [r["opponent"] for r in written["results"]] == ["random"] * 3
    assert written["results"][-1]["games"] == 6


def test_ctrl_c_in_a_round_robin_keeps_its_finished_matches_without_ratings(tmp_path, monkeypatch, capsys):
    out = tmp_path / "rr.json"
    interrupt_match(monkeypatch, 3)
    cfg = compose_benchmark("game=3x3", "round_robin=[random,benchmark,alphabeta:1]", "games=4", f"output={out}")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(bm.benchmark, cfg)
    assert exit_info.value.code == 130
    out_text = capsys.readouterr().out
    assert "partial: interrupted after 2 of 3 matches; these are the finished ones (no Elo fit)" in out_text
    written = json.loads(out.read_text())
    assert written["partial"] is True and written["ratings"] is None
    assert [(r["player"], r["opponent"]) for r in written["results"]] == [("random", "benchmark"),
                                                                          ("random", "alphabeta:1")]


def test_ctrl_c_in_the_first_match_writes_nothing(tmp_path, monkeypatch):
    out = tmp_path / "res.json"
    out.write_text("earlier")
    interrupt_match(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        bm.benchmark(compose_benchmark("player=random", "game=3x3", "games=2", f"output={out}"))
    assert out.read_text() == "earlier"


def test_a_finished_benchmark_is_not_partial():
    assert bm.benchmark(compose_benchmark("player=random", "game=3x3", "games=2"))["partial"] is False


@pytest.mark.parametrize("prior", ["-1", "nan", "inf"])
def test_elo_priors_are_checked_before_any_game(prior, monkeypatch, capsys):
    monkeypatch.setattr(bm, "play_match", lambda *a, **k: pytest.fail("a game was played"))
    cfg = compose_benchmark("game=3x3", "round_robin=[random,benchmark]", "games=2", f"elo_prior_draws={prior}")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(bm.benchmark, cfg)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (f"error: elo_prior_draws must be a finite number >= 0 (0: the plain "
                                       f"maximum-likelihood fit), got {float(prior)}\n")
    with pytest.raises(ValueError, match="prior_draws must be a finite number >= 0"):
        fit_elo(["a", "b"], [PairResult(0, 1, 1, 0, 1)], prior_draws=float(prior))


def test_more_games_than_the_memory_holds_are_refused_before_any_game(monkeypatch, capsys):
    monkeypatch.setattr(bm, "play_match", lambda *a, **k: pytest.fail("a game was played"))
    for mode in ("player=random", "round_robin=[random,benchmark]"):
        with pytest.raises(SystemExit) as exit_info:
            run_cli(bm.benchmark, compose_benchmark("game=3x3", mode, "games=100000000000000"))
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("error: games=100000000000000: 3x3 games side by side need about ") and \
            err.endswith(" GiB this machine has available; choose fewer games\n") and err.count("\n") == 1


def test_a_network_player_needs_its_afterstates_memory_too(tmp_path, monkeypatch):
    from ttt.agents.dqn.player import DQNPlayer
    from ttt.config import GAME_BYTES_PER_CELL, afterstate_bytes
    from ttt.nets.structured import build_value_net

    game = make_game("3x3")
    network = {"kind": "mlp", "hidden": [64]}
    path = tmp_path / "dqn" / "checkpoint.pt"
    path.parent.mkdir()
    DQNPlayer(game, build_value_net(network, game), network).save(path)
    assert afterstate_bytes(game, network) == 9 * (9 + 64 + 1) * 4  # every cell's afterstate through every unit
    # 1,000 games a seat: 144 KB for the boards; 2.7 MB more with the network's afterstates
    assert 1000 * GAME_BYTES_PER_CELL * 9 < 2**20 < 1000 * afterstate_bytes(game, network)
    monkeypatch.setattr("ttt.config.available_bytes", lambda device="cpu": 2**20)
    assert bm.benchmark(compose_benchmark("player=random", "game=3x3", "games=2000"))["results"][-1]["games"] == 2000
    with pytest.raises(ValueError, match="games=2000: 3x3 games side by side need about 0.0 GiB, more than the 0.0"):
        bm.benchmark(compose_benchmark(f"checkpoint={path}", "games=2000"))


# one interpreter start (~3 s) and two short matches
@pytest.mark.cli
def test_cli_ctrl_c_in_a_round_robin_writes_the_finished_matches_and_exits_130(tmp_path):
    out = tmp_path / "rr.json"
    proc = subprocess.Popen([sys.executable, "-m", "ttt.benchmark", "game=3x3", "games=2", f"output={out}",
                             "round_robin=[random,benchmark,'mcts:simulations=100000000']"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while not any(line.startswith("  random vs benchmark: ") for line in lines):
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        lines.append(line)
    proc.send_signal(signal.SIGINT)  # during random against mcts, which searches for hours
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err
    assert rest.startswith("partial: interrupted after 1 of 3 matches")
    written = json.loads(out.read_text())
    assert written["partial"] is True and len(written["results"]) == 1 and written["results"][0]["games"] == 2
