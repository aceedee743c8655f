"""ttt.play driven through stdin: full games (win, loss, draw), bad input, undo, hint, gravity, learn."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from test_benchmark import table_checkpoint  # noqa: F401  (a saved learner fixture)

import ttt.play as tp
from ttt.agents import load_player
from ttt.checkpoint import CheckpointError
from ttt.cli import OutputError
from ttt.games import make_game
from ttt.players import PLAYERS, Player
from ttt.players.human import MoveError, parse_move

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")


def compose_play(*overrides: str):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose("play", overrides=list(overrides))


class LowestCellPlayer(Player):
    """Always the lowest legal cell: a predictable opponent for scripted games."""

    name = "lowest"

    def act(self, state, rng):
        return min(state.legal_actions())

    def action_values(self, state):
        return {a: -a / 10 for a in state.legal_actions()}


@pytest.fixture(autouse=True)
def lowest_player(monkeypatch):
    monkeypatch.setitem(PLAYERS, "lowest", LowestCellPlayer)


def run(lines: str, *overrides: str) -> tuple[dict, str]:
    out = io.StringIO()
    tally = tp.play(compose_play(*overrides), io.StringIO(lines), out)
    return tally, out.getvalue()


def test_a_win_for_the_human():
    # X: 4, 2, 6 (the 2-4-6 diagonal) while the opponent takes 0 and 1
    tally, text = run("4\n2\n6\nn\n", "player=lowest", "game=3x3", "seat=first")
    assert tally == dict(games=1, wins=1, draws=0, losses=0, saved=None)
    assert "You win!" in text and "lowest plays 0 (0,0)." in text and "lowest plays 1 (0,1)." in text
    assert " 0 O O X" in text and " 2 X 7 8" in text  # the board is redrawn after the moves


def test_a_loss_and_a_draw_in_one_session():
    # game 1: X 8, 7, 5 lets O complete 0-1-2; game 2: X 1, 3, 4, 6, 8 against O 0, 2, 5, 7 is a draw
    tally, text = run("8\n7\n5\ny\n1\n3\n4\n6\n8\nn\n", "player=lowest", "game=3x3", "seat=first")
    assert tally == dict(games=2, wins=0, draws=1, losses=1, saved=None)
    assert "lowest wins." in text and "Draw." in text
    assert text.count("Play again? [y/n]") == 2


def test_bad_inputs_get_a_reason_and_a_new_prompt():
    bad = ["hello", "9", "-1", "1,5", "1,1,1", "", "4"]
    tally, text = run("4\n" + "\n".join(bad) + "\nquit\n", "player=lowest", "game=3x3", "seat=first")
    assert tally["games"] == 0
    assert "'hello' is not a move: type a cell number (0-8) or row,col" in text
    assert "9 is not legal: out of range 0..8" in text
    assert "-1 is not legal: out of range 0..8" in text
    assert "coordinate 5 is out of range 0..2" in text
    assert "'1,1,1': give a cell number (0-8) or row,col" in text
    assert "4 is not legal: cell 1,1 is occupied" in text
    assert text.count("Your move (X): ") == 1 + len(bad) + 1


def test_coordinates_and_cell_numbers_mean_the_same_cell():
    state = make_game("3x3").initial_state()
    assert parse_move(state, "1,2") == parse_move(state, "5") == parse_move(state, "(1, 2)") == 5
    state3 = make_game("3x3x3").initial_state()
    assert parse_move(state3, "2,1,0") == 2 * 9 + 1 * 3 + 0


def test_undo_takes_back_a_pair_of_moves():
    # human second: O's first move (0) stays; undo takes back the human's 4 and the reply 1
    tally, text = run("4\nundo\nundo\n8\nquit\n", "player=lowest", "game=3x3", "seat=second")
    assert "took back your last move and lowest's reply." in text
    assert "nothing to undo" in text
    after_undo = text.split("took back your last move")[1].split("Your move")[0]
    assert " 0 X 1 2" in after_undo and " 1 3 4 5" in after_undo  # only the agent's opening move is left
    assert "You play 8 (2,2)." in text and tally["games"] == 0


def test_hint_shows_the_agents_values():
    _, text = run("hint\nquit\n", "player=lowest", "game=3x3", "seat=first")
    assert "hint, lowest's value of each move for you (higher is better): 0 (0,0) +0.00, 1 (0,1) -0.10" in text
    _, text = run("hint\nquit\n", "player=random", "game=3x3", "seat=first")
    assert "hint: random has no move values" in text


def test_gravity_cells_must_be_reachable():
    lines = "16\n0,0,0\n0,0\n0,0\n0,0,0\n1,0,0\nquit\n"
    _, text = run(lines, "player=lowest", "game=4x4x4_gravity", "seat=first")
    assert "16 is not legal: cell 1,0,0 is not reachable yet (cell 0,0,0 below it is empty)" in text
    assert text.count("You play 0 (0,0,0).") == 1  # '0,0,0' is cell 0; the column '0,0' then drops onto it
    assert "You play 16 (1,0,0)." in text  # the second '0,0' lands on layer 1
    assert "0 is not legal: cell 0,0,0 is occupied" in text
    assert "layer 0" in text and "layer 3" in text  # 3D boards are drawn as layers side by side
    game = make_game("4x4x4_gravity")
    board = [0] * 64
    board[0], board[16], board[32], board[48], board[1], board[17] = 1, -1, 1, -1, -1, 1
    with pytest.raises(MoveError, match="column 0,0 is full"):
        parse_move(game.state_from_board(board), "0,0")
    assert parse_move(game.state_from_board(board), "0,1") == 33


def test_seat_prompt_and_end_of_input():
    tally, text = run("3\n2\n", "player=lowest", "game=3x3")
    assert "'3': answer 1 (first, X) or 2 (second, O)" in text
    assert "You are O, lowest is X." in text and tally["games"] == 0  # input ended mid-game: no crash


def test_learn_saves_the_learned_agent(table_checkpoint, tmp_path):  # noqa: F811 (the imported fixture)
    before = load_player(table_checkpoint)
    # the human (O) plays 0 and 1 and loses to the agent's 4-2-6 diagonal again
    tally, text = run("0\n1\nn\n", f"checkpoint={table_checkpoint}", "seat=second", "learn=true")
    assert tally["games"] == 1 and "table_333 learned from this game." in text
    saved = Path(tally["saved"])
    assert saved == table_checkpoint.with_name("checkpoint_play.npz") and saved.is_file()
    assert f"saved the agent (1 games learned) to {saved}" in text
    after = load_player(saved)
    assert "table_333 wins." in text
    assert sorted(after.values.values()) == [-0.75, -0.75, 0.75, 0.75, 0.75]  # 0.5 moved halfway to +-1
    assert sorted(before.values.values()) == [-0.5, -0.5, 0.5, 0.5, 0.5]
    # save=PATH chooses the file; a player without a checkpoint needs it
    tally, _ = run("0\n1\nn\n", f"checkpoint={table_checkpoint}", "seat=second", "learn=true",
                   f"save={tmp_path / 'mine.npz'}")
    assert tally["saved"] == str(tmp_path / "mine.npz")


def test_learn_with_a_run_folder_saves_beside_its_checkpoint(table_checkpoint):  # noqa: F811
    # checkpoint=RUN_DIR learn=true was refused: the default save path was RUN_DIR_play, no checkpoint file
    run_dir = table_checkpoint.parent
    tally, text = run("0\n1\nn\n", f"checkpoint={run_dir}", "seat=second", "learn=true")
    saved = Path(tally["saved"])
    assert saved == run_dir / "checkpoint_play.npz" and saved.is_file()
    assert load_player(saved).values != load_player(table_checkpoint).values


def test_a_run_folder_with_checkpoints_of_two_runs_asks_for_the_file(table_checkpoint):  # noqa: F811
    run_dir = table_checkpoint.parent
    (run_dir / "checkpoint.pt").write_bytes(b"another run's checkpoint")
    with pytest.raises(CheckpointError, match=r"holds both checkpoint\.pt and checkpoint\.npz.*give the file itself"):
        run("0\n1\nn\n", f"checkpoint={run_dir}", "seat=second", "learn=true")
    assert sorted(f.name for f in run_dir.iterdir()) == ["checkpoint.npz", "checkpoint.pt"]  # nothing saved


def test_a_move_of_5000_digits_is_a_bad_move_and_the_learned_games_are_saved(table_checkpoint,  # noqa: F811
                                                                              tmp_path):
    huge = "7" * 5000
    state = make_game("3x3").initial_state()
    with pytest.raises(MoveError, match=r"^'7777777777\.\.\.' \(5000 digits\) is out of range: the cells are "
                                        r"0\.\.8$"):
        parse_move(state, huge)
    with pytest.raises(MoveError, match=r"^coordinate 7777777777\.\.\. \(5000 digits\) is out of range 0\.\.2$"):
        parse_move(state, f"1,{huge}")
    # a game learned, then a huge move and the end of the input: the game is in the saved agent
    tally, text = run(f"0\n1\ny\n{huge}\n", f"checkpoint={table_checkpoint}", "seat=second", "learn=true",
                      f"save={tmp_path / 'mine.npz'}")
    assert "is out of range" in text and tally["saved"] == str(tmp_path / "mine.npz")
    # whatever else stops the games (here a terminal that breaks in the second game), what was learned is saved
    class BreaksInSecondGame(io.StringIO):
        def readline(self, *args):
            return super().readline(*args) or exec("raise OSError(5, 'Input/output error')")

    (tmp_path / "mine.npz").unlink()
    out = io.StringIO()
    with pytest.raises(OSError, match="Input/output error"):
        tp.play(compose_play(f"checkpoint={table_checkpoint}", "seat=second", "learn=true",
                             f"save={tmp_path / 'mine.npz'}"), BreaksInSecondGame("0\n1\ny\n"), out)
    assert "saved the agent (1 games learned)" in out.getvalue() and (tmp_path / "mine.npz").is_file()


def test_learn_needs_a_learner(capsys):
    with pytest.raises(SystemExit) as exit_info:
        tp.run_cli(tp.play, compose_play("player=random", "game=3x3", "learn=true"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err == "error: random does not learn from games; learn=true needs a learning agent's checkpoint\n"


@pytest.mark.cli
def test_stdin_subprocess(tmp_path):
    lines = "1\nx\n16\n0,0\nhint\nquit\n"
    p = subprocess.run([sys.executable, "-m", "ttt.play", "player=random", "game=4x4x4_gravity"], input=lines,
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert list(tmp_path.iterdir()) == []  # no Hydra output folder or log file
    assert "Traceback" not in p.stderr
    assert "'x' is not a move" in p.stdout and "16 is not legal" in p.stdout and "You play" in p.stdout
    assert p.stdout.rstrip().endswith("Bye.")


def test_a_trained_q_learning_agent_learns_from_play(compose_train, tmp_path):
    pytest.importorskip("ttt.agents.q_learning")
    from ttt.train import train

    train(compose_train(["+experiment=qlearn_33", "episodes=200", "eval_every=0", "eval_games=10"]))
    checkpoint = tmp_path / "run" / "checkpoint.npz"
    tally, text = run("4\n0\n8\n2\n6\n1\n3\n5\n7\nn\n", f"checkpoint={checkpoint}", "seat=first", "learn=true")
    assert tally["games"] == 1 and "run learned from this game." in text
    assert Path(tally["saved"]).is_file() and load_player(tally["saved"]).game.name == "3x3"


def test_learn_with_an_unwritable_save_path_is_refused_before_the_first_game(table_checkpoint, tmp_path):  # noqa: F811
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    out = io.StringIO()
    with pytest.raises(ValueError, match=f"save {blocker / 'x.npz'} is not writable"):
        tp.play(compose_play(f"checkpoint={table_checkpoint}", "seat=second", "learn=true",
                             f"save={blocker / 'x.npz'}"), io.StringIO("0\n1\nn\n"), out)
    assert out.getvalue() == ""  # not a move was asked for


def test_a_save_that_fails_at_the_end_goes_to_a_fallback_file(table_checkpoint, tmp_path, monkeypatch):  # noqa: F811
    from test_benchmark import TableLearner

    save_dir = tmp_path / "saves"
    save_dir.mkdir()
    learn = TableLearner.learn_from_game

    def learn_then_break_the_folder(self, states):
        save_dir.rmdir()
        save_dir.write_text("")  # the save folder is now a file: the save at the end fails
        return learn(self, states)

    monkeypatch.setattr(TableLearner, "learn_from_game", learn_then_break_the_folder)
    out = io.StringIO()
    with pytest.raises(OutputError) as err:
        tp.play(compose_play(f"checkpoint={table_checkpoint}", "seat=second", "learn=true",
                             f"save={save_dir / 'learned.npz'}"), io.StringIO("0\n1\nn\n"), out)
    fallback = err.value.fallback
    try:
        assert f"saved the agent (1 games learned) to {fallback}" in out.getvalue()
        assert out.getvalue().rstrip().endswith("Bye.")
        assert sorted(load_player(fallback).values.values()) == [-0.75, -0.75, 0.75, 0.75, 0.75]  # the game learned
    finally:
        fallback.unlink()


def test_the_end_names_the_winning_line_and_svg_saves_every_position(tmp_path):
    frames = tmp_path / "frames"
    tally, text = run("4\n2\n6\nn\n", "player=lowest", "game=3x3", "seat=first", f"svg={frames}")
    assert tally["wins"] == 1
    assert "X completed the line 0,2 - 1,1 - 2,0 (cells 2, 4, 6)." in text
    # plies 0 (empty board) to 5 (X's third piece): one picture each
    assert sorted(p.name for p in frames.iterdir()) == [f"game1_ply{k:02d}.svg" for k in range(6)]
    last = (frames / "game1_ply05.svg").read_text()
    assert last.startswith("<svg") and 'class="winning-line"' in last and 'class="last-move"' in last
    assert 'class="winning-line"' not in (frames / "game1_ply04.svg").read_text()


def test_svg_refuses_a_file_in_one_line(tmp_path):
    blocker = tmp_path / "f"
    blocker.write_text("")
    with pytest.raises(ValueError, match="not a folder"):
        run("q\n", "player=lowest", "game=3x3", "seat=first", f"svg={blocker}")
