"""Nothing on disk lost on a full disk, a late error or a signal: atomic outputs, values checked before
anything is deleted, one-line errors with the exit code of their kind (2 a user's mistake, 1 a file
that could not be written, 130 a signal).

A full disk is injected as ``OSError(ENOSPC)`` raised by the write (fast, and the same on any
machine); the writes it interrupts have already put some bytes into their file, as a real full disk
would."""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_benchmark import table_checkpoint  # noqa: F401  (a saved learner fixture)
from test_play import compose_play

import ttt.checkpoint
from ttt.checkpoint import atomic_write, load_checkpoint, save_checkpoint
from ttt.cli import Interrupted, OutputError, guard_hydra_record, run_cli, write_json
from ttt.harness.run_dir import ASIDE, LOCK_NAME, process_start
from ttt.harness.training import Run
from ttt.players import make_player
from ttt.train import train

ROOT = Path(__file__).resolve().parents[1]
TINY = ["+experiment=dqn_33", "episodes=40", "eval_every=20", "eval_games=4", "agent.final_eval_games=4",
        "num_envs=4", "agent.switch_episode=20"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def one_line(capsys, code: int, exit_info) -> str:
    assert exit_info.value.code == code
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def full_disk_for(monkeypatch, target: Path, after: int = 0) -> None:
    """Writes of the file ``target`` (or its temporary files beside it: ``.<stem>.*.tmp<suffix>``)
    fail with ENOSPC after ``after`` successful ones, having written part of their bytes."""
    name, stem, suffix = target.name, target.stem, target.suffix
    seen = [0]
    real_open = open

    def failing_open(file, mode="r", *args, **kwargs):
        base = os.path.basename(str(file))
        f = real_open(file, mode, *args, **kwargs)
        ours = os.path.dirname(os.path.abspath(str(file))) == str(target.parent) and (
            base == name or (base.startswith(f".{stem}.") and base.endswith(f".tmp{suffix}")))
        if "w" in mode and ours:
            seen[0] += 1
            if seen[0] > after:
                return _FullDisk(f)
        return f

    monkeypatch.setattr("builtins.open", failing_open)
    monkeypatch.setattr(io, "open", failing_open)  # what pathlib's write_text calls


class _FullDisk:
    """A file whose first write puts a few bytes on disk and then fails with ENOSPC."""

    def __init__(self, f) -> None:
        self.f = f

    def write(self, data):
        self.f.write(data[:7])
        self.f.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


# ------------------------------------------------------------------------------- atomic writes
def test_atomic_write_keeps_the_earlier_file_whole_and_gives_plain_modes(tmp_path, monkeypatch):
    target = tmp_path / "res.json"
    write_json(target, {"a": 1}, "results")
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()  # 0644 as a plain open gives, not 0600
    ckpt = save_checkpoint(tmp_path / "c.pt", {"kind": "k", "game": "3x3"})
    assert stat.S_IMODE(ckpt.stat().st_mode) == stat.S_IMODE(target.stat().st_mode)
    full_disk_for(monkeypatch, target)
    with pytest.raises(OutputError) as err:
        write_json(target, {"a": 2}, "results")
    monkeypatch.undo()
    message = str(err.value)
    assert f"could not write the results to {target} (No space left on device)" in message
    assert "the earlier file there is unchanged" in message and str(err.value.fallback) in message
    assert json.loads(target.read_text()) == {"a": 1}  # whole, not 4,096 bytes of a new one
    assert json.loads(err.value.fallback.read_text()) == {"a": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt", "res.json"]  # no temporary file left
    err.value.fallback.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_case_2_benchmark_and_perf_outputs_on_a_full_disk(tmp_path, monkeypatch, capsys):
    from test_benchmark import compose_benchmark

    from ttt.benchmark import benchmark
    from ttt.perf import measure

    out = tmp_path / "res.json"
    out.write_text('{"earlier": true}\n')
    full_disk_for(monkeypatch, out)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(benchmark, compose_benchmark("player=random", "game=3x3", "opponents=[random]", "games=2",
                                             f"output={out}"), io.StringIO())
    line = one_line(capsys, 1, exit_info)
    assert json.loads(out.read_text()) == {"earlier": True} and "unchanged" in line
    fallback = Path(line.rsplit("written to ", 1)[1])
    assert json.loads(fallback.read_text())["mode"] == "benchmark"
    fallback.unlink()
    perf_out = tmp_path / "perf.json"  # no earlier file: none is left behind, not even an empty one
    full_disk_for(monkeypatch, perf_out)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(measure, ["sections=engine", "seconds=0.05", "engine_batch=4", f"output={perf_out}"])
    line = one_line(capsys, 1, exit_info)
    assert not perf_out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["res.json"]
    fallback = Path(line.rsplit("written to ", 1)[1])
    assert "engine" in json.loads(fallback.read_text())
    fallback.unlink()


def test_truncated_checkpoint_says_so_and_names_the_file(tmp_path):
    path = save_checkpoint(tmp_path / "c.pt", {"kind": "k", "game": "3x3", "w": np.zeros(3).tolist()})
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ttt.checkpoint.CheckpointError, match="truncated or corrupt") as err:
        load_checkpoint(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


# ------------------------------------------------------------------------- training on a full disk
def test_cases_3_7_12_a_full_disk_while_training_is_one_line_naming_the_file_what_is_safe_and_how_to_resume(
        compose_train, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    full_disk_for(monkeypatch, run / "checkpoint.pt", after=1)  # the checkpoint at episode 20 is written, 40 is not
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train(TINY))
    monkeypatch.undo()
    err = capsys.readouterr().err
    line = err.strip().splitlines()[-1]
    assert exit_info.value.code == 1 and "Traceback" not in err
    assert line.startswith(f"error: could not write {run / 'checkpoint.pt'} (No space left on device); "
                           f"the checkpoint of episode 20 is safe in {run / 'checkpoint.pt'}; free space, then "
                           f"resume with: ")
    assert line.endswith(f"resume=true run_dir={run}")  # outside Hydra; through it the command line (test_runs)
    assert load_checkpoint(run / "checkpoint.pt")["episodes"] == 20
    assert [p.name for p in run.iterdir() if p.name.endswith(".tmp.pt")] == []
    # 3. the run is resumed; then final_eval.json finds the disk full: no empty file, the checkpoint is safe
    full_disk_for(monkeypatch, run / "final_eval.json")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "resume=true"]))
    monkeypatch.undo()
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 1
    played = load_checkpoint(run / "checkpoint.pt")["episodes"]  # a batched run ends a few games past 40
    assert played >= 40 and line.startswith(f"error: could not write {run / 'final_eval.json'} (No space left on "
                                            f"device); the checkpoint of episode {played} is safe in ")
    assert not (run / "final_eval.json").exists()
    out = train(compose_train([*TINY, "resume=true"]))  # resuming a finished checkpoint writes what was missing
    assert out["episodes"] == 40 and json.loads((run / "final_eval.json").read_text())["episodes"] == 40


