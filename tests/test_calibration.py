"""ttt.calibration: value quality against exact values (3x3 checked by an independent minimax here),
against outcomes (reliability table, expected calibration error), and the opening values."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import ttt.calibration as cal
import ttt.evaluation.value_games as vg
import ttt.evaluation.value_quality as value_quality
from ttt.agents.dqn import DQNPlayer, Rules
from ttt.games import BatchedGames, make_game, random_legal_actions
from ttt.games.threats import completing_moves
from ttt.nets.structured import build_value_net
from ttt.players import Player, make_player

ROOT = Path(__file__).resolve().parents[1]
LINES_3X3 = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def compose_calibration(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose("calibration", overrides=list(overrides))


# ---- an independent 3x3 solver: plain recursion over tuples, no code of the package
def _winner(board: tuple) -> int:
    for a, b, c in LINES_3X3:
        if board[a] != 0 and board[a] == board[b] == board[c]:
            return board[a]
    return 0


@cache
def _minimax(board: tuple, to_play: int) -> int:
    """Outcome under best play from the first player's view."""
    w = _winner(board)
    if w or 0 not in board:
        return w
    children = [_minimax(board[:i] + (to_play,) + board[i + 1:], -to_play) for i in range(9) if board[i] == 0]
    return max(children) if to_play == 1 else min(children)


@cache
def _random_outcome(board: tuple, to_play: int) -> float:
    """Expected outcome from the first player's view when both sides play uniformly at random."""
    w = _winner(board)
    if w or 0 not in board:
        return float(w)
    children = [_random_outcome(board[:i] + (to_play,) + board[i + 1:], -to_play) for i in range(9) if board[i] == 0]
    return float(np.mean(children))


def _live_afterstates() -> dict[tuple, int]:
    """Every reachable non-terminal position with a piece -> its outcome for the player who just moved."""
    out, frontier = {}, {(0,) * 9}
    for ply in range(9):
        to_play = 1 if ply % 2 == 0 else -1
        nxt = set()
        for board in frontier:
            if _winner(board) or 0 not in board:
                continue
            for i in range(9):
                if board[i] == 0:
                    child = board[:i] + (to_play,) + board[i + 1:]
                    nxt.add(child)
                    if not _winner(child) and 0 in child:
                        out[child] = _minimax(child, -to_play) * to_play
        frontier = nxt
    return out


class ConstantPlayer(Player):
    """Values every move at ``value``; plays at random."""

    def __init__(self, game, value: float = 0.0) -> None:
        super().__init__(game)
        self.value = value

    def act_batch(self, games, rng):
        return random_legal_actions(games.legal_mask(), rng)

    def action_values(self, state):
        return {a: self.value for a in state.legal_actions()}


class RandomOutcomePlayer(ConstantPlayer):
    """Plays at random and values each move by the expected outcome of random play after it (times
    ``sign``, plus ``offset``): with sign 1 its values are exactly the outcome rates its own games produce."""

    def __init__(self, game, sign: float = 1.0, offset: float = 0.0) -> None:
        super().__init__(game)
        self.sign, self.offset = sign, offset

    def action_values(self, state):
        p = state.to_play()
        return {a: self.offset + self.sign * p * _random_outcome(state.apply(a).board, -p)
                for a in state.legal_actions()}


# ---- against exact values
def test_the_non_terminal_afterstates_of_3x3_are_those_of_an_independent_enumeration():
    game = make_game("3x3")
    reference = _live_afterstates()
    assert len(reference) == 4519
    boards, sampled = value_quality.exact_afterstates(game, 20000, np.random.default_rng(0))
    assert not sampled
    assert {tuple(int(x) for x in b) for b in boards} == set(reference)
    assert value_quality.afterstate_classes(game)[1].sum() == 4519
    exact = value_quality.exact_outcomes(game, boards)
    assert [reference[tuple(int(x) for x in b)] for b in boards] == exact.tolist()


