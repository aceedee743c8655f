"""ttt.perf: the sections run and write the documented JSON (shape tests, not timings), on the CPU and
through the device code path (torch tensors on the CPU)."""

from __future__ import annotations

import json

import pytest
import torch

from ttt import perf
from ttt.games import BOARDS


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


def test_engine_on_torch_tensors_counts_plies():
    # the device code path, on the CPU: plies are counted on the device and read once at the end
    rate = perf.engine_plies_per_sec("4x4x4_gravity", batch_size=64, seconds=0.1, device="cpu")
    assert rate > 0


def test_profile_prints_the_top_functions(capsys):
    perf.main(["seconds=0.05", "sections=engine", "device=cpu", "engine_batch=16", "profile=true"])
    out = capsys.readouterr().out
    assert out.count("--- profile: engine") == len(BOARDS) and "tottime" in out


@pytest.mark.parametrize("arg", ["speed=3", "sections=nope", "engine", "device=tpu", "profile=yes", "num_envs=a"])
def test_bad_arguments_exit_with_a_message(arg, capsys):
    with pytest.raises(SystemExit) as err:
        perf.main([arg, "seconds=0.01"])
    assert err.value.code == 2
    err_lines = capsys.readouterr().err.splitlines()
    assert len(err_lines) == 1 and err_lines[0].startswith("ttt.perf: ")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_a_gpu_fails_at_start_with_one_line(capsys):
    with pytest.raises(SystemExit) as err:
        perf.main(["device=cuda", "sections=engine"])
    assert err.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("ttt.perf: device=cuda: no CUDA device is available")


def test_search_section_reports_ms_per_move(capsys):
    result = perf.main(["seconds=0.03", "sections=search", "device=cpu"])
    assert list(result) == ["device", "gpu", "search"]
    assert list(result["search"]) == [f"{b} depth {d}" for b in ("4x4x4", "4x4x4_gravity") for d in (1, 2, 3)]
    assert all(v > 0 for v in result["search"].values())
    assert capsys.readouterr().out.count("ms/move") == 6