def test_a_full_disk_with_runs_side_by_side_names_the_checkpoint_of_the_run_whose_write_failed(
        compose_train, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    full_disk_for(monkeypatch, run / "seed_1" / "checkpoint.pt", after=1)  # seed 1's second checkpoint fails
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "seeds=3", "eval_opponents=[random]"]))
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "Traceback" not in err, err
    ours = run / "seed_1" / "checkpoint.pt"
    assert err.strip().splitlines()[-1] == (
        f"error: could not write {ours} (No space left on device); the checkpoint of episode 20 is safe in {ours}; "
        f"free space, then resume with: train(cfg) with the same config and resume=true run_dir={run}")


def test_a_full_disk_while_writing_tensorboard_events_is_one_line_naming_the_file_and_how_to_resume(
        compose_train, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    real_open = open

    class FullOnceCheckpointed:  # the disk fills up once the first checkpoint is on it
        def __init__(self, f) -> None:
            self.f = f

        def write(self, data):
            if (run / "checkpoint.pt").exists():
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(data)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def events_open(file, mode="r", *args, **kwargs):
        f = real_open(file, mode, *args, **kwargs)
        return FullOnceCheckpointed(f) if "tfevents" in os.path.basename(str(file)) and "w" in mode else f

    monkeypatch.setattr("builtins.open", events_open)
    monkeypatch.setattr(io, "open", events_open)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train(TINY))
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "Traceback" not in err, err
    [events] = (run / "tb").glob("events.out.tfevents.*")
    assert err.strip().splitlines()[-1] == (
        f"error: could not write {events} (No space left on device); the checkpoint of episode 20 is safe in "
        f"{run / 'checkpoint.pt'}; free space, then resume with: train(cfg) with the same config and resume=true "
        f"run_dir={run}")
    assert threading.active_count() == 1  # no writer thread left behind


