"""Checkpoints: round trips, refusal of bad files with one-line errors, atomic writes."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from ttt.checkpoint import FORMAT_VERSION, CheckpointError, load_checkpoint, save_checkpoint

MARKER: list[str] = []


def _side_effect(text: str) -> None:
    MARKER.append(text)


class Sneaky:
    """An object whose unpickling runs code: a weights-only load must refuse it without running it."""

    def __reduce__(self):
        return (_side_effect, ("unpickled",))


def payload() -> dict:
    return {"kind": "dqn", "game": "4x4x4", "step": 7, "config": {"lr": 0.005, "hidden": [304, 32]},
            "weights": torch.arange(6, dtype=torch.float32).reshape(2, 3)}


def assert_one_line_naming(err: pytest.ExceptionInfo, path) -> None:
    msg = str(err.value)
    assert str(path) in msg and "\n" not in msg


def test_pt_round_trip(tmp_path):
    path = save_checkpoint(tmp_path / "a" / "model.pt", payload())
    back = load_checkpoint(path, kind="dqn", game="4x4x4")
    assert back["format_version"] == FORMAT_VERSION and back["step"] == 7
    assert back["config"] == {"lr": 0.005, "hidden": [304, 32]}
    assert torch.equal(back["weights"], payload()["weights"])


def test_npz_round_trip(tmp_path):
    table = np.linspace(-1, 1, 12).reshape(3, 4)
    path = save_checkpoint(tmp_path / "q.npz", {"kind": "tabular", "game": "3x3", "values": table,
                                                "keys": np.arange(3, dtype=np.int64), "alpha": 0.1})
    back = load_checkpoint(path, kind="tabular", game="3x3")
    assert np.array_equal(back["values"], table) and back["keys"].dtype == np.int64
    assert back["alpha"] == 0.1 and back["kind"] == "tabular"


def test_save_needs_kind_and_game_and_a_known_suffix(tmp_path):
    with pytest.raises(ValueError, match="'kind'"):
        save_checkpoint(tmp_path / "x.pt", {"game": "3x3"})
    with pytest.raises(ValueError, match="'game'"):
        save_checkpoint(tmp_path / "x.pt", {"kind": "dqn"})
    with pytest.raises(ValueError, match=".pt or .npz"):
        save_checkpoint(tmp_path / "x.pkl", {"kind": "dqn", "game": "3x3"})


def test_missing_file(tmp_path):
    path = tmp_path / "none.pt"
    with pytest.raises(CheckpointError, match="no such checkpoint") as err:
        load_checkpoint(path)
    assert_one_line_naming(err, path)


@pytest.mark.parametrize("suffix", [".pt", ".npz"])
def test_corrupt_and_truncated_files(tmp_path, suffix):
    values = torch.zeros(50, 50) if suffix == ".pt" else np.zeros((50, 50))
    good = save_checkpoint(tmp_path / f"good{suffix}", {"kind": "k", "game": "3x3", "values": values})
    data = good.read_bytes()
    truncated = tmp_path / f"truncated{suffix}"
    truncated.write_bytes(data[: len(data) // 2])
    corrupt = tmp_path / f"corrupt{suffix}"
    corrupt.write_bytes(np.random.default_rng(0).bytes(len(data)))
    for path in (truncated, corrupt):
        with pytest.raises(CheckpointError, match="cannot read checkpoint") as err:
            load_checkpoint(path)
        assert_one_line_naming(err, path)


def test_wrong_kind_game_version_and_shape(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", payload())
    with pytest.raises(CheckpointError, match="a 'dqn' checkpoint, expected 'tabular'") as err:
        load_checkpoint(path, kind="tabular")
    assert_one_line_naming(err, path)
    with pytest.raises(CheckpointError, match="board '4x4x4', not '3x3'") as err:
        load_checkpoint(path, game="3x3")
    assert_one_line_naming(err, path)
    old = tmp_path / "old.pt"
    torch.save({"kind": "dqn", "game": "3x3", "format_version": 0}, old)
    with pytest.raises(CheckpointError, match="format version 0"):
        load_checkpoint(old)
    foreign = tmp_path / "foreign.pt"
    torch.save([1, 2, 3], foreign)
    with pytest.raises(CheckpointError, match="not a ttt checkpoint"):
        load_checkpoint(foreign)
    other = tmp_path / "model.h5"
    other.write_bytes(b"x")
    with pytest.raises(CheckpointError, match="expected a .pt or .npz"):
        load_checkpoint(other)


def test_pickled_object_is_refused_without_running_it(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"kind": "dqn", "game": "3x3", "format_version": FORMAT_VERSION, "x": Sneaky()}, path)
    MARKER.clear()
    with pytest.raises(CheckpointError, match="cannot read checkpoint") as err:
        load_checkpoint(path)
    assert_one_line_naming(err, path)
    assert MARKER == []
    npz = tmp_path / "evil.npz"
    np.savez(npz, __meta__=np.array('{"kind": "t", "game": "3x3", "format_version": 1}'),
             x=np.array([Sneaky()], dtype=object))
    with pytest.raises(CheckpointError, match="cannot read checkpoint") as err:
        load_checkpoint(npz)
    assert_one_line_naming(err, npz)
    assert MARKER == []


def test_atomic_write_leaves_no_temp_files(tmp_path):
    for i in range(3):
        save_checkpoint(tmp_path / "m.pt", {**payload(), "step": i})
        save_checkpoint(tmp_path / "t.npz", {"kind": "t", "game": "3x3", "v": np.full(3, i)})
    assert sorted(os.listdir(tmp_path)) == ["m.pt", "t.npz"]
    assert load_checkpoint(tmp_path / "m.pt")["step"] == 2


@pytest.mark.parametrize("bad", [np.arange(3), np.float64(0.5), np.int64(2), Sneaky(), [1, {"deep": np.ones(2)}]])
def test_pt_payload_that_cannot_be_read_back_is_refused_at_save(tmp_path, bad):
    with pytest.raises(ValueError, match=r"checkpoint entry payload\['x'\].* is a "):
        save_checkpoint(tmp_path / "m.pt", {"kind": "t", "game": "3x3", "x": bad})
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("suffix", [".pt", ".npz"])
def test_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch, suffix):
    path = tmp_path / f"m{suffix}"
    v = np.arange(4) if suffix == ".npz" else torch.arange(4)
    save_checkpoint(path, {"kind": "t", "game": "3x3", "v": v, "step": 1})
    before = path.read_bytes()

    def dies_midway(f) -> None:
        f.write(b"partial bytes of a checkpoint")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", lambda obj, f: dies_midway(f))
    monkeypatch.setattr(np, "savez_compressed", lambda f, **arrays: dies_midway(f))
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, {"kind": "t", "game": "3x3", "v": v, "step": 2})
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == [path.name]
    assert load_checkpoint(path)["step"] == 1


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_weights_that_are_not_finite_are_refused_naming_the_entry(tmp_path, bad):
    weights = {"first.weight": torch.zeros(2, 3), "out.weight": torch.ones(1, 2)}
    weights["out.weight"][0, 1] = bad
    envs = {"values": torch.tensor([float("-inf"), float("nan")])}  # masks of the games in flight: not weights
    path = save_checkpoint(tmp_path / "c.pt", {"kind": "dqn", "game": "3x3", "weights": {**weights},
                                               "trainer": {"weights": weights, "envs": envs}})
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(path)
    assert str(err.value) == (f"{path}: weights['out.weight'] holds 1 value that is NaN or infinite (the training "
                              f"diverged); it cannot be played or resumed: use an earlier checkpoint, or train again "
                              f"(a smaller agent.lr)")
    fine = save_checkpoint(tmp_path / "fine.pt", {"kind": "dqn", "game": "3x3", "weights": {"w": torch.zeros(2)},
                                                  "trainer": {"envs": envs}})
    assert load_checkpoint(fine)["kind"] == "dqn"
    table = save_checkpoint(tmp_path / "t.npz", {"kind": "td", "game": "3x3", "keys_0": np.arange(3),
                                                 "values_0": np.array([0.5, bad, bad])})
    with pytest.raises(CheckpointError, match=r"t.npz: values_0 holds 2 values that are NaN or infinite"):
        load_checkpoint(table)


def test_a_run_with_nan_weights_is_refused_by_resume_and_by_every_tool_that_loads_it(compose_train, tmp_path, capsys):
    from ttt.cli import run_cli
    from ttt.harness.specs import load_agents
    from ttt.train import train

    tiny = ["+experiment=dqn_33", "episodes=20", "eval_every=0", "eval_games=2", "agent.final_eval_games=2",
            "num_envs=4", "eval_opponents=[random]"]
    train(compose_train(tiny))
    path = tmp_path / "run" / "checkpoint.pt"
    payload = torch.load(path, weights_only=True)
    for weights in (payload["weights"], payload["trainer"]["weights"]):
        next(iter(weights.values())).fill_(float("nan"))
    torch.save(payload, path)
    (tmp_path / "run" / "final_eval.json").unlink()  # so that resume=true continues it
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*tiny, "episodes=40", "resume=true"]))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: {path}: weights[") and "NaN or infinite" in err
    with pytest.raises(CheckpointError, match="NaN or infinite"):  # ttt.benchmark, ttt.play, ttt.calibration
        load_agents([str(path)], None)
