"""ttt.perf: the sections run and write the documented JSON (shape tests, not timings), on the CPU and
through the device code path (torch tensors on the CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ttt import perf
from ttt.games import BOARDS, make_game


def test_engine_section_writes_json(tmp_path, capsys):
    out_file = tmp_path / "perf.json"
    result = perf.main(["seconds=0.2", "sections=engine", "device=cpu", f"output={out_file}"])
    written = json.loads(out_file.read_text())
    assert written == result
    assert list(written) == ["device", "gpu", "engine_batch", "engine"]
    assert written["device"] == "cpu" and written["gpu"] is None and written["engine_batch"] == 4096
    assert list(written["engine"]) == list(BOARDS)
    assert all(isinstance(v, float) and v > 0 for v in written["engine"].values())
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "device  cpu" and printed[1] == "engine  4,096 games side by side"
    assert len(printed) == 2 + len(BOARDS) and all(line.endswith("plies/s") for line in printed[2:])


def test_recipe_section_writes_json(tmp_path, capsys):
    out_file = tmp_path / "perf.json"
    result = perf.main(["seconds=0.2", "sections=recipe", "device=cpu", "num_envs=4", f"output={out_file}"])
    written = json.loads(out_file.read_text())
    assert written == result and list(written) == ["device", "gpu", "recipe"]
    assert list(written["recipe"]) == ["num_envs_4"] and written["recipe"]["num_envs_4"] > 0
    assert capsys.readouterr().out.splitlines()[1].startswith("recipe  num_envs_4 ")


def test_recipe_defaults_and_config():
    # the defaults the help names, and the config is the experiment file's, composed
    assert perf.parse_args(["device=cpu"])[3].recipe_envs == (128, 1024)
    cfg = perf.recipe_config()
    assert cfg.game.name == "4x4x4" and cfg.agent.parts.labels.rank_labels == 512
    assert cfg.agent.parts.rules.play_threats == 3
    assert cfg.num_envs == 128


def test_engine_on_torch_tensors_counts_plies():
    # the device code path, on the CPU: plies are counted on the device and read once at the end
    rate = perf.engine_plies_per_sec("4x4x4_gravity", batch_size=64, seconds=0.1, device="cpu")
    assert rate > 0


def test_profile_prints_the_top_functions(capsys):
    perf.main(["seconds=0.05", "sections=engine", "device=cpu", "engine_batch=16", "profile=true"])
    out = capsys.readouterr().out
    assert out.count("--- profile: engine") == len(BOARDS) and "tottime" in out


@pytest.mark.parametrize("args, message", [
    (["speed=3"], "unknown argument 'speed=3'"),
    (["sections=nope"], "unknown section 'nope'"),
    (["engine"], "unknown argument 'engine'"),
    (["seconds=-1"], "seconds=-1: the measuring time must be a number > 0"),
    (["seconds=0"], "seconds=0: the measuring time must be a number > 0"),
    (["seconds=abc"], "seconds=abc: the measuring time must be a number > 0"),
    (["device=tpu"], "device=tpu: choose one of auto, cpu, cuda"),
    (["profile=yes"], "profile=yes: choose true or false"),
    (["num_envs=a"], "need whole numbers"),
    (["engine_batch=0"], "must be >= 1"),
])
def test_bad_arguments_exit_2_with_one_line(args, message, capsys, monkeypatch):
    # seconds=-1 used to measure nothing and print "0 episodes/s"
    for name in perf.SECTIONS:
        monkeypatch.setitem(perf.SECTIONS, name, lambda seconds, settings: {"x": seconds})
    with pytest.raises(SystemExit) as err:
        perf.main(args)
    assert err.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ttt.perf: ") and message in lines[0]
    assert captured.out == ""


def test_unwritable_output_is_refused_before_measuring(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    measured = []
    monkeypatch.setitem(perf.SECTIONS, "engine", lambda seconds, settings: measured.append(seconds) or {"3x3": 1.0})
    with pytest.raises(SystemExit) as err:
        perf.main(["sections=engine", "seconds=0.01", f"output={blocker / 'perf.json'}"])
    assert err.value.code == 2 and measured == []  # not a single measurement was spent
    assert "output" in capsys.readouterr().err


def test_output_failing_after_measuring_goes_to_a_fallback_file(tmp_path, monkeypatch, capsys):
    out_dir = tmp_path / "out"

    def engine(seconds, settings):  # the folder becomes unwritable while measuring: replaced by a file
        out_dir.rmdir()
        out_dir.write_text("")
        return {"3x3": 123.0}

    out_dir.mkdir()
    monkeypatch.setitem(perf.SECTIONS, "engine", engine)
    with pytest.raises(SystemExit) as err:
        perf.main(["sections=engine", "seconds=0.01", f"output={out_dir / 'perf.json'}"])
    assert err.value.code == 1
    line = capsys.readouterr().err.strip()
    fallback = Path(line.rsplit("written to ", 1)[1])
    try:
        assert json.loads(fallback.read_text())["engine"] == {"3x3": 123.0}
    finally:
        fallback.unlink()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_a_gpu_fails_at_start_with_one_line(capsys):
    with pytest.raises(SystemExit) as err:
        perf.main(["device=cuda", "sections=engine"])
    assert err.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == ["error: ttt.perf: device=cuda: no CUDA device is available (torch "
                                         + torch.__version__ + ", a CPU-only build); use device=cpu or device=auto"]


def test_search_section_reports_ms_per_move(capsys):
    result = perf.main(["seconds=0.03", "sections=search", "device=cpu"])
    assert list(result) == ["device", "gpu", "search"]
    assert list(result["search"]) == [f"{b} depth {d}" for b in ("4x4x4", "4x4x4_gravity") for d in (1, 2, 3)]
    assert all(v > 0 for v in result["search"].values())
    assert capsys.readouterr().out.count("ms/move") == 6


def test_mcts_vs_openspiel_times_both_on_quiet_positions(capsys):
    from ttt.games.bitboard import bitboards

    for board in perf.OPENSPIEL_GAMES:
        game, bits = make_game(board), bitboards(make_game(board))
        positions = perf.quiet_positions(board)
        assert [len(m) for m in positions] == [0, 2, 4]
        for moves in positions:  # no side can answer by completing a line
            first, second = bits.masks(perf._replay(game, moves).board)
            assert not (bits.completing(first, second) | bits.completing(second, first)) & bits.playable(first, second)
    result = perf.main(["seconds=0.01", "simulations=20", "sections=mcts_vs_openspiel"])["mcts_vs_openspiel"]
    try:
        import pyspiel  # noqa: F401
        bots = ["mcts", "mcts_plain", "openspiel"]
    except ImportError:  # OpenSpiel's side is skipped without the optional package
        bots = ["mcts", "mcts_plain"]
    assert list(result) == [f"{b} {bot}" for b in perf.OPENSPIEL_GAMES for bot in bots]
    assert all(v > 0 for v in result.values())


def test_help_is_plain_text(capsys):
    with pytest.raises(SystemExit) as e:
        perf.main(["--help"])
    text = capsys.readouterr().out
    assert e.value.code == 0 and "python -m ttt.perf [device=auto|cpu|cuda]" in text and "``" not in text