def test_case_8_hydras_record_is_held_until_the_run_writes_it_and_a_full_disk_there_names_the_file(
        tmp_path, monkeypatch):
    import hydra.core.utils as hydra_utils
    from omegaconf import OmegaConf

    from ttt.cli import write_hydra_record

    guard_hydra_record()
    hydra_utils._save_config(OmegaConf.create(["seed=1"]), "overrides.yaml", tmp_path / ".hydra")
    assert not (tmp_path / ".hydra").exists()  # held: written with the run's first checkpoint
    full_disk_for(monkeypatch, tmp_path / ".hydra" / "overrides.yaml")
    with pytest.raises(OSError, match="No space left") as err:  # the run's one line names it (test above)
        write_hydra_record(tmp_path)
    monkeypatch.undo()
    assert err.value.filename == str(tmp_path / ".hydra" / "overrides.yaml")
    assert not (tmp_path / ".hydra" / "overrides.yaml").exists()


# ------------------------------------------------------------------ values checked before any deletion
def test_case_1_overwrite_with_a_bad_seed_deletes_nothing_and_a_failed_start_puts_the_old_run_back(
        compose_train, tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    train(compose_train(TINY))
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    tb = sorted(p.name for p in (run / "tb").iterdir())
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "overwrite=true", "seed=4294967296"]))
    assert "seed=4294967296: must be in [0, 4294967295]" in one_line(capsys, 2, exit_info)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    # a start that fails after the old files were set aside puts them back
    def broken(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", str(run / "tb"))

    monkeypatch.setattr("ttt.harness.training.EventFile", broken)
    with pytest.raises(OSError):
        train(compose_train([*TINY, "overwrite=true"]))
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in (run / "tb").iterdir()) == tb and not (run / ASIDE).exists()


def test_files_set_aside_by_an_overwrite_killed_while_it_started_are_put_back(compose_train, tmp_path, capsys):
    run = tmp_path / "run"
    train(compose_train(TINY))
    (run / ASIDE).mkdir()  # as a run killed between setting the files aside and training leaves them
    for name in ("checkpoint.pt", "final_eval.json"):
        (run / name).rename(run / ASIDE / name)
    capsys.readouterr()
    assert train(compose_train([*TINY, "resume=true"]))["episodes"] == 40  # finished: skipped
    assert "put back checkpoint.pt, final_eval.json of an earlier overwrite=true run" in capsys.readouterr().err
    assert (run / "checkpoint.pt").is_file() and not (run / ASIDE).exists()


def test_case_5_too_many_games_for_the_memory_are_refused_at_once(compose_train, capsys):
    t0 = time.perf_counter()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "game=4x4x4", "num_envs=10000000"]))
    line = one_line(capsys, 2, exit_info)
    assert time.perf_counter() - t0 < 10
    assert line.startswith("error: num_envs=10000000: 4x4x4 games side by side need about ") and "GiB" in line


@pytest.mark.parametrize("what", ["checkpoint.pt", LOCK_NAME])
def test_cases_6_17_a_folder_where_the_run_writes_a_file_is_refused_before_training(compose_train, tmp_path, capsys,
                                                                                   what):
    run = tmp_path / "run"
    (run / what).mkdir(parents=True)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "resume=true"]))
    line = one_line(capsys, 2, exit_info)
    assert f"run_dir {run}: {what} is a folder, where the run writes a file" in line
    assert sorted(p.name for p in run.iterdir()) == [what]


def test_cases_18_19_a_dangling_symlink_or_an_empty_run_dir(compose_train, tmp_path, capsys):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, f"run_dir={link}"]))
    assert f"run_dir {link} is a symbolic link to {tmp_path / 'gone'}, which does not exist" in \
        one_line(capsys, 2, exit_info)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "run_dir="]))
    assert "run_dir='' names no folder" in one_line(capsys, 2, exit_info)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