def test_the_perfect_player_scores_sign_agreement_1_and_mae_0():
    game = make_game("3x3")
    result = cal.measure(make_player("perfect", game), game, games=20, rollouts=2)
    ex = result["exact"]
    assert ex["positions"] == 4519 and not ex["sampled"]
    assert ex["sign_agreement"] == 1.0 and ex["mae"] == 0.0 and ex["spearman"] == pytest.approx(1.0)
    counts = {name: sum(v == c for v in _live_afterstates().values()) for name, c in value_quality.CLASSES.items()}
    assert {name: c["positions"] for name, c in ex["classes"].items()} == counts


def test_own_games_are_the_non_terminal_afterstates_of_the_players_games():
    game = make_game("3x3")
    reference = _live_afterstates()
    player = make_player("random", game)
    boards = vg.own_afterstates(player, game, 50, 0.0, np.random.default_rng(3))
    again = vg.own_afterstates(player, game, 50, 0.0, np.random.default_rng(3))
    assert np.array_equal(boards, again)
    # a game of L plies has L - 1 non-terminal afterstates, each one of the 4,519
    assert all(tuple(int(x) for x in b) in reference for b in boards)
    assert 50 * 4 <= len(boards) <= 50 * 8
    pieces = (boards != 0).sum(1)
    assert pieces.min() == 1 and np.bincount(pieces)[1] == 50  # one opening per game


def test_own_games_measures_against_the_exact_values():
    game = make_game("3x3")
    reference = _live_afterstates()
    perfect = cal.measure(make_player("perfect", game), game, games=20, rollouts=1)["exact"]["own_games"]
    assert perfect["sign_agreement"] == 1.0 and perfect["mae"] == 0.0 and perfect["games"] == 20
    zero = ConstantPlayer(game, 0.0)
    own = cal.measure(zero, game, games=30, rollouts=1, seed=5)["exact"]["own_games"]
    rng = np.random.default_rng(5)
    vg.outcome_samples(zero, game, 30, 1, 0.1, rng)  # the draws measure() makes before its own games
    boards = vg.own_afterstates(zero, game, 30, 0.1, rng)
    draws = sum(reference[tuple(int(x) for x in b)] == 0 for b in boards)
    assert own["positions"] == len(boards) and own["sign_agreement"] == pytest.approx(draws / len(boards))


def test_a_constant_0_player_gets_exactly_the_draws_right():
    game = make_game("3x3")
    reference = _live_afterstates()
    draws = sum(v == 0 for v in reference.values())
    ex = cal.measure(ConstantPlayer(game, 0.0), game, games=10, rollouts=1)["exact"]
    assert ex["sign_agreement"] == pytest.approx(draws / len(reference))
    assert ex["classes"]["draw"]["agreement"] == 1.0
    assert ex["classes"]["win"]["agreement"] == ex["classes"]["loss"]["agreement"] == 0.0
    assert ex["mae"] == pytest.approx((len(reference) - draws) / len(reference))
    assert ex["spearman"] is None  # a constant has no ranks


def test_sign_classes_use_the_one_third_thresholds():
    classes = value_quality.sign_class(np.array([-1, -0.34, -1 / 3, 0, 1 / 3, 0.34, 1]))
    assert classes.tolist() == [-1, -1, 0, 0, 0, 1, 1]


def test_spearman_with_ties_matches_a_hand_computation():
    # ranks of a: 0, 1.5, 1.5, 3; of b: 0, 1, 2, 3 -> centred (-1.5, 0, 0, 1.5) and (-1.5, -.5, .5, 1.5)
    assert value_quality.spearman([1, 2, 2, 5], [0, 1, 2, 3]) == pytest.approx(4.5 / np.sqrt(4.5 * 5))
    assert value_quality.spearman([3, 2, 1], [1, 2, 3]) == pytest.approx(-1.0)


