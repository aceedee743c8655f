"""ttt.evaluation.suites and ttt.tactics: the shipped suites (counts, definitions, verification, regeneration),
measuring."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

import ttt.evaluation.suites as ts
import ttt.tactics as tt
from ttt.games import BatchedGames, make_game
from ttt.games.threats import completing_moves, playable
from ttt.players import BatchPlayer, make_player

ROOT = Path(__file__).resolve().parents[1]
BOARDS = ("4x4x4", "4x4x4_gravity")


def compose_tactics(*overrides: str):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose("tactics", overrides=list(overrides))


def orbit_keys(game, boards: np.ndarray) -> list[tuple[int, int]]:
    """One key per symmetry orbit: the smallest base-3 code, as two 32-cell halves, over all images."""
    images = boards[:, game.symmetries].astype(np.int64) % 3  # (N, G, 64)
    powers = 3 ** np.arange(32, dtype=np.int64)
    hi, lo = images[..., 32:] @ powers, images[..., :32] @ powers
    order = np.lexsort((lo, hi), axis=-1)[:, 0]
    rows = np.arange(len(boards))
    return list(zip(hi[rows, order].tolist(), lo[rows, order].tolist(), strict=True))


class ScriptedPlayer(BatchPlayer):
    """Plays a given move in each position of the batch, in order."""

    def __init__(self, game, moves) -> None:
        super().__init__(game)
        self.moves = np.asarray(moves)

    def act_batch(self, games, rng):
        return self.moves.copy()


# ---------------------------------------------------------------------------------- the shipped suites
@pytest.mark.parametrize("board", BOARDS)
def test_shipped_suites_have_their_sizes_and_definitions(board):
    game = make_game(board)
    suites = ts.load_suites(board)
    assert {s: len(x) for s, x in suites.items()} == ts.SIZES
    assert len(suites["win"]) >= 500 and len(suites["block"]) >= 500 and len(suites["block_fork"]) >= 200
    keys = []
    for s, x in suites.items():
        assert x.boards.dtype == np.int8 and x.solutions.shape == x.boards.shape
        pieces = (x.boards == 1).sum(1) - (x.boards == -1).sum(1)
        assert set(pieces.tolist()) <= {0, 1}  # reachable piece counts; the mover follows from them
        legal = playable(x.boards, game)
        assert not (x.solutions & ~legal).any() and x.solutions.any(1).all()
        mine = completing_moves(x.boards, x.to_play, legal, game).sum(1)
        theirs = completing_moves(x.boards, -x.to_play, legal, game).sum(1)
        n = x.solutions.sum(1)
        if s == "win":
            assert (mine > 0).all() and (n == mine).all()
        elif s == "block":
            assert (mine == 0).all() and (theirs == 1).all() and (n == 1).all()
        else:
            assert (mine == 0).all() and (theirs == 0).all()
        if s == "block_fork":
            assert (2 * n < legal.sum(1)).all()  # a minority of the legal moves solve it
        keys += orbit_keys(game, x.boards)
    assert len(set(keys)) == len(keys)  # no position is a symmetric image of another, across suites


@pytest.mark.parametrize("board", BOARDS)
def test_a_sample_of_the_shipped_positions_reverifies_by_search(board):
    game = make_game(board)
    for s, suite in ts.load_suites(board).items():
        sample = [0] if s == "block_fork" else [0, len(suite) - 1]
        assert ts.verify_suite(game, suite, sample) == [], s


def test_search_disagrees_with_a_wrong_solution():
    game = make_game("4x4x4")
    suite = ts.load_suites("4x4x4")["block"]
    wrong = ts.Suite("block", suite.boards[:1], np.roll(suite.solutions[:1], 1, axis=1), suite.origin[:1])
    assert ts.verify_suite(game, wrong) == [0]


@pytest.mark.slow
@pytest.mark.parametrize("board", BOARDS)
def test_every_shipped_position_reverifies_by_search(board):
    game = make_game(board)
    for suite in ts.load_suites(board).values():
        assert ts.verify_suite(game, suite) == []


@pytest.mark.parametrize("board", BOARDS)
def test_generation_gives_a_prefix_of_the_shipped_suites(board):
    game = make_game(board)
    small = ts.generate_suites(game, sizes={s: 3 for s in ts.SUITES}, verify=False)
    shipped = ts.load_suites(board)
    for s in ts.SUITES:
        assert np.array_equal(small[s].boards, shipped[s].boards[:3]), s
        assert np.array_equal(small[s].solutions, shipped[s].solutions[:3]), s
        assert np.array_equal(small[s].origin, shipped[s].origin[:3]), s


def test_saved_suites_read_back_and_the_bytes_depend_only_on_the_arrays(tmp_path):
    game = make_game("4x4x4_gravity")
    suites = {s: ts.Suite(s, x.boards[:5], x.solutions[:5], x.origin[:5])
              for s, x in ts.load_suites(game.name).items()}
    ts.save_suites(tmp_path / "a.npz", game, suites)
    ts.save_suites(tmp_path / "b.npz", game, suites)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    back = ts.read_suites(tmp_path / "a.npz", game)
    assert all(np.array_equal(back[s].solutions, suites[s].solutions) for s in ts.SUITES)
    with pytest.raises(ValueError, match="expected '4x4x4'"):
        ts.read_suites(tmp_path / "a.npz", make_game("4x4x4"))


@pytest.mark.slow
def test_generate_rewrites_the_shipped_files_bit_for_bit(tmp_path):
    for board in BOARDS:
        tt.tactics(compose_tactics("generate=true", f"game={board}", f"output={tmp_path / board}.npz"))
        assert (tmp_path / f"{board}.npz").read_bytes() == ts.suite_path(board).read_bytes()


# ---------------------------------------------------------------------------------------- measuring
def test_scoring_counts_a_move_as_solved_exactly_when_it_is_a_solution():
    game = make_game("4x4x4")
    suites = ts.load_suites(game.name)
    sol = np.concatenate([suites[s].solutions for s in ts.SUITES])
    right = ScriptedPlayer(game, sol.argmax(1))
    wrong = ScriptedPlayer(game, (~sol & playable(np.concatenate([suites[s].boards for s in ts.SUITES]),
                                                     game)).argmax(1))
    assert all(hit.all() for hit in ts.solved(right, game, suites).values())
    assert not any(hit.any() for hit in ts.solved(wrong, game, suites).values())


@pytest.mark.parametrize("board", BOARDS)
def test_the_benchmark_player_solves_every_win_and_block(board):
    # it takes a win when there is one, else blocks the opponent's one playable win
    result = tt.tactics(compose_tactics("player=benchmark", f"game={board}"))
    assert result["suites"]["win"]["rate"] == 1.0 and result["suites"]["block"]["rate"] == 1.0
    assert result["suites"]["fork"]["rate"] < 0.5


def test_depth_3_search_solves_every_fork():
    game = make_game("4x4x4")
    suite = ts.load_suites(game.name)["fork"]
    player = make_player("alphabeta", game, depth=3)
    moves = [player.act(game.state_from_board(b), np.random.default_rng(0)) for b in suite.boards[:5]]
    assert suite.solutions[np.arange(5), moves].all()


def value_player(game, rules=None):
    from omegaconf import OmegaConf

    from ttt.agents.dqn import DQNPlayer, Rules
    from ttt.nets.structured import build_value_net

    torch.manual_seed(0)
    net = build_value_net(OmegaConf.create({"kind": "structured", "detectors": 4, "hidden": [8], "bias": True}), game)
    return DQNPlayer(game, net, rules=Rules() if rules is None else rules)


def test_rules_false_switches_the_rules_off_on_a_copy():
    game = make_game("4x4x4")
    from ttt.agents.dqn import Rules

    player = value_player(game, Rules(wins=True, losses=True))
    bare = ts.without_rules(player)
    assert ts.rule_flags(bare) == {"wins": False, "losses": False, "forks": False, "threats": 0}
    # the original is unchanged
    assert ts.rule_flags(player) == {"wins": True, "losses": True, "forks": False, "threats": 0}
    assert bare.net is player.net
    with_rules = ts.suite_results(player, game)["win"]["rate"]
    alone = ts.suite_results(bare, game)["win"]["rate"]
    assert with_rules == 1.0 and alone < 0.5  # an untrained network does not find wins by itself
    assert ts.tactics_rates(player, game)["win"] == alone  # the training curves see the network alone


def test_rules_false_on_the_shipped_checkpoint():
    result = tt.tactics(compose_tactics(f"checkpoint={ROOT / 'checkpoints' / 'dqn_444'}", "rules=false"))
    assert result["rules_apply"] is True and result["player"] == "dqn_444"
    assert result["rule_flags"] and not any(result["rule_flags"].values())


def test_tactics_rates_is_empty_on_boards_without_suites():
    assert ts.tactics_rates(make_player("random", make_game("3x3")), make_game("3x3")) == {}


def test_json_output_and_rules_on_a_player_without_rules(tmp_path, capsys):
    out = tmp_path / "t.json"
    result = tt.tactics(compose_tactics("player=random", "rules=false", f"output={out}"))
    assert json.loads(out.read_text()) == result
    assert result["game"] == "4x4x4" and result["rules"] is False and result["rules_apply"] is False
    assert set(result["suites"]) == set(ts.SUITES)
    for s, r in result["suites"].items():
        assert r["positions"] == ts.SIZES[s] and r["rate"] == r["solved"] / r["positions"]
    assert "no effect" in capsys.readouterr().out


def test_a_batch_of_suite_positions_plays_like_the_single_states():
    game = make_game("4x4x4_gravity")
    suites = {s: ts.Suite(s, x.boards[:4], x.solutions[:4], x.origin[:4])
              for s, x in ts.load_suites(game.name).items()}
    player = value_player(game).without_rules()
    hits = ts.solved(player, game, suites)
    for s, x in suites.items():
        games = BatchedGames.from_states([game.state_from_board(b) for b in x.boards])
        moves = player.act_batch(games, np.random.default_rng(0))
        assert (x.solutions[np.arange(4), moves] == hits[s]).all()


@pytest.mark.parametrize("overrides,message", [
    (["game=3x3", "player=random"], "no tactics suites for board '3x3'"),
    (["player=nobody"], "unknown player 'nobody'"),
    (["generate=true", "game=3x3"], "suites are defined for"),
    (["player=random", "threads=0"], r"threads=0: must be in \[1, "),
])
def test_expected_errors_are_one_line(overrides, message):
    with pytest.raises(ValueError, match=message) as err:
        tt.tactics(compose_tactics(*overrides))
    assert "\n" not in str(err.value)


def test_an_unwritable_output_fails_before_any_work(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="not writable|is a file"):
        tt.tactics(compose_tactics("player=random", f"output={tmp_path / 'file' / 'x.json'}"))


@pytest.mark.cli
def test_cli_help_and_a_one_line_error():
    py = [sys.executable, "-m", "ttt.tactics"]
    done = subprocess.run([*py, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "rules=false" in done.stdout
    done = subprocess.run([*py, "game=3x3", "player=random"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "no tactics suites" in done.stderr


# ---------------------------------------------------------------------------------------- training
def test_training_evaluation_logs_tactics_rates_and_spec_opponents(compose_train, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from ttt.harness.training import Run

    for on in (True, False):
        cfg = compose_train(["game=4x4x4", "eval_games=2", "eval_opponents=[random,alphabeta:1]",
                             f"eval_tactics={str(on).lower()}", f"run_dir={tmp_path / str(on)}"])
        run = Run(cfg, cfg.run_dir)
        results = run.evaluate(make_player("benchmark", run.game), 7)
        run.close()
        assert set(results) == {"random", "alphabeta:1"}
        acc = EventAccumulator(str(tmp_path / str(on) / "tb"))
        acc.Reload()
        tags = set(acc.Tags()["scalars"])
        assert "eval/alphabeta:1/score" in tags
        assert ({f"eval/tactics/{s}" for s in ts.SUITES} <= tags) == on
        if on:
            [event] = acc.Scalars("eval/tactics/block")
            assert (event.step, event.value) == (7, 1.0)


def test_qubic_alphazero_is_evaluated_against_alphabeta_1_and_mcts(compose_train):
    cfg = compose_train(["+experiment=alphazero_444"])
    assert {"benchmark", "alphabeta:1", "mcts:200"} <= set(cfg.eval_opponents) and cfg.eval_tactics


def test_html_output_is_a_gallery_of_the_missed_positions_with_the_move_played_and_the_right_ones(tmp_path, capsys):
    from ttt.games.render import render_svg

    out = tmp_path / "missed.html"
    result = tt.tactics(compose_tactics("player=benchmark", f"output={out}", "misses=3"))
    assert f"wrote {out}" in capsys.readouterr().out
    html = out.read_text()
    game = make_game("4x4x4")
    suites = ts.load_suites(game.name)
    moves = ts.suite_moves(make_player("benchmark", game), game, suites, 0)
    figures = dict(re.findall(r'<figure id="([a-z_]+-\d+)">(.*?)<figcaption>', html, re.S))
    for s in ts.SUITES:
        r = result["suites"][s]
        missed = np.flatnonzero(~ts.solved_by(suites[s], moves[s]))
        assert len(missed) == r["positions"] - r["solved"]
        assert f"{s}: {len(missed)} of {r['positions']} missed" in html
        drawn = sorted(int(k.split("-")[1]) for k in figures if k.split("-")[0] == s)
        assert drawn == missed[:3].tolist()  # the first three misses of the suite, in its order
        for i in drawn:  # each picture: the position, the move played framed red, the right moves green
            right = np.flatnonzero(suites[s].solutions[i]).tolist()
            assert moves[s][i] not in right
            assert figures[f"{s}-{i}"] == render_svg(game, suites[s].boards[i], played=int(moves[s][i]),
                                                     right_moves=right)
    # the benchmark player takes every win and block and misses forks: only those suites have pictures
    assert {k.split("-")[0] for k in figures} == {"fork", "block_fork"}
    assert len(figures) == 6 and html.count('class="played-move"') == 6


def test_misses_0_draws_every_missed_position_and_bad_gallery_settings_are_one_line(tmp_path):
    out = tmp_path / "all.html"
    result = tt.tactics(compose_tactics("player=benchmark", "game=4x4x4_gravity", f"output={out}", "misses=0"))
    missed = sum(r["positions"] - r["solved"] for r in result["suites"].values())
    assert missed > 3 and out.read_text().count("<figure") == missed
    for overrides, message in [(["player=random", "misses=-1"], "misses=-1: give 0"),
                               (["generate=true", "game=4x4x4", f"output={tmp_path / 'g.html'}"], "not a gallery")]:
        with pytest.raises(ValueError, match=message) as err:
            tt.tactics(compose_tactics(*overrides))
        assert "\n" not in str(err.value)