@pytest.mark.parametrize("override, message", [
    ("seed=1180591620717411303424", "seed=1180591620717411303424: must be in [0, 4294967295]"),  # 13
    ("threads=100000000000", "threads=100000000000: must be in [1, "),  # 13
    ("threads=10000", "threads=10000: must be in [1, "),  # 13
    ("eval_opponents=[alphabeta:x]", "player spec 'alphabeta:x': alphabeta option depth must be an integer, "
                                     "got 'x'"),  # 14
    ("eval_opponents=[mcts:1.5]", "player spec 'mcts:1.5': mcts option simulations must be an integer, got 1.5"),  # 15
    ("eval_opponents=[alphabeta:0]", "alphabeta depth must be >= 1"),
    ("eval_opponents=[mcts:0]", "simulations must be >= 1"),
])
def test_cases_13_14_15_seeds_threads_and_player_options(compose_train, tmp_path, capsys, override, message):
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, override]))
    assert message in one_line(capsys, 2, exit_info)
    assert not (tmp_path / "run").exists()


def test_runs_side_by_side_check_their_last_seed_and_their_memory_together(compose_train, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "seed=4294967295", "seeds=3"]))
    assert "seed=4294967295 seeds=3: the last seed, 4294967297, must be <= 4294967295" in one_line(capsys, 2, exit_info)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "game=4x4x4", "num_envs=1000", "seeds=100000"]))  # 0.1 GB a run
    assert "seeds=100000 runs of num_envs=1000 4x4x4 games side by side need about" in one_line(capsys, 2, exit_info)
    assert not (tmp_path / "run").exists()


def test_seeds_100000_is_refused_at_once_and_each_limit_on_seeds_names_itself(compose_train, tmp_path, capsys,
                                                                              monkeypatch):
    t0 = time.perf_counter()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "seeds=100000"]))
    line = one_line(capsys, 2, exit_info)
    assert time.perf_counter() - t0 < 10 and not (tmp_path / "run").exists()
    assert line.startswith("error: seeds=100000")
    # memory: the runs' own (networks, optimiser state, opponents, logs), not only their games
    monkeypatch.setattr("ttt.config.available_bytes", lambda device="cpu": 100 * 2**20)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "seeds=60"]))
    assert one_line(capsys, 2, exit_info) == (
        "error: seeds=60 runs of num_envs=4 3x3 games side by side need about 0.1 GiB (2 MiB a run besides its "
        "games), more than the 0.1 GiB this machine has available; choose fewer seeds or num_envs")
    monkeypatch.undo()
    # open files: every run keeps its train.log and its TensorBoard events open
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda what: (100, 100))
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "seeds=60"]))
    assert one_line(capsys, 2, exit_info) == (
        "error: seeds=60: each run keeps 2 files open (train.log and its TensorBoard events), 184 with this "
        "process's own, more than the 100 it may open (ulimit -n); choose seeds <= 18, or raise ulimit -n")
    monkeypatch.undo()
    # disk: a checkpoint and logs per run
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(2**30, 2**30 - 2**24, 2**24))
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "seeds=60"]))
    assert one_line(capsys, 2, exit_info) == (
        f"error: seeds=60: the runs' folders need about 60 MiB on disk (1 MiB a run: its checkpoint and logs), "
        f"more than the 16 MiB free under {tmp_path}; choose fewer seeds or another run_dir")
    monkeypatch.undo()
    assert not (tmp_path / "run").exists()


def test_a_signal_while_many_runs_set_up_stops_at_once_and_leaves_no_folders(compose_train, tmp_path, monkeypatch,
                                                                             capsys):
    made = []
    init = Run.__init__

    def counting(self, *args, **kwargs):
        made.append(1)
        if len(made) == 5:
            os.kill(os.getpid(), signal.SIGTERM)
        init(self, *args, **kwargs)

    monkeypatch.setattr(Run, "__init__", counting)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(train, compose_train([*TINY, "seeds=40"]))
    assert exit_info.value.code == 130 and len(made) == 5
    assert list((tmp_path / "run").rglob("*")) == [] and "Traceback" not in capsys.readouterr().err