def test_4x4_afterstates_are_sampled_reachable_and_live():
    game = make_game("4x4")
    boards, sampled = value_quality.exact_afterstates(game, 500, np.random.default_rng(1))
    assert sampled and boards.shape == (500, 16)
    assert value_quality._is_live_afterstate(boards, game).all()
    counts = (boards == 1).sum(1) - (boards == -1).sum(1)
    assert set(counts.tolist()) <= {0, 1}
    value_quality.exact_outcomes(game, boards)  # raises if a board is not reachable
    assert len({tuple(b) for b in boards.tolist()}) > 450  # millions to draw from: few repeats


# ---- valuing afterstates
def _dqn_player(board: str, seed: int = 0, rules: Rules = Rules()) -> DQNPlayer:
    torch.manual_seed(seed)
    network = {"kind": "structured", "detectors": 4, "hidden": [8], "bias": True}
    game = make_game(board)
    return DQNPlayer(game, build_value_net(OmegaConf.create(network), game), network, rules)


@pytest.mark.parametrize("board", ["3x3", "4x4x4_gravity"])
def test_afterstate_values_are_the_network_on_the_board_seen_by_the_mover(board):
    player = _dqn_player(board, rules=Rules(wins=False))
    game = player.game
    rng = np.random.default_rng(0)
    games = BatchedGames(game, 64)
    boards = []
    for _ in range(5):  # afterstates after 5 random plies (a few games may have ended: skipped)
        games.play(vg.EpsilonGreedy(player, 1.0).act_batch(games, rng))
    boards = games.board[~games.done]
    values = value_quality.values_of_afterstates(player, game, boards)
    mover = value_quality.movers(boards)
    with torch.no_grad():
        direct = player.net(torch.as_tensor(boards * mover[:, None], dtype=torch.float32)).double().numpy()
    np.testing.assert_allclose(values, direct, atol=1e-5)


def test_rules_replace_the_values_of_losing_afterstates():
    game = make_game("3x3")
    alone = _dqn_player("3x3", rules=Rules(wins=False))
    ruled = _dqn_player("3x3", rules=Rules(wins=True, losses=True))
    boards, _ = value_quality.exact_afterstates(game, 20000, np.random.default_rng(0))
    a = value_quality.values_of_afterstates(alone, game, boards)
    r = value_quality.values_of_afterstates(ruled, game, boards)
    # the opponent to move completes a line: the rule says -1, the untrained network something else
    sums = (boards * -value_quality.movers(boards)[:, None]) @ make_game("3x3").incidence.astype(np.int64)
    threatened = (sums == 2).any(1)
    assert threatened.sum() > 100
    assert (r[threatened] == -1).all()
    # the network alone: one forward pass of the afterstates; with rules, a pass over every move (float32 rounding)
    np.testing.assert_allclose(a[~threatened], r[~threatened], atol=1e-6)
    assert (a[threatened] != -1).all()


def test_a_player_without_values_is_refused():
    game = make_game("3x3")
    with pytest.raises(ValueError, match="gives no values"):
        cal.measure(make_player("random", game), game, games=2, rollouts=1)


# ---- against outcomes
def test_the_reliability_table_and_ece_by_hand():
    # bins of 4 over [-1, 1]: [-1, -.5) [-.5, 0) [0, .5) [.5, 1], a left edge in its bin, 1 in the last
    table, ece = vg.reliability(np.array([-0.5, 0.25, 0.5, 1.0]), np.array([-1.0, 0.0, 1.0, 0.0]), bins=4)
    assert [b["positions"] for b in table] == [0, 1, 1, 2]
    assert table[0]["mean_value"] is None
    assert table[1]["mean_value"] == -0.5 and table[1]["mean_outcome"] == -1.0
    assert table[3]["mean_value"] == 0.75 and table[3]["mean_outcome"] == 0.5
    assert ece == pytest.approx(1 / 4 * 0.5 + 1 / 4 * 0.25 + 2 / 4 * 0.25)
    _, ece = vg.reliability(np.array([0.1, 0.1, 0.9, 0.9]), np.array([0.5, -0.3, 1.0, 0.8]), bins=10)
    assert ece == pytest.approx(0.0)  # each bin's mean value is its mean outcome


