"""ttt.perf: the engine section runs and writes the documented JSON (a shape test, not a timing)."""

from __future__ import annotations

import json

import pytest

from ttt import perf
from ttt.games import BOARDS, make_game


def test_engine_section_writes_json(tmp_path, capsys):
    out_file = tmp_path / "perf.json"
    result = perf.main(["seconds=0.2", "sections=engine", f"output={out_file}"])
    written = json.loads(out_file.read_text())
    assert written == result
    assert list(written) == ["engine"]
    assert list(written["engine"]) == list(BOARDS)
    assert all(isinstance(v, float) and v > 0 for v in written["engine"].values())
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == len(BOARDS) and all(line.endswith("plies/s") for line in printed)


@pytest.mark.parametrize("arg", ["speed=3", "sections=nope", "engine"])
def test_bad_arguments_exit_with_a_message(arg):
    with pytest.raises(SystemExit) as err:
        perf.main([arg, "seconds=0.01"])
    assert "ttt.perf" in str(err.value)


def test_search_section_reports_ms_per_move(capsys):
    result = perf.main(["seconds=0.03", "sections=search"])
    assert list(result) == ["search"]
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
