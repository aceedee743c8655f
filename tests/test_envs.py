"""PettingZoo and Gymnasium environments: the libraries' own API checks on every board, action
masks, rewards, illegal moves, seeding and text rendering."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import api_test  # noqa: E402

from ttt.games import BOARDS, make_game  # noqa: E402
from ttt.interop import envs  # noqa: E402
from ttt.players import make_player  # noqa: E402


# ------------------------------------------------------------------ PettingZoo
@pytest.mark.parametrize("board", list(BOARDS))
def test_aec_env_passes_pettingzoo_api_test(board, capsys):
    with warnings.catch_warnings():
        # PettingZoo's advice for image-like observations: dict observations (as its own classic
        # games), an empty board at the start, 4 dimensions on the 3D boards
        warnings.simplefilter("ignore")
        api_test(envs.aec_env(board), num_cycles=200)
    assert "Passed API test" in capsys.readouterr().out


def play(env, moves: list[int]) -> None:
    for m in moves:
        env.step(m)


def test_aec_observations_masks_and_rewards_on_score_four():
    env = envs.aec_env("4x4x4_gravity")
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.last()
    assert env.agent_selection == "player_1"
    assert obs["observation"].shape == (4, 4, 4, 2) and obs["action_mask"].tolist() == [1] * 16 + [0] * 48
    play(env, [5])
    obs = env.observe("player_2")
    assert obs["observation"][0, 1, 1].tolist() == [0, 1]  # cell 5 is layer 0, row 1, col 1: the opponent's
    assert obs["action_mask"][21] == 1 and obs["action_mask"][5] == 0 and obs["action_mask"][20] == 0
    assert env.observe("player_1")["action_mask"].sum() == 0  # not its turn
    assert env.observe("player_1")["observation"][0, 1, 1].tolist() == [1, 0]
    # O plays 0; X builds the column 5, 21, 37, 53 while O stacks on 0
    play(env, [0, 21, 16, 37, 32, 53])
    assert all(env.terminations.values())
    assert env.rewards == {"player_1": 1, "player_2": -1}
    obs, reward, term, *_ = env.last()
    assert term and reward == -1  # player_2 is selected and sees its loss


def test_aec_illegal_move_ends_the_game_against_its_maker():
    env = envs.aec_env("4x4x4_gravity")
    env.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the wrapper warns about the illegal move
        env.step(20)  # floating: nothing below it
    assert all(env.terminations.values())
    assert env.rewards == {"player_1": -1, "player_2": 0}


def test_aec_draw_and_text_render(capsys):
    env = envs.aec_env("3x3", render_mode="ansi")
    env.reset()
    play(env, [0, 1, 2, 4, 3, 5, 7, 6, 8])  # X O X / X O O / O X X: no line
    assert all(env.terminations.values()) and env.rewards == {"player_1": 0, "player_2": 0}
    board = make_game("3x3").state_from_board([1, -1, 1, 1, -1, -1, -1, 1, 1]).render()
    assert env.render() == board + "\nlast move: 8 (2,2)"  # no line is complete: no winner named
    human = envs.aec_env("3x3", render_mode="human")
    human.reset()
    human.step(4)
    assert " X " in capsys.readouterr().out


# ------------------------------------------------------------------ Gymnasium
@pytest.mark.parametrize("board, opponent", [("4x4x4", "random"), ("3x3", "perfect"), ("4x4x4_gravity", "benchmark"),
                                             ("3x3x3", "alphabeta:1"), ("4x4", "random")])
def test_gym_env_passes_check_env(board, opponent):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no spec, alternative render modes not tested"
        check_env(envs.gym_env(board, opponent=opponent))


def test_gym_env_second_seat_starts_after_the_opponent_and_repeats_with_a_seed():
    env = envs.gym_env("3x3", opponent="random", seat="second")
    obs, info = env.reset(seed=3)
    assert info["seat"] == "second" and (obs == -1).sum() == 1 and (obs == 1).sum() == 0
    assert info["action_mask"].sum() == 8 and info["action_mask"][obs == -1].sum() == 0
    assert env.action_space.sample(mask=info["action_mask"]) in np.flatnonzero(obs == 0)
    again, _ = env.reset(seed=3)
    assert np.array_equal(obs, again)
    seats = {envs.gym_env("3x3", seat="random").reset(seed=s)[1]["seat"] for s in range(10)}
    assert seats == {"first", "second"}


def test_gym_env_reward_is_the_result_at_the_end():
    env = envs.gym_env("3x3", opponent="perfect", seat="first")
    results = []
    for seed in range(20):
        env.reset(seed=seed)
        rewards, done = [], False
        rng = np.random.default_rng(seed)
        while not done:  # random moves from the mask
            _, r, done, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            rewards.append(r)
            assert not trunc
        assert all(r == 0 for r in rewards[:-1]) and rewards[-1] == env.state.winner() * env.piece
        results.append(rewards[-1])
    assert set(results) <= {-1.0, 0.0} and -1.0 in results  # random moves never beat the perfect player


def test_gym_env_illegal_move_ends_the_episode_with_minus_one():
    env = envs.gym_env("3x3", opponent="random")
    env.reset(seed=0)
    env.step(4)
    occupied = int(np.flatnonzero(~env.action_masks())[0])
    _, reward, done, _, info = env.step(occupied)
    assert reward == -1.0 and done and info["illegal_move"]
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


def test_gym_env_a_move_past_every_cell_is_an_illegal_move_however_large():
    # 2**70 is no numpy integer: it was refused as "not a int", where 9 or -1 end the episode as illegal
    for action in (9, -1, 2**70, -(2**70), np.int64(2**62)):
        env = envs.gym_env("3x3", opponent="random")
        env.reset(seed=0)
        _, reward, done, _, info = env.step(action)
        assert reward == -1.0 and done and info["illegal_move"], action
    with pytest.raises(TypeError, match="not a float"):
        envs.cell_action(3.7)


def test_gym_env_takes_a_player_and_refuses_another_boards():
    env = envs.gym_env("4x4", opponent=make_player("alphabeta", make_game("4x4"), depth=1))
    assert env.reset(seed=0)[0].shape == (16,)
    with pytest.raises(ValueError, match="plays 3x3, not 4x4"):
        envs.TTTGymEnv(make_game("4x4"), make_player("random", make_game("3x3")))
    with pytest.raises(ValueError, match="unknown player"):
        envs.gym_env("3x3", opponent="gandalf")
    assert envs.gym_env("3x3", render_mode="ansi").render().startswith("   0 1 2")


# ---------------------------------------------------------------------------- registered ids, observations
def test_every_board_is_registered_and_make_passes_check_env():
    import gymnasium

    from ttt.interop import gym_id

    assert {gym_id(b) for b in BOARDS} <= set(gymnasium.registry)
    env = gymnasium.make("ttt/4x4x4-v0")
    with warnings.catch_warnings():
        # check_env warns that a made (wrapped) env may be checked less thoroughly than its unwrapped self
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version.*")
        check_env(env)
    check_env(env.unwrapped)
    assert env.unwrapped.game.name == "4x4x4" and env.unwrapped.opponent.name == "random"


def test_make_takes_the_opponent_and_seat_as_keywords():
    import gymnasium

    env = gymnasium.make("ttt/4x4x4_gravity-v0", opponent="alphabeta:1", seat="second")
    obs, info = env.reset(seed=0)
    assert env.unwrapped.opponent.name == "alphabeta" and info["seat"] == "second"
    assert (obs == -1).sum() == 1 and (obs == 1).sum() == 0  # the opponent has opened


def test_import_ttt_without_gymnasium_imports_nothing_of_it():
    code = ("import sys; sys.modules['gymnasium'] = None; import ttt, ttt.games; "
            "assert 'gymnasium' not in [m for m in sys.modules if sys.modules[m] is not None]; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_gym_observation_holds_no_negative_zero():
    env = envs.gym_env("3x3", opponent="random", seat="second")
    obs, _ = env.reset(seed=0)  # the second seat: own pieces were once multiplied by -1.0, empty cells too
    assert (obs == 0).sum() == 8 and not np.signbit(obs[obs == 0]).any()


def test_render_modes_ansi_and_rgb_array():
    import gymnasium

    pytest.importorskip("matplotlib")
    image = gymnasium.make("ttt/4x4x4-v0", render_mode="rgb_array").render()
    assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8 and image.shape[1] > image.shape[0]
    aec = envs.aec_env("4x4x4", render_mode="rgb_array")  # the PettingZoo environment draws the same picture
    aec.reset()
    assert aec.render().shape == image.shape
    env = envs.gym_env("3x3", render_mode="ansi")
    env.reset(seed=0)
    env.state = make_game("3x3").state_from_board([1, 1, 1, -1, -1, 0, 0, 0, 0])
    assert env.render().endswith("X wins along 0,0 - 0,1 - 0,2 (cells 0, 1, 2)")


def test_vector_autoreset_example_of_the_docs_runs():
    """The masked-sampling example of docs/interop.md, run as written."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "interop.md").read_text()
    block = text.split("<!-- vector-env example -->", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(block, "docs/interop.md", "exec"), namespace)  # noqa: S102 - the docs' own example
    assert namespace["zero_masks"] > 0  # the autoreset step with an all-zero mask did happen
    assert namespace["games"] > 0