def test_values_equal_to_the_outcome_rates_give_an_ece_near_0_and_their_negation_does_not():
    game = make_game("3x3")
    honest = cal.measure(RandomOutcomePlayer(game), game, games=400, rollouts=64, seed=1)
    liar = cal.measure(RandomOutcomePlayer(game, sign=-1.0), game, games=400, rollouts=64, seed=1)
    assert honest["ece"] < 0.05
    assert liar["ece"] > 0.4
    assert honest["ece"] == honest["outcomes"]["ece"]
    # the correlation tells them apart by sign; it is the same measure however the values are scaled
    assert honest["outcomes"]["pearson"] > 0.8 and liar["outcomes"]["pearson"] == pytest.approx(
        -honest["outcomes"]["pearson"])


def test_a_constant_value_is_calibrated_and_has_no_correlation():
    # 3x3 random play: the first player's afterstates are worth more than the second's, but a constant
    # equal to the mean outcome is calibrated all the same; the correlation is what it lacks
    game = make_game("3x3")
    honest = cal.measure(RandomOutcomePlayer(game), game, games=400, rollouts=64, seed=1)
    mean = honest["outcomes"]["mean_outcome"]
    flat = cal.measure(RandomOutcomePlayer(game, sign=0.0, offset=mean), game, games=400, rollouts=64, seed=1)
    assert flat["outcomes"]["mean_outcome"] == mean and flat["ece"] == pytest.approx(0.0, abs=1e-12)
    assert flat["outcomes"]["pearson"] is None and flat["outcomes"]["value_sd"] == 0.0
    assert flat["outcomes"]["outcome_sd"] == honest["outcomes"]["outcome_sd"] > 0.3


def test_pearson_by_hand():
    assert value_quality.pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(
        np.cov([1, 2, 3], [2, 4, 7])[0, 1] / np.sqrt(np.var([1, 2, 3], ddof=1) * np.var([2, 4, 7], ddof=1)))
    assert value_quality.pearson([1, 2, 3], [5, 5, 5]) is None


def test_the_perfect_player_without_exploration_is_calibrated_exactly():
    game = make_game("3x3")
    result = cal.measure(make_player("perfect", game), game, games=50, rollouts=2, epsilon=0.0)
    assert result["ece"] == 0.0
    assert result["outcomes"]["mean_outcome"] == 0.0  # best play from best play's positions: draws


# ---- opening values
def test_opening_values_are_grouped_by_the_orbits_of_the_cells():
    game = make_game("3x3")
    op = value_quality.opening_values(make_player("perfect", game), game)
    assert [(c["name"], c["cells"]) for c in op["classes"]] == [("corner", [0, 2, 6, 8]), ("edge", [1, 3, 5, 7]),
                                                                 ("centre", [4])]
    assert all(c["exact"] == 0 and c["values"] == [0.0] * len(c["cells"]) for c in op["classes"])
    assert op["median"] == 0.0
    gravity = value_quality.opening_values(_dqn_player("4x4x4_gravity"), make_game("4x4x4_gravity"))
    assert sum(len(c["cells"]) for c in gravity["classes"]) == 16  # gravity: only the bottom layer can be played first
    qubic = make_game("4x4x4")  # Qubic's 192 symmetries join the 8 corners and the 8 centre cells
    assert [len(o) for o in value_quality.cell_orbits(qubic)] == [16, 48]
    assert [c["name"] for c in value_quality.opening_values(_dqn_player("4x4x4"), qubic)["classes"]] == [
        "corner / centre", "edge / face centre"]