def test_runs_side_by_side_start_no_thread_per_run(compose_train, monkeypatch):
    counts = []
    tick = Run.tick
    monkeypatch.setattr(Run, "tick", lambda self, *a, **k: (counts.append(threading.active_count()),
                                                            tick(self, *a, **k))[1])
    train(compose_train([*TINY, "seeds=3", "episodes=8", "eval_every=0", "eval_opponents=[random]"]))
    assert counts and max(counts) == 1


def test_the_other_entry_points_check_seed_and_threads_before_any_game(capsys):
    from test_benchmark import compose_benchmark

    from ttt.benchmark import benchmark

    for override, message in (("seed=4294967296", "seed=4294967296: must be in [0, 4294967295]"),
                              ("threads=100000000000", "threads=100000000000: must be in [1, ")):
        out = io.StringIO()
        with pytest.raises(SystemExit) as exit_info:
            run_cli(benchmark, compose_benchmark("player=random", "game=3x3", "opponents=[random]", override), out)
        assert message in one_line(capsys, 2, exit_info) and out.getvalue() == ""


# ------------------------------------------------------------------------------------------- locks
def test_case_16_a_lock_whose_pid_now_belongs_to_another_process_is_stale(compose_train, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = process_start(sleeper.pid)
        assert start is not None  # /proc is there
        info = {"pid": sleeper.pid, "host": socket.gethostname(), "started": "x"}
        (run / LOCK_NAME).write_text(json.dumps({**info, "start": start}))
        with pytest.raises(SystemExit) as exit_info:  # the process that took it: refused
            run_cli(train, compose_train(TINY))
        assert f"in use by another training (pid {sleeper.pid}" in one_line(capsys, 2, exit_info)
        # the same pid, another start time: the pid was reused, the lock is stale
        (run / LOCK_NAME).write_text(json.dumps({**info, "start": str(int(start) - 1)}))
        train(compose_train(TINY))
        assert "now belongs to another process" in capsys.readouterr().err
        assert not (run / LOCK_NAME).exists() and (run / "final_eval.json").is_file()
    finally:
        sleeper.kill()
        sleeper.wait()


# ----------------------------------------------------------------------------------------- signals
def test_case_11_a_signal_during_the_final_evaluation_stops_it_at_once(compose_train, tmp_path, capsys):
    cfg = compose_train(["game=3x3", "episodes=10", "eval_every=0", "eval_opponents=[random]"])
    played: list[int] = []
    with pytest.raises(Interrupted), Run(cfg, tmp_path / "r") as run:
        player = make_player("random", run.game)

        def long_evaluation(p, done, games=None, *rest):
            os.kill(os.getpid(), signal.SIGTERM)
            for i in range(1000):  # 17 s of games before; now it stops at the first
                played.append(i)
                time.sleep(0.01)
            return {}

        run.evaluate = long_evaluation
        run.start(0)
        run.finish(lambda: player, 10, lambda d: save_checkpoint(run.checkpoint_path(),
                                                                 {"kind": "dqn", "game": "3x3", "episodes": d}))
    assert len(played) < 5
    err = capsys.readouterr().err
    assert f"stopped by SIGTERM at episode 10 of 10; checkpoint saved: {tmp_path / 'r' / 'checkpoint.pt'}" in err
    assert load_checkpoint(tmp_path / "r" / "checkpoint.pt")["episodes"] == 10


def test_case_4_play_learn_saves_on_ctrl_c_and_at_the_end_of_input(table_checkpoint, tmp_path):  # noqa: F811
    from ttt.play import play

    class CtrlCInSecondGame(io.StringIO):
        def readline(self, *args):
            line = super().readline(*args)
            if not line:
                raise KeyboardInterrupt
            return line

    save = tmp_path / "learned.npz"
    cfg = compose_play(f"checkpoint={table_checkpoint}", "seat=second", "learn=true", f"save={save}")
    out = io.StringIO()
    with pytest.raises(Interrupted):  # the first game is learned; Ctrl-C in the second
        play(cfg, CtrlCInSecondGame("0\n1\ny\n0\n"), out)
    assert "saved the agent (1 games learned)" in out.getvalue() and load_checkpoint(save)["kind"]
    save.unlink()
    tally = play(cfg, io.StringIO("0\n1\ny\n0\n"), io.StringIO())  # the input ends in the second game
    assert tally["saved"] == str(save) and save.is_file()


# one interpreter start, interrupted during its imports (~2 s)
def test_case_10_ctrl_c_during_the_imports_exits_130_without_a_traceback(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "ttt.train", "+experiment=dqn_33", f"run_dir={tmp_path / 'r'}"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    deadline = time.time() + 60
    while time.time() < deadline and not _catches_sigterm(proc.pid):  # the entry point's first line has run
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted (SIGINT)"
    assert not (tmp_path / "r").exists()


def _catches_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


# ------------------------------------------------------------------------------------------ the rest
def test_a_float_action_in_the_gymnasium_env_is_refused():
    pytest.importorskip("gymnasium")
    from ttt.interop.envs import gym_env

    env = gym_env("3x3", opponent="random")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="a move is an integer cell number"):
        env.step(3.7)
    assert env.step(np.int64(4))[1] in (0.0, 1.0, -1.0)


def test_atomic_write_removes_its_temporary_file_on_a_signal(tmp_path):
    target = tmp_path / "x.json"
    target.write_text("old")

    def interrupted(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, interrupted)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_atomic_write_through_a_symbolic_link_keeps_the_link(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write(link, lambda tmp: tmp.write_text("new"))
    assert link.is_symlink() and real.read_text() == "new"


def test_retired_options_at_their_kept_value_resume_and_others_are_refused():
    from ttt.agents.dqn import RETIRED
    from ttt.config import ConfigError
    from ttt.harness.run_dir import config_changes

    now = {"agent": {"lr": 0.01}}
    kept = {"agent": {"lr": 0.01, **{k: v for k, (v, _) in RETIRED.items()}}}
    assert config_changes(kept, now, RETIRED) == ([], [])
    with pytest.raises(ConfigError, match=r"agent.rank_higher=best, an option since removed; continue it at commit "
                                          r"09c6a2d \(git checkout 09c6a2d\)"):
        config_changes({"agent": {"lr": 0.01, "rank_higher": "best"}}, now, RETIRED)
    with pytest.raises(ConfigError, match=r"agent.reply_targets=true, .* at commit 483e9c1 \(git checkout 483e9c1\)"):
        config_changes({"agent": {"lr": 0.01, "reply_targets": True}}, now, RETIRED)
    # a learner without retired settings: the same key is one the checkpoint has and this run has not
    assert config_changes({"agent": {"lr": 0.01, "reply_targets": True}}, now)[0] == [
        "agent.reply_targets True -> (not set)"]


def test_resume_reads_the_retired_settings_of_the_checkpoints_own_learner(tmp_path):
    """``load_resume`` asks the learner the config names for its ``RETIRED``: dqn's kept value resumes, another
    value names the commit; a learner without retired settings treats the key as one this run does not set."""
    from omegaconf import OmegaConf

    from ttt.checkpoint import save_checkpoint
    from ttt.config import ConfigError
    from ttt.harness.run_dir import load_resume

    now = {"agent": {"name": "dqn", "lr": 0.01}, "episodes": 10}
    cfg = OmegaConf.create(now)
    for kept, refused in ((False, None), (True, "reply_targets=true, an option since removed")):
        path = save_checkpoint(tmp_path / f"{kept}.pt", {"kind": "dqn", "game": "3x3", "episodes": 4, "config": {
            "agent": {"name": "dqn", "lr": 0.01, "reply_targets": kept}, "episodes": 10}})
        if refused is None:
            assert load_resume(path, cfg, "3x3", now)[1] == []
        else:
            with pytest.raises(ConfigError, match=refused):
                load_resume(path, cfg, "3x3", now)
    other = {"agent": {"name": "q_learning", "lr": 0.01}, "episodes": 10}
    path = save_checkpoint(tmp_path / "q.pt", {"kind": "q_learning", "game": "3x3", "episodes": 4, "config": {
        "agent": {"name": "q_learning", "lr": 0.01, "reply_targets": False}, "episodes": 10}})
    with pytest.raises(ConfigError, match=r"agent.reply_targets False -> \(not set\)"):
        load_resume(path, OmegaConf.create(other), "3x3", other)