# ---- the entry point
def test_json_output_has_the_keys(tmp_path):
    out = tmp_path / "cal.json"
    result = cal.calibration(compose_calibration("player=perfect", "game=3x3", "games=20", "rollouts=2",
                                                 f"output={out}"))
    saved = json.loads(out.read_text())
    assert saved["ece"] == result["ece"]
    assert set(saved["exact"]) >= {"sign_agreement", "mae", "spearman", "positions", "sampled", "classes"}
    assert saved["thresholds"] == {"win": 1 / 3, "loss": -1 / 3}
    assert {"positions", "rollouts", "epsilon", "bins", "ece", "pearson", "value_sd", "outcome_sd"} <= set(
        saved["outcomes"])
    assert {"median", "classes"} <= set(saved["openings"])
    assert saved["rules_apply"] is False
    assert {"opponent", "auc", "auc_95", "pearson", "by_phase"} <= set(saved["discrimination"])
    assert set(saved["discrimination"]["by_phase"]) == {"1-10", "11-20", "21+", "11+"}
    assert {"forced_loss", "double_threat", "completed_line"} <= set(saved["one_move"])


def test_the_opponent_of_the_won_or_lost_measure_is_named_by_its_spec():
    result = cal.calibration(compose_calibration("player=perfect", "game=3x3", "games=20", "rollouts=1",
                                                 "opponent=random", "one_move=20", "epsilon=0"))
    assert result["discrimination"]["opponent"] == "random" and result["discrimination"]["games"] == 20
    assert result["discrimination"]["lost"] == 0  # perfect play, not exploring, never loses


def test_boards_without_exact_values_measure_outcomes_only():
    game = make_game("3x3x3")
    result = cal.measure(_dqn_player("3x3x3"), game, games=20, rollouts=2)
    assert result["exact"] is None
    assert sum(b["positions"] for b in result["outcomes"]["bins"]) == 20


def test_the_reliability_figure_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    fig = tmp_path / "rel.png"
    cal.calibration(compose_calibration("player=perfect", "game=3x3", "games=20", "rollouts=2", f"figure={fig}"))
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("overrides, message", [
    (["player=random", "game=3x3"], "gives no values"),
    (["player=perfect", "game=3x3", "games=0"], "games must be >= 1"),
    (["player=perfect", "game=3x3", "epsilon=2"], "epsilon must be in"),
    (["player=perfect", "game=4x4x4"], "perfect play is available"),
])
def test_expected_errors_are_one_line(overrides, message):
    with pytest.raises(ValueError, match=message):
        cal.calibration(compose_calibration(*overrides))


def test_cli_help_and_a_one_line_error():
    py = [sys.executable, "-m", "ttt.calibration"]
    done = subprocess.run([*py, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "sign classes" in done.stdout.lower()
    done = subprocess.run([*py, "game=3x3", "player=random"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "gives no values" in done.stderr


def test_the_shipped_dqn_444_values_its_openings_above_minus_a_half():
    # the checkpoint shipped before valued every opening near -1 (median -0.996) on a board the first player wins
    result = cal.calibration(compose_calibration("games=20", "rollouts=1"))
    assert result["player"] == "dqn_444" and result["openings"]["median"] > -0.5


@pytest.mark.slow
def test_the_shipped_dqn_444_is_calibrated_on_its_own_games():
    # the default measure (500 positions of its own games, 16 continuations each); the checkpoint before: 0.695
    result = cal.calibration(compose_calibration())
    assert result["ece"] <= 0.15 and abs(result["outcomes"]["mean_value"] - result["outcomes"]["mean_outcome"]) < 0.1


# ---- telling won from lost, and the one-move afterstates
def test_roc_auc_by_hand_with_ties_and_a_missing_class():
    # pairs (won, lost): 0.35 > 0.1, 0.35 < 0.4, 0.8 > 0.1, 0.8 > 0.4: 3 of 4
    assert value_quality.roc_auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(0.75)
    assert value_quality.roc_auc([0.5, 0.5, 0.5], [True, False, False]) == pytest.approx(0.5)  # ties half
    assert value_quality.roc_auc([0.2, 0.9], [True, False]) == pytest.approx(0.0)
    assert value_quality.roc_auc([0.2, 0.9], [True, True]) is None


def test_discrimination_by_phase_leaves_draws_out_of_the_auc():
    values = np.array([0.9, -0.5, 0.0, 0.1, 0.7, -0.2])
    outcomes = np.array([1, -1, 0, -1, 1, -1])
    plies = np.array([1, 3, 12, 12, 25, 30])
    d = value_quality.discrimination(values, outcomes, plies)
    assert (d["positions"], d["won"], d["lost"]) == (6, 2, 3)
    assert d["auc"] == pytest.approx(1.0) and d["pearson"] == pytest.approx(value_quality.pearson(values, outcomes))
    phases = d["by_phase"]
    assert [phases[p]["positions"] for p in ("1-10", "11-20", "21+", "11+")] == [2, 2, 2, 4]
    assert phases["11-20"]["auc"] is None  # one lost, one drawn: no won position
    assert phases["21+"]["auc"] == pytest.approx(1.0)
    assert phases["11+"]["auc"] == pytest.approx(1.0)  # 0.7 won above 0.1 and -0.2 lost; the draw left out


def test_a_constant_value_tells_won_from_lost_no_better_than_chance():
    game = make_game("3x3")
    d = cal.measure(ConstantPlayer(game, 0.2), game, games=100, rollouts=1, one_move=50)["discrimination"]
    assert d["won"] > 0 and d["lost"] > 0
    assert d["auc"] == pytest.approx(0.5) and d["pearson"] is None


def test_the_perfect_player_values_every_one_move_afterstate_exactly_and_tells_won_from_lost():
    game = make_game("3x3")
    result = cal.measure(make_player("perfect", game), game, games=200, rollouts=1, epsilon=0.2, one_move=100)
    for name, exact in value_quality.ONE_MOVE.items():
        c = result["one_move"][name]
        assert c["afterstates"] == 100 and c["mean"] == c["q25"] == c["q75"] == exact
    d = result["discrimination"]
    assert d["opponent"] == "self" and d["positions"] > 400 and d["won"] > 0 and d["lost"] > 0
    assert d["auc"] > 0.65  # exact values (0.76 at this seed); exploring moves after them decide many games


@pytest.mark.parametrize("board", ["3x3", "4x4x4_gravity"])
def test_the_one_move_classes_are_what_playing_them_shows(board):
    """Each drawn move of each class, played out: a forced loss lets the opponent complete a line at
    once; a double threat leaves it no such move and the mover two; a completed line wins."""
    game = make_game(board)
    pool, picks = value_quality.one_move_afterstates(game, 60, np.random.default_rng(2))
    for name, (rows, cells) in picks.items():
        assert len(rows) > 0, name
        after = BatchedGames(game, len(rows))
        for field in ("board", "to_play", "num_moves"):
            getattr(after, field)[:] = getattr(pool, field)[rows]
        mover = after.to_play.copy()
        ended = after.play(cells)
        if name == "completed_line":
            assert ended.all() and (after.winner == mover).all()
            continue
        assert not ended.any()
        legal = after.legal_mask()
        opponent_wins = completing_moves(after.board, after.to_play, legal, game).any(1)
        if name == "forced_loss":
            assert opponent_wins.all()
        else:  # the mover's playable winning cells, were it to move again
            assert not opponent_wins.any() and (completing_moves(after.board, mover, legal, game).sum(1) >= 2).all()


def test_games_against_an_opponent_alternate_seats_and_give_the_movers_outcome():
    game = make_game("3x3")
    boards, plies, outcomes, ids = vg.opponent_games(make_player("perfect", game), make_player("random", game),
                                                      game, 60, 0.0, np.random.default_rng(0))
    movers = value_quality.movers(boards)
    assert set(movers.tolist()) == {1, -1}  # first in half the games, second in the others
    assert (outcomes >= 0).all()  # perfect play never loses
    assert set(plies[movers == 1].tolist()) <= {1, 3, 5, 7} and set(plies[movers == -1].tolist()) <= {2, 4, 6, 8}
    assert set(ids.tolist()) <= set(range(60)) and (movers == np.where(ids % 2 == 0, 1, -1)).all()  # its game
    for g in np.unique(ids):  # a game's afterstates in the order played: one more piece of the mover each time
        assert (np.diff(plies[ids == g]) == 2).all() and len(set(outcomes[ids == g].tolist())) == 1


def test_the_auc_interval_draws_whole_games():
    rng = np.random.default_rng(3)
    won = np.arange(40) % 2 == 0
    values = rng.normal(size=40) + 0.8 * won  # separable in part: an AUC near 0.7
    one = value_quality.auc_interval(values, won, np.arange(40))
    assert one[0] < value_quality.roc_auc(values, won) < one[1]
    assert value_quality.auc_interval(values, won, np.arange(40)) == one  # its own fixed generator
    # each position ten times within its game: the same AUC and, drawing whole games, the same interval;
    # the copies counted as 400 games of their own: a narrower one (what ignoring the games would claim)
    copies = np.repeat(values, 10), np.repeat(won, 10)
    assert value_quality.auc_interval(*copies, np.repeat(np.arange(40), 10)) == pytest.approx(one)
    narrow = value_quality.auc_interval(*copies, np.arange(400))
    assert narrow[1] - narrow[0] < 0.5 * (one[1] - one[0])
    assert value_quality.auc_interval(won.astype(float), won, np.arange(40)) == [1.0, 1.0]
    assert value_quality.auc_interval(np.zeros(40), won, np.arange(40)) == [0.5, 0.5]  # a constant
    assert value_quality.auc_interval(values[won], won[won], np.arange(20)) is None  # no lost position
    d = value_quality.discrimination(values, np.where(won, 1, -1), np.full(40, 12), np.arange(40))
    assert d["auc_95"] == one and d["by_phase"]["11+"]["auc_95"] == one and d["by_phase"]["1-10"]["auc_95"] is None
    assert "auc_95" not in value_quality.discrimination(values, np.where(won, 1, -1), np.full(40, 12))


def test_continuations_start_with_the_opponent_of_the_player_who_moved():
    # X (just moved: 3 pieces to O's 2) threatens cell 2, O threatens cell 5 and is to move: perfect O wins
    # at once, so every continuation is lost for X; with X to move it would win instead
    game = make_game("3x3")
    board = np.zeros((1, 9), np.int8)
    board[0, [0, 1, 8]], board[0, [3, 4]] = 1, -1
    perfect = make_player("perfect", game)
    for opponent in (perfect, None):  # against a named opponent, and the player's own self-play
        out = vg.continuations(perfect, opponent, game, board, 4, 0.0, np.random.default_rng(0))
        assert out.shape == (1, 4) and (out == -1).all()


def test_the_auc_ceiling_lies_above_exact_values_that_cannot_see_the_exploration():
    # exact values ignore the exploring moves that decide games after them (their auc 0.75 at this seed);
    # each afterstate's share of wins in its own continuations orders won above lost better (0.81), not perfectly
    game = make_game("3x3")
    d = cal.measure(make_player("perfect", game), game, games=100, rollouts=1, epsilon=0.2, one_move=20,
                    ceiling=16)["discrimination"]
    c = d["ceiling"]
    assert c["rollouts"] == 16 and set(c["by_phase"]) == {"1-10", "11-20", "21+", "11+"}
    assert d["auc"] + 0.02 < c["auc"] < 0.95
    assert c["by_phase"]["1-10"] == c["auc"] and c["by_phase"]["11+"] is None  # 3x3 ends by ply 9


def test_the_ceiling_is_left_out_by_default_and_refuses_a_negative_count():
    result = cal.calibration(compose_calibration("player=perfect", "game=3x3", "games=20", "rollouts=1",
                                                 "one_move=20"))
    assert "ceiling" not in result["discrimination"]
    with pytest.raises(ValueError, match="ceiling must be >= 0"):
        cal.calibration(compose_calibration("player=perfect", "game=3x3", "ceiling=-1"))
